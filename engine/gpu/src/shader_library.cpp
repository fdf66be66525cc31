// Shader text (embedded or from disk), #include expansion and compute-program building with loud errors.
#include "shader_library.h"

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <utility>

#include "attnscope/gl_program.h"
#include "attnscope/gpu_backend.h"
#include "attnscope/settings.h"

namespace attnscope::gpu {

namespace {

std::string defaultDir() {
  if (std::optional<std::string> dir = textSetting("ATTNSCOPE_SHADER_DIR")) return *dir;
#ifdef ATTNSCOPE_DEFAULT_SHADER_DIR
  return ATTNSCOPE_DEFAULT_SHADER_DIR;
#else
  return "";
#endif
}

// The full source of a stage: `#version 430`, then the stage file with each `#include "x"` replaced by x's
// text. `#line L S` markers keep the driver's line numbers true; `files[S]` names source string S.
std::string expandIncludes(const ShaderLibrary& library, const std::string& name, std::vector<std::string>& files) {
  static const std::regex include_line(R"re(^\s*#\s*include\s+"([^"]+)"\s*$)re");
  const int self = static_cast<int>(files.size());
  files.push_back(name);
  std::istringstream in(library.read(name));
  std::string out = "#line 1 " + std::to_string(self) + "\n", line;
  int line_number = 0;
  std::smatch match;
  while (std::getline(in, line)) {
    ++line_number;
    if (std::regex_match(line, match, include_line)) {
      if (files.size() > 16)
        throw ShaderError(name + " line " + std::to_string(line_number) + ": includes nest too deep");
      out += expandIncludes(library, match[1].str(), files);
      out += "#line " + std::to_string(line_number + 1) + " " + std::to_string(self) + "\n";
    } else {
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace

ShaderLibrary::ShaderLibrary(std::string dir) : dir_(dir.empty() ? defaultDir() : std::move(dir)) {}

std::string ShaderLibrary::origin() const { return dir_.empty() ? "embedded" : dir_; }

std::string ShaderLibrary::read(const std::string& name) const {
  if (dir_.empty()) {
    for (const EmbeddedShader& shader : embeddedShaders())
      if (name == shader.name) return shader.text;
    throw ShaderError("shader " + name + ": not among the embedded shaders");
  }
  const std::string path = dir_ + "/" + name;
  std::ifstream file(path, std::ios::binary);
  if (!file) throw ShaderError("shader " + path + ": cannot be opened (ATTNSCOPE_SHADER_DIR is " + dir_ + ")");
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

ComputeProgram::ComputeProgram(const ShaderLibrary& library, const std::string& name, const std::string& defines)
    : name_(name) {
  std::vector<std::string> files;
  const std::string source = "#version 430 core\n" + defines + expandIncludes(library, name, files);
  id_ = buildProgram({{GL_COMPUTE_SHADER, name, source}}, library.origin(), files);
  GLint size[3] = {1, 1, 1};
  glGetProgramiv(id_, GL_COMPUTE_WORK_GROUP_SIZE, size);
  local_size_x_ = static_cast<unsigned>(size[0]);
}

ComputeProgram::~ComputeProgram() {
  if (id_) glDeleteProgram(id_);
}

ComputeProgram::ComputeProgram(ComputeProgram&& other) noexcept
    : id_(std::exchange(other.id_, 0)), local_size_x_(other.local_size_x_), name_(std::move(other.name_)) {}

ComputeProgram& ComputeProgram::operator=(ComputeProgram&& other) noexcept {
  if (this != &other) {
    if (id_) glDeleteProgram(id_);
    id_ = std::exchange(other.id_, 0);
    local_size_x_ = other.local_size_x_;
    name_ = std::move(other.name_);
  }
  return *this;
}

void ComputeProgram::set(const char* uniform, unsigned value) const {
  glProgramUniform1ui(id_, glGetUniformLocation(id_, uniform), value);
}
void ComputeProgram::set(const char* uniform, float value) const {
  glProgramUniform1f(id_, glGetUniformLocation(id_, uniform), value);
}
void ComputeProgram::set(const char* uniform, bool value) const {
  glProgramUniform1i(id_, glGetUniformLocation(id_, uniform), value ? 1 : 0);
}

}  // namespace attnscope::gpu
