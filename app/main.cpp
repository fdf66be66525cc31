// attnscope's entry point: a subcommand runs headless; no subcommand opens the window.
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iterator>
#include <new>
#include <string>
#include <vector>

#include "attnscope/atomic_file.h"
#include "attnscope/compute/blas_kernels.h"
#include "attnscope/error.h"
#include "attnscope/text_bounds.h"
#include "cli/cli.h"

namespace {

struct Command {
  const char* name;
  int (*run)(attnscope::cli::Args&);
  const char* usage;
};

const Command kCommands[] = {
    {"compute", attnscope::cli::runCompute, "compute SCENE [--backend cpu|gpu|auto] [-o OUT.json]"},
    {"walkthrough", attnscope::cli::runWalkthrough, "walkthrough [SCENE]"},
    {"export", attnscope::cli::runExport,
     "export SCENE --what head:N|heads|similarity|diff (N from 1) --format png|svg|csv|npy --out PATH [--annotate] "
     "[--metric cosine|js] [--dendrogram] [--against A.json] [--backend cpu|gpu|auto]"},
    {"bench", attnscope::cli::runBench,
     "bench --n N --heads H --d-model D [--d-k K] [--d-v V] [--mask causal] [--backend cpu|gpu|auto] "
     "[--threads T] [--repeat R] [--analysis]"},
    {"analyze", attnscope::cli::runAnalyze,
     "analyze SCENE [--cell H,I,J] [--ablate H[,H...]] [--ablation zero|mean] [--pitfall NAME] [--metric cosine|js] "
     "[--window W] [--sort SCORE] [--backend cpu|gpu|auto] [-o OUT.json] (heads from 1, positions from 0)"},
    {"model", attnscope::cli::runModel,
     "model DIR (--text TEXT | --text-file FILE) [--layer L] [--out OUT.json|.npy] [--scene-out LAYER.json] "
     "[--grid-out GRID.png|.svg] [--rollout-out ROLLOUT.png|.svg]"},
    {"tokenize", attnscope::cli::runTokenize,
     "tokenize DIR_OR_FILE (--text TEXT | --text-file FILE) [--no-special] [-o OUT.json]"},
    {"import", attnscope::cli::runImport,
     "import FILE --layout torch-mha|fused-qkv-002|fused-qkv-003|keras-mha [--heads H] (--text T | --tokens A,B,...) "
     "[--inputs X.npy] --scene-out S.json"},
    {"view", attnscope::cli::runView,
     "view FILE --tokens TOKENS [--tensor NAME] [-o OUT.json] [--grid-out GRID.png|.svg] [--layer L]"},
};

void printUsage(std::FILE* to) {
  std::fprintf(to,
               "usage: attnscope [SCENE.json | DIR [--text T | --text-file F] | FILE.npy|.npz|.safetensors "
               "[--tokens T] [--tensor NAME]]\n"
               "       [--backend cpu|gpu|auto] [--screenshot PATH --frames N] [--frame-stats] [--script FILE]\n"
               "       (no subcommand: opens the window, on the file or folder named)\n");
  for (const Command& c : kCommands) std::fprintf(to, "       attnscope %s\n", c.usage);
  std::fprintf(to,
               "--backend: cpu (the reference), gpu (OpenGL 4.3 compute), auto (the GPU while it starts and its checks\n"
               "       pass, else the CPU). Every GPU result is checked against the CPU on 34 sampled query rows of every\n"
               "       head (%s); one that fails is recomputed on the CPU, with a warning naming the GPU's head, row and\n"
               "       error in the JSON's warnings (the window: a banner, and the CPU from then on).\n",
               "the CPU computes those rows: its K and V projections and 34 rows per head, about 5-8% of a\n"
               "       llvmpipe compute at n = 512, less on longer scenes; bench reports check_ms");
}

// Every error leaves as one bounded, printable line (text_bounds.h), whatever input it quotes.
void printError(const std::string& message) {
  const std::string line = "attnscope: " + attnscope::printableLine(message) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

// The command (or the window), then standard output closed and checked: exit 0 only when every byte is out.
int runCommand(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
    printUsage(stdout);
    return 0;
  }
  if (args.empty() || args[0].rfind("-", 0) == 0) return attnscope::runWindow(args);
  // Not a command but a file or folder that exists: the window opens it (attnscope DIR --text T, FILE.npy, ...).
  const bool command = std::any_of(std::begin(kCommands), std::end(kCommands),
                                   [&](const Command& c) { return args[0] == c.name; });
  std::error_code ec;
  if (!command && std::filesystem::exists(args[0], ec)) return attnscope::runWindow(args);
  for (const Command& c : kCommands) {
    if (args[0] != c.name) continue;
    // A command's outputs may not replace its inputs (compute in.json -o in.json); the window's Save may.
    attnscope::refuseOutputsOverInputs();
    attnscope::cli::checkEnvironment();  // a bad setting is refused before any work
    attnscope::cli::Args parsed(c.name, std::vector<std::string>(args.begin() + 1, args.end()));
    return c.run(parsed);
  }
  printError("command: expected one of compute, walkthrough, export, bench, analyze, model, tokenize, import, view, "
             "or a file or folder to open in the window, got " +
             attnscope::quoteFragment(args[0]));
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  attnscope::rerunWithFasterBlasKernels(argv);  // before anything: OpenBLAS on its SSE3 fallback is 4x slower
  // A standard descriptor closed by the caller (`>&-`) holds /dev/null opened the wrong way round, so that a
  // file the command opens never becomes its standard output, and a write there still fails (EBADF).
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) ::open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
  const std::vector<std::string> args(argv + 1, argv + argc);
  int status = 2;
  try {
    status = runCommand(args);
  } catch (const std::bad_alloc&) {
    // Estimates refuse what would not fit the budget before it is asked for; this is what they did not foresee.
    printError("out of memory: the work needed more than the memory there is (a lower ATTNSCOPE_MEMORY_BUDGET makes "
               "the estimates refuse it in advance)");
  } catch (const std::exception& e) {
    printError(e.what());
  }
  try {
    attnscope::cli::closeStdout();
  } catch (const std::exception& e) {
    if (status == 0) printError(e.what());  // a command that failed has said so already, in one line
    status = status == 0 ? 2 : status;
  }
  return status;
}
