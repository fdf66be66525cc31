// attnscope compute SCENE [--backend cpu|gpu|auto] [-o OUT.json]: every matrix of the Result as JSON
// (format in the README), to stdout or written atomically to OUT.json.
#include <cstdio>
#include <string>
#include <vector>

#include "attnscope/atomic_file.h"
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
  std::vector<std::string> warnings;
  const std::unique_ptr<Backend> backend = makeBackend(backend_name, 0, warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "attnscope: warning: %s\n", w.c_str());
  const Result result = backend->compute(scene);

  nlohmann::ordered_json out;
  out["backend"] = backend->name();
  out["device"] = backend->device();
  const nlohmann::ordered_json computed = resultToJson(scene, result);
  for (const auto& item : computed.items()) out[item.key()] = item.value();
  writeOutput(formatJson(out), out_path);
  return 0;
}

void writeOutput(const std::string& text, const std::optional<std::string>& path) {
  if (path)
    writeFileAtomically(*path, text);
  else
    std::fwrite(text.data(), 1, text.size(), stdout);
}

}  // namespace attnscope::cli
