// How many threads a compute may ask OpenMP for. libgomp meets a thread it cannot create (too many for the
// address-space limit, `ulimit -v`) with its own line and exit 1, or a crash: the count is checked here first,
// and refused in our words.
#pragma once

#include <cstddef>
#include <string>

namespace attnscope {

// The most threads a compute may use: 4 x the hardware threads (more only adds switching), at least 4.
int maxComputeThreads();
// Each thread's stack as OpenMP will reserve it (the process's default pthread stack size, from ulimit -s).
std::size_t threadStackBytes();
// InputError naming `field` ("--threads", "OMP_NUM_THREADS") unless 1 <= threads <= maxComputeThreads() and the
// threads' stacks take at most half of the address-space limit (RLIMIT_AS), when there is one.
void checkThreadCount(const std::string& field, long threads);

}  // namespace attnscope
