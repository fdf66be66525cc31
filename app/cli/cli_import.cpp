// attnscope import: the user's own trained attention layer (a PyTorch or Keras state dict saved as safetensors
// or .npz) as a scene file, through the layout converters.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "attnscope/arrays/user_layer.h"
#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/scene/scene.h"
#include "attnscope/scene/scene_json.h"
#include "attnscope/text_bounds.h"
#include "cli/cli.h"

namespace attnscope::cli {

namespace {

constexpr const char* kImportHelp =
    "usage: attnscope import FILE --layout torch-mha|fused-qkv-002|fused-qkv-003|keras-mha [--heads H]\n"
    "                        (--text T | --tokens A,B,...) [--inputs X.npy] [--mask none|causal] --scene-out S.json\n"
    "  FILE          a state dict as .safetensors or .npz (np.savez; not np.savez_compressed)\n"
    "  --layout      which module saved it; the keys each reads are in docs/formats.md (\"Your own layer\")\n"
    "  --heads       the head count (needed by torch-mha and the fused layouts; keras-mha reads it)\n"
    "  --text        the tokens' names, split at spaces; or --tokens, split at commas; one per row of x\n"
    "  --inputs      the layer's input rows x (n, E) as .npy; default: the tensor \"x\" in FILE\n"
    "  --mask        default: causal for fused-qkv-002 (the seed's tril buffer), none otherwise\n"
    "  --scene-out   the scene file to write\n";

}  // namespace

int runImport(Args& args) {
  if (args.takeFlag("--help") || args.takeFlag("-h")) {
    std::fputs(kImportHelp, stdout);
    return 0;
  }
  const std::optional<std::string> layout = args.take("--layout");
  const long heads = args.takeInt("--heads", 0, 1, 64);
  const std::optional<std::string> text = args.take("--text");
  const std::optional<std::string> tokens = args.take("--tokens");
  const std::optional<std::string> inputs = args.take("--inputs");
  const std::string mask = args.takeChoice("--mask", {"default", "none", "causal"}, "default");
  const std::optional<std::string> scene_out = args.take("--scene-out", "-o");
  const std::vector<std::string> files = args.positionals(1);
  if (files.empty()) throw InputError("import", "a state dict file: attnscope import FILE --layout ...", "none");
  if (!layout) throw InputError("--layout", "one of torch-mha, fused-qkv-002, fused-qkv-003, keras-mha", "none");
  if (text && tokens) throw InputError("--text", "either --text or --tokens", "both");
  if (!text && !tokens) throw InputError("--tokens", "the tokens' names (--text T or --tokens A,B,...)", "none");
  if (!scene_out) throw InputError("--scene-out", "the scene file to write", "none");

  arrays::UserLayerOptions options;
  options.layout = arrays::parseUserLayout(*layout);
  options.heads = static_cast<int>(heads);
  options.tokens = text ? arrays::splitTokenText(*text) : arrays::splitTokenText(*tokens, ',');
  if (mask != "default") options.mask = mask == "causal" ? MaskKind::Causal : MaskKind::None;
  PendingFile out(*scene_out);  // a path that cannot be written fails before any reading
  if (inputs) {
    auto x = arrays::readArrays(*inputs);
    if (x.size() != 1) throw InputError("--inputs", "one array (n, E)", std::to_string(x.size()) + " arrays");
    options.inputs = std::move(x.begin()->second);
  }
  const std::map<std::string, arrays::NamedArray> state_dict = arrays::readArrays(files[0]);
  checkMemoryBudget(files[0], "the imported scene and its JSON", arrays::userLayerImportBytes(state_dict, options.inputs));
  checkPendingOutputs();  // --scene-out is not the state dict or --inputs just read
  const Scene scene = arrays::userLayerScene(state_dict, files[0], options);
  out.write(formatJson(sceneToJson(scene)));
  out.commit();
  std::printf("%d heads, d_model %d, %d tokens: wrote %s\n", scene.numHeads(), scene.d_model, scene.nQ(),
              printableLine(*scene_out, 400).c_str());
  return 0;
}

}  // namespace attnscope::cli
