// The file bar's Open for arrays files (.npy, .npz, .safetensors): a form that asks how to read the file, either
// as an attention tensor (which tensor, the tokens), shown in the model view's grid and maps, or as the user's
// own layer (layout, heads, tokens, mask), made into the scene by arrays::userLayerScene as `attnscope import`
// does. A bad file or field is one red line in the form; nothing is replaced until the file reads.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/arrays/array_file.h"
#include "attnscope/arrays/attention_tensor.h"
#include "attnscope/arrays/capture.h"
#include "window/app_state.h"
#include "window/view_state.h"

namespace attnscope::app {

struct OpenArraysForm {
  std::string path;
  std::map<std::string, arrays::NamedArray> arrays;  // read once, when the form opens
  bool detected_attention = true;                    // arrays::looksLikeAttention, said in the form
  bool as_attention = true;                          // the user's choice (starts as detected)
  int tensor = 0;                                    // index into `arrays` (attention, several stored)
  std::string tokens;  // a JSON list, a token file's path, or words separated by spaces
  int layout = 0;      // index into arrays::userLayoutNames()
  int heads = 1;
  int mask = 0;        // 0: the layout's own, 1: none, 2: causal
  std::string error;   // the last refusal, one line
  bool pending = false;  // the popup opens on the next draw
};

// True for a path the form reads (.npy, .npz, .safetensors); other paths open as scene files.
bool isArraysFile(const std::string& path);
// Reads `path` (unless `read` holds its arrays already) and opens the form; a file that does not read is said in red
// in the file bar, and nothing changes.
void beginOpenArrays(AppState& state, ViewState& view, const std::string& path,
                     std::optional<std::map<std::string, arrays::NamedArray>> read = std::nullopt);
// `path`'s attention tensor (`tensor`, needed where it stores several) with `tokens` (as the form reads them); the
// window's command line reads it before the window opens (`attnscope FILE.npy --tokens T [--tensor NAME]`). Throws
// InputError naming the file, the tensor or the tokens.
arrays::AttentionTensor readAttentionFile(const std::string& path, const std::string& tokens,
                                          const std::optional<std::string>& tensor);
// The capture folder `path` (attnscope/arrays/capture.h: each layer's queries and keys from a model run elsewhere)
// in the centre, every map computed from them on demand; a capture that does not read is said in red in the file
// bar, and nothing changes.
void openCapture(AppState& state, ViewState& view, const std::string& path);
// The tensor in the centre (a checkpoint run's place), said in the file bar.
void showAttention(AppState& state, ViewState& view, arrays::AttentionTensor tensor, const std::string& path);
// The form as a modal popup, while one is open; call once a frame outside any pane.
void drawOpenArraysForm(AppState& state, ViewState& view);
// The tokens typed in the form: a JSON list ("[..."), else a file's path when one exists, else words.
std::vector<std::string> formTokens(const std::string& typed);

}  // namespace attnscope::app
