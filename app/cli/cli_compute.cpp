// attnscope compute SCENE [--backend cpu|gpu|auto] [-o OUT.json]: every matrix of the Result as JSON
// (format in docs/formats.md), to stdout or written atomically to OUT.json.
#include <cstdio>
#include <string>
#include <vector>

#include "attnscope/atomic_file.h"
#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/export/result_json.h"
#include "attnscope/scene/scene_json.h"
#include "backend_choice.h"
#include "cli/cli.h"

namespace attnscope::cli {

int runCompute(Args& args) {
  const std::string backend_name = args.takeChoice("--backend", {"cpu", "gpu", "auto"}, "cpu");
  const std::optional<std::string> out_path = args.take("--out", "-o");
  const std::vector<std::string> files = args.positionals(1);
  if (files.empty()) throw InputError("compute", "a scene file (attnscope compute SCENE)", "none");

  const Scene scene = loadSceneFile(files[0]);
  // The full JSON holds every head's scores and weights: past the maps limit nobody wants that file (32k tokens,
  // 8 heads: 68 GB of text), and windows and reductions have their own commands.
  if (!keepsMaps(scene, {.keep_scores = true, .analysis = true, .maps = MapPolicy::Auto}))
    throw InputError("compute", "a scene whose maps fit " + byteString(mapsLimitBytes()) +
                                    " for the full JSON (ATTNSCOPE_MAPS_LIMIT); for a longer one use attnscope "
                                    "export SCENE --what head:N --rows A:B --cols C:D, or attnscope analyze SCENE",
                     byteString(mapBytes(scene, true)) + " of maps");
  // The output's size and path are checked before the work: it streams to the file, but one larger than the
  // memory budget is refused as absurd, and a path that cannot be written fails now, not after the compute.
  checkOutputBudget("compute output", resultJsonBytes(scene));
  std::optional<PendingFile> file;
  if (out_path) file.emplace(*out_path);
  std::vector<std::string> warnings;
  const std::unique_ptr<Backend> backend = makeBackend(backend_name, 0, warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "attnscope: warning: %s\n", w.c_str());
  const Result result = backend->compute(scene);

  nlohmann::ordered_json out;
  out["backend"] = backend->name();
  out["device"] = backend->device();
  JsonMatrices matrices;
  const nlohmann::ordered_json computed = resultToJson(scene, result, &matrices);
  for (const auto& item : computed.items()) out[item.key()] = item.value();
  if (file) {
    formatJsonTo(out, matrices, [&](std::string_view bytes) { file->write(bytes); });
    file->commit();
  } else {
    formatJsonTo(out, matrices, writeStdout);
  }
  return 0;
}

}  // namespace attnscope::cli
