// The window is not built yet (issue 4); until it is, say so and exit 2.
#include <cstdio>

#include "cli.h"

namespace attnscope {

int runWindow(const std::vector<std::string>&) {
  std::fprintf(stderr, "attnscope: window: expected a subcommand (compute, walkthrough, export, bench), got none "
                       "(the window is not built yet)\n");
  return 2;
}

}  // namespace attnscope
