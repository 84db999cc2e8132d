// CallClient: how a process outside every job (`cumulus call`) runs one function of a job, or
// one method of an actor, and gets its result: it connects over TCP as a `caller` with the
// cluster token (runtime/proto/core.capnp) -- to a node for a task (the node schedules it as a
// task of that job, on the job's workers, and answers on this connection), or to the actor's
// worker for a method call -- sends one submitTask with the arguments inline, and waits.
//
// A result too large to travel inline is pulled from the store that holds it over the object
// channel, then freed by whoever answered (the node or the actor's worker), on the same
// connection; a caller that leaves without freeing (Ctrl-C) has it freed when its connection
// closes, and a node cancels the tasks it left unfinished.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/net/tcp.h"

namespace cumulus {

struct CallRequest {
  JobId job;
  ActorId actor;  // nil: a normal task, sent to a node; else a call of this actor's method
  std::string function;
  std::vector<std::string> args;  // serialized values (Serialize<T>'s bytes), sent inline
  // Normal tasks: what they ask for (empty: CPU=1, as Task(f).Remote does).
  std::map<std::string, double> resources;
  int max_retries = 0;  // normal tasks: retries after a worker failure
};

struct CallTarget {
  HostPort address;  // the node's core address (tasks) or the actor's address (method calls)
  std::string token;
  Duration timeout = std::chrono::seconds(60);
  // When set, asked every 200 ms while the answer is awaited and while a stored result is read:
  // true ends the wait with Cancelled (a task is then cancelled, as at the timeout; an actor's
  // method may still run; a result being read is left, and freed when the connection closes).
  // The shell passes its Ctrl-C flag. Called on the calling thread.
  std::function<bool()> stop;
};

// The serialized result, or the task's error (its code and one line). TimedOut when no answer
// came within the timeout (a task is then cancelled; an actor's method may still run); Cancelled
// when `target.stop` said so.
Result<std::string> RunCall(const CallRequest& request, const CallTarget& target);

}  // namespace cumulus
