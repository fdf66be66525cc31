// The window's command line: a scene, a checkpoint folder, an arrays file.
#include "window/startup_open.h"

#include <filesystem>
#include <memory>

#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/scene/scene_json.h"
#include "attnscope/text_bounds.h"
#include "window/subject/model_session.h"
#include "window/model/open_arrays.h"

namespace attnscope::app {

namespace {

// A checkpoint's text file at most this long (as `attnscope model --text-file`).
constexpr std::size_t kMaxTextFileBytes = std::size_t{16} << 20;

// An option that belongs to another kind of file (`wants`), where the path is `got`.
void refuseOption(const std::optional<std::string>& value, const char* option, const char* wants,
                  const std::string& got) {
  if (value) throw InputError(option, std::string(wants) + " to go with it", got);
}

}  // namespace

StartupOpen readStartupOpen(const StartupArguments& args) {
  namespace fs = std::filesystem;
  StartupOpen open;
  if (!args.path) {
    refuseOption(args.text ? args.text : args.text_file, args.text ? "--text" : "--text-file",
                 "a checkpoint folder (attnscope DIR --text T)", "no path");
    refuseOption(args.tokens, "--tokens", "an attention tensor file (attnscope FILE.npy --tokens T)", "no path");
    refuseOption(args.tensor, "--tensor", "an arrays file", "no path");
    return open;
  }
  open.path = *args.path;
  std::error_code ec;
  const fs::path path(open.path);
  const std::string quoted = quoteFragment(open.path);
  if (arrays::isCaptureFolder(open.path)) {  // its tokens are its own
    refuseOption(args.text ? args.text : args.text_file, args.text ? "--text" : "--text-file", "a checkpoint folder",
                 quoted + ", a capture");
    refuseOption(args.tokens, "--tokens", "an attention tensor file", quoted + ", a capture");
    refuseOption(args.tensor, "--tensor", "an arrays file", quoted + ", a capture");
    open.tensor = arrays::readCapture(open.path);
    return open;
  }
  const bool checkpoint = fs::is_directory(path, ec) || path.filename() == "config.json";
  if (checkpoint) {
    if (!fs::exists(path, ec)) throw InputError(open.path, "a checkpoint folder or its config.json", "no such file");
    refuseOption(args.tokens, "--tokens", "an attention tensor file", quoted + ", a checkpoint");
    refuseOption(args.tensor, "--tensor", "an arrays file", quoted + ", a checkpoint");
    if (args.text && args.text_file) throw InputError("--text", "either --text or --text-file", "both");
    open.checkpoint_text = args.text_file ? readWholeFile(*args.text_file, "--text-file", kMaxTextFileBytes)
                                          : args.text.value_or(ModelSession::kDefaultText);
    return open;
  }
  refuseOption(args.text ? args.text : args.text_file, args.text ? "--text" : "--text-file", "a checkpoint folder",
               quoted + (isArraysFile(open.path) ? ", an arrays file" : ", a scene file"));
  if (isArraysFile(open.path)) {
    if (args.tokens)
      open.tensor = readAttentionFile(open.path, *args.tokens, args.tensor);
    else
      open.form = arrays::readArrays(open.path);
    return open;
  }
  refuseOption(args.tokens, "--tokens", "an attention tensor file", quoted + ", a scene file");
  refuseOption(args.tensor, "--tensor", "an arrays file", quoted + ", a scene file");
  open.scene = loadSceneFile(open.path);
  return open;
}

void applyStartupOpen(StartupOpen& open, AppState& state, ViewState& view) {
  if (open.checkpoint_text) {
    view.run.session = std::make_shared<ModelSession>();
    view.run.session->dir = open.path;
    view.run.session->text = *open.checkpoint_text;
    view.run.session->on_gpu = state.backend().name() == "gpu";
    view.run.session->start();
  } else if (open.tensor) {
    showAttention(state, view, std::move(*open.tensor), open.path);
    open.tensor.reset();
  } else if (open.form) {
    beginOpenArrays(state, view, open.path, std::move(open.form));
    open.form.reset();
  } else if (open.scene) {
    state.path = open.path;
  }
}

}  // namespace attnscope::app
