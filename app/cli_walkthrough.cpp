// attnscope walkthrough (placeholder until its helper lands it).
#include "attnscope/error.h"
#include "cli.h"

namespace attnscope::cli {
int runWalkthrough(Args&) { throw InputError("walkthrough", "a built subcommand", "one not built yet"); }
}  // namespace attnscope::cli
