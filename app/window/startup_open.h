// What the window's command line opens, read and checked before any window exists (a bad one is one line on
// stderr and exit status 2, like the CLI's):
//   attnscope SCENE.json                              the scene (as --scene SCENE.json)
//   attnscope DIR [--text T | --text-file F]          a checkpoint folder (or its config.json) run on the text (the
//                                                     Checkpoint panel's default text without one)
//   attnscope FILE.npy|.npz|.safetensors --tokens T [--tensor NAME]
//                                                     an attention tensor in the centre; without --tokens the Open
//                                                     form, with the file read, asks for them
//   attnscope CAPTURE                                 a capture folder (capture.json: each layer's queries and keys
//                                                     from a model run elsewhere) in the centre, with its own tokens
// --scene PATH is the same as PATH (it once read an .npy file as JSON).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "attnscope/arrays/array_file.h"
#include "attnscope/arrays/attention_tensor.h"
#include "attnscope/scene/scene.h"
#include "window/app_state.h"
#include "window/view_state.h"

namespace attnscope::app {

struct StartupOpen {
  std::string path;                                               // "" : the worked example
  std::optional<Scene> scene;                                     // a scene file
  std::optional<std::string> checkpoint_text;                     // a checkpoint folder: the text to run
  std::optional<arrays::AttentionTensor> tensor;                  // an arrays file with its tokens, or a capture
  std::optional<std::map<std::string, arrays::NamedArray>> form;  // an arrays file without: the Open form
};

struct StartupArguments {
  std::optional<std::string> path, text, text_file, tokens, tensor;
};

// Reads what `args` name; throws InputError naming the option or file that is wrong.
StartupOpen readStartupOpen(const StartupArguments& args);
// Once the window's state exists: the checkpoint's run started, the tensor shown, or the form opened (the scene
// went into AppState's constructor).
void applyStartupOpen(StartupOpen& open, AppState& state, ViewState& view);

}  // namespace attnscope::app
