// attnscope compute (placeholder until its helper lands it).
#include "attnscope/error.h"
#include "cli.h"

namespace attnscope::cli {
int runCompute(Args&) { throw InputError("compute", "a built subcommand", "one not built yet"); }
}  // namespace attnscope::cli
