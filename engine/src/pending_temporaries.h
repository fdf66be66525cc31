// The temporary files of outputs being written, known to the fatal-signal handlers: SIGINT, SIGTERM, SIGHUP,
// SIGQUIT, SIGPIPE and SIGXFSZ (a file-size limit) remove every pending temporary, then the process dies by
// the same signal. The handlers touch only fixed slots (no allocation, no locks): async-signal-safe.
#pragma once

#include <signal.h>

namespace attnscope::pending {

// A stretch of file operations a signal must not cut in half (a temporary created but not yet noted, some
// outputs renamed and others not): the handled signals are blocked on this thread, and a handler running on
// another thread waits for the stretch to end before it removes anything.
class CriticalSection {
 public:
  CriticalSection();
  ~CriticalSection();
  CriticalSection(const CriticalSection&) = delete;
  CriticalSection& operator=(const CriticalSection&) = delete;

 private:
  sigset_t saved_;  // this thread's mask before
};

// Notes `name` (at most 255 bytes) in the folder `dir_fd`, which stays open until forget(), as a temporary to
// remove on a fatal signal; installs the handlers the first time (a signal the process was started ignoring,
// as under nohup, stays ignored). Call inside a CriticalSection, before the file is created. Returns the slot,
// or -1 when every slot is taken (the file is then removed only by its owner).
int remember(int dir_fd, const char* name);
void forget(int slot);  // -1: nothing

}  // namespace attnscope::pending
