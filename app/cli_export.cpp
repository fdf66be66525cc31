// attnscope export (placeholder until its helper lands it).
#include "attnscope/error.h"
#include "cli.h"

namespace attnscope::cli {
int runExport(Args&) { throw InputError("export", "a built subcommand", "one not built yet"); }
}  // namespace attnscope::cli
