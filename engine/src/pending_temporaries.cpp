// Pending temporaries and the fatal-signal handlers that remove them (see pending_temporaries.h).
#include "pending_temporaries.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace attnscope::pending {

namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ};

// A slot is free (0), being filled (1) or noted (2); a handler reads only noted ones. 64 outputs at once is
// far more than any command writes (model: four).
struct Slot {
  std::atomic<int> state{0};
  int dir_fd = -1;
  char name[256] = {};
};
constexpr int kSlots = 64;
Slot g_slots[kSlots];
std::atomic<int> g_critical{0};  // critical sections open on any thread
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler may only use lock-free atomics");

sigset_t handledSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kSignals) sigaddset(&set, sig);
  return set;
}

// Only async-signal-safe calls: poll, unlinkat, pthread_sigmask, raise. SA_RESETHAND has already made the
// disposition the default one, so the raise ends the process by this very signal.
extern "C" void removeTemporariesAndDie(int sig) {
  while (g_critical.load() > 0) ::poll(nullptr, 0, 1);  // another thread is mid-stretch: it ends in microseconds
  for (Slot& slot : g_slots)
    if (slot.state.load(std::memory_order_acquire) == 2) ::unlinkat(slot.dir_fd, slot.name, 0);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);
}

void installHandlers() {
  for (int sig : kSignals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
      continue;  // ignored (nohup, a background job's SIGINT) or someone else's handler: left as it is
    struct sigaction action {};
    action.sa_handler = removeTemporariesAndDie;
    action.sa_mask = handledSignals();  // no other of these handlers runs inside this one on this thread
    action.sa_flags = SA_RESETHAND | SA_NODEFER;
    ::sigaction(sig, &action, nullptr);
  }
}

}  // namespace

CriticalSection::CriticalSection() {
  const sigset_t set = handledSignals();
  ::pthread_sigmask(SIG_BLOCK, &set, &saved_);
  g_critical.fetch_add(1);
}

CriticalSection::~CriticalSection() {
  g_critical.fetch_sub(1);
  ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
}

int remember(int dir_fd, const char* name) {
  static std::once_flag installed;
  std::call_once(installed, installHandlers);
  const std::size_t length = std::strlen(name);
  if (length >= sizeof Slot::name) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_slots[i].state.compare_exchange_strong(expected, 1)) continue;
    g_slots[i].dir_fd = dir_fd;
    std::memcpy(g_slots[i].name, name, length + 1);
    g_slots[i].state.store(2, std::memory_order_release);
    return i;
  }
  return -1;
}

void forget(int slot) {
  if (slot >= 0 && slot < kSlots) g_slots[slot].state.store(0, std::memory_order_release);
}

}  // namespace attnscope::pending
