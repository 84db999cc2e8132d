// A clean signal state for the processes Cumulus starts (workers, submitted drivers, helpers).
//
// A node daemon blocks SIGINT and SIGTERM in all its threads (one thread waits for them with
// sigwait), and a mask, like ignored signals, is inherited across exec. A child must not inherit
// that: it gets an empty mask and the default action for every signal a parent may block or
// ignore, so that `cumulus cancel`'s SIGTERM reaches it and a user's handler and a clean Shutdown
// run.
#pragma once

#include <signal.h>
#include <spawn.h>

namespace cumulus {

// The signals reset to their default action in a child.
inline sigset_t SignalsResetInChild() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM}) {
    sigaddset(&set, sig);
  }
  return set;
}

// posix_spawn attributes that give the child an empty signal mask and default dispositions.
class CleanSpawnAttributes {
 public:
  // With `own_process_group`, the child leads a new process group (a signal to the group reaches
  // everything it starts).
  explicit CleanSpawnAttributes(bool own_process_group = false) {
    posix_spawnattr_init(&attr_);
    sigset_t empty;
    sigemptyset(&empty);
    sigset_t reset = SignalsResetInChild();
    posix_spawnattr_setsigmask(&attr_, &empty);
    posix_spawnattr_setsigdefault(&attr_, &reset);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (own_process_group) {
      flags |= POSIX_SPAWN_SETPGROUP;
      posix_spawnattr_setpgroup(&attr_, 0);
    }
    posix_spawnattr_setflags(&attr_, flags);
  }
  ~CleanSpawnAttributes() { posix_spawnattr_destroy(&attr_); }
  CleanSpawnAttributes(const CleanSpawnAttributes&) = delete;
  CleanSpawnAttributes& operator=(const CleanSpawnAttributes&) = delete;
  const posix_spawnattr_t* get() const { return &attr_; }

 private:
  posix_spawnattr_t attr_;
};

// In a child after fork, before exec: the same clean state (async-signal-safe calls only).
inline void ResetSignalsInChild() {
  sigset_t reset = SignalsResetInChild();
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sigismember(&reset, sig) == 1) signal(sig, SIG_DFL);
  }
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
}

}  // namespace cumulus
