// Building GL programs: compile each stage, link, and turn any failure into a ShaderError that names it.
#include "attnscope/gl_program.h"

#include <algorithm>
#include <regex>

#include "attnscope/gpu_backend.h"

namespace attnscope::gpu {

namespace {

// "file line N" from the first location in a driver log: Mesa writes "S:L(C): error", NVIDIA "S(L) : error".
std::string firstLocation(const std::string& log, const std::vector<std::string>& files) {
  static const std::regex location(R"((\d+)[:(](\d+))");
  std::smatch match;
  if (!std::regex_search(log, match, location)) return "";
  const std::size_t source = std::stoul(match[1].str());
  const std::string file = source < files.size() ? files[source] : "source string " + match[1].str();
  return file + " line " + match[2].str();
}

std::string shaderLog(GLuint shader) {
  GLint length = 0;
  glGetShaderiv(shader, GL_INFO_LOG_LENGTH, &length);
  std::string log(static_cast<std::size_t>(std::max(length, 1)), '\0');
  glGetShaderInfoLog(shader, length, nullptr, log.data());
  return log.c_str();
}

std::string programLog(GLuint program) {
  GLint length = 0;
  glGetProgramiv(program, GL_INFO_LOG_LENGTH, &length);
  std::string log(static_cast<std::size_t>(std::max(length, 1)), '\0');
  glGetProgramInfoLog(program, length, nullptr, log.data());
  return log.c_str();
}

}  // namespace

GLuint buildProgram(const std::vector<ShaderStage>& stages, const std::string& origin,
                    const std::vector<std::string>& files) {
  std::vector<GLuint> shaders;
  const auto release = [&shaders] {
    for (GLuint shader : shaders) glDeleteShader(shader);  // flagged when attached; freed with the program
  };
  for (const ShaderStage& stage : stages) {
    const char* text = stage.text.c_str();
    const GLuint shader = glCreateShader(stage.kind);
    shaders.push_back(shader);
    glShaderSource(shader, 1, &text, nullptr);
    glCompileShader(shader);
    GLint ok = GL_FALSE;
    glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    if (!ok) {
      const std::string log = shaderLog(shader);
      release();
      const std::string where = firstLocation(log, files.empty() ? std::vector<std::string>{stage.name} : files);
      throw ShaderError("shader " + stage.name + " (from " + origin + ") failed to compile" +
                        (where.empty() ? "" : " at " + where) + ": " + log);
    }
  }
  const GLuint program = glCreateProgram();
  for (GLuint shader : shaders) glAttachShader(program, shader);
  glLinkProgram(program);
  release();
  GLint ok = GL_FALSE;
  glGetProgramiv(program, GL_LINK_STATUS, &ok);
  if (!ok) {
    const std::string log = programLog(program);
    glDeleteProgram(program);
    std::string names;
    for (const ShaderStage& stage : stages) names += (names.empty() ? "" : " + ") + stage.name;
    throw ShaderError("shader " + names + " (from " + origin + ") failed to link: " + log);
  }
  return program;
}

}  // namespace attnscope::gpu
