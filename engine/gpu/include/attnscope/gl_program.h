// The one place a GL program is built from GLSL text: each stage compiled, then linked, with loud errors
// (a ShaderError naming the stage, the file and line the driver points at, and the driver's log). The GPU
// backend's compute programs and the window's heatmap program both come through here.
#pragma once

#include <epoxy/gl.h>

#include <string>
#include <vector>

namespace attnscope::gpu {

struct ShaderStage {
  GLenum kind;       // GL_COMPUTE_SHADER, GL_VERTEX_SHADER, GL_FRAGMENT_SHADER
  std::string name;  // for errors: "scores.comp", "heatmap.frag"
  std::string text;  // the complete source, #version first
};

// Compiles and links `stages` into a new program (the caller deletes it). `origin` says where the text came
// from ("embedded" or a folder); `files[S]` names the source string S of `#line L S` markers, so that an error
// reads "scores.comp line 12" even inside an included file. Throws ShaderError; leaks nothing when it does.
GLuint buildProgram(const std::vector<ShaderStage>& stages, const std::string& origin,
                    const std::vector<std::string>& files = {});

}  // namespace attnscope::gpu
