// The cap on compute threads (thread_limit.h).
#include "attnscope/compute/thread_limit.h"

#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <thread>

#include "attnscope/error.h"
#include "attnscope/scene/scene.h"

namespace attnscope {

int maxComputeThreads() { return std::max(4, 4 * static_cast<int>(std::thread::hardware_concurrency())); }

std::size_t threadStackBytes() {
  pthread_attr_t attr;
  std::size_t bytes = std::size_t{8} << 20;  // glibc's default when it cannot say
  if (pthread_getattr_default_np(&attr) == 0) {
    pthread_attr_getstacksize(&attr, &bytes);
    pthread_attr_destroy(&attr);
  }
  return bytes;
}

void checkThreadCount(const std::string& field, long threads) {
  const int cap = maxComputeThreads();
  const std::string cores = std::to_string(std::thread::hardware_concurrency());
  if (threads < 1 || threads > cap)
    throw InputError(field, "1 to " + std::to_string(cap) + " threads (4 x the " + cores + " hardware threads)",
                     std::to_string(threads));
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  const std::size_t stack = threadStackBytes(), room = static_cast<std::size_t>(limit.rlim_cur) / 2;
  if (static_cast<std::size_t>(threads) * stack > room)
    throw InputError(field,
                     "at most " + std::to_string(std::max<std::size_t>(1, room / stack)) + " threads under the address-space limit of " +
                         byteString(static_cast<std::size_t>(limit.rlim_cur)) + " (ulimit -v; each thread's stack reserves " +
                         byteString(stack) + ", half the limit at most for stacks)",
                     std::to_string(threads));
}

}  // namespace attnscope
