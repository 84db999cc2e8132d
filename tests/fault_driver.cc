// A Cumulus program run by fault_test while the test kills parts of the cluster under it. It
// prints one line per check ("CHECK <name> ok" / "CHECK <name> FAIL <why>"), "READY ..." when the
// test may inject its fault, and "DONE failures=N" at the end. It waits for the fault with a file
// barrier: the test creates --dir/<name> once it has done what the driver waits for.
//   --scenario=worker_death   tasks and actors whose processes are SIGKILLed
//   --scenario=node_death     --victim=NODE_ID: work and objects on a node the test kills
//   --scenario=hung_node      --victim=NODE_ID: an actor on a node the test SIGSTOPs
//   --scenario=new_actor_after_node_death  an actor on a node the test SIGKILLs; new actors of
//                             the same shape go to the node that is left, at once and once the
//                             head has declared the killed one dead
//   --scenario=head_restart   tasks keep running and a named actor waits while the head is down
//   --scenario=head_gone      the head is killed or hung for good: with CUMULUS_HEAD_WAIT_MS set,
//                             GetActor and making a named actor fail after that wait, naming it
//   --scenario=driver_death   leaves actors, tasks and objects for the test to see cleaned up,
//                             and a detached actor ("keeper") that must stay
//   --scenario=keeper         finds the detached actor, uses it and kills it
//   --scenario=kill_actor     starts an actor and kills it by its handle (it is not a failure)
//   --scenario=memory         tasks and an actor holding memory under a node whose monitor
//                             watches its workers' memory: the newest retriable task goes
//   --scenario=job            run by `cumulus submit`: prints from the driver and a worker; with
//                             --hold it then waits to be cancelled (with --ignore-term, it and
//                             its actor ignore SIGTERM); --exit=N ends with status N
#include <cumulus/cumulus.h>
#include <signal.h>
#include <unistd.h>
#include <xxhash.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "driver_checks.h"

namespace {

std::string WhereAmI() { return cumulus::CurrentNodeId().Hex(); }
int Plus(int a, int b) { return a + b; }

// Appends a line to `path` and returns how many lines it has now (this try's number).
int CountTry(const std::string& path) {
  { std::ofstream(path, std::ios::app) << "x\n"; }
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}
// Kills its own worker with SIGKILL on the first try; then returns value * 10 + tries.
int DieOnce(std::string path, int value) {
  int tries = CountTry(path);
  if (tries == 1) kill(getpid(), SIGKILL);
  return value * 10 + tries;
}

using driver::Blob;
// Deterministic: the driver computes the same bytes to check what comes back.
std::vector<uint8_t> Mix(std::vector<uint8_t> in, uint32_t salt) {
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(in[i] * 31 + salt + i);
  return in;
}
uint64_t Sum(const std::vector<uint8_t>& b) { return XXH3_64bits(b.data(), b.size()); }
std::pair<std::string, uint64_t> SumWhere(std::vector<uint8_t> b) { return {WhereAmI(), Sum(b)}; }

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }
// Waits (up to two minutes) for the test to create `path`.
bool WaitForFile(const std::string& path) {
  for (int i = 0; i < 120000 && !Exists(path); ++i) usleep(1000);
  return Exists(path);
}
// First try: takes `mib` MiB (touched, so it is resident), adds its pid to the file `tell`, and
// holds the memory until the file `go` exists (the node's memory monitor may kill it first).
// Returns the try number; later tries return it at once.
int Hold(std::string path, int mib, std::string tell, std::string go) {
  int tries = CountTry(path);
  if (tries > 1) return tries;
  std::vector<char> held(static_cast<size_t>(mib) << 20, 1);
  { std::ofstream(tell, std::ios::app) << getpid() << "\n"; }
  WaitForFile(go);
  return held.empty() ? tries : tries + held[0] - 1;
}
std::string Shout(std::string what) {
  std::printf("worker says %s\n", what.c_str());
  std::fflush(stdout);
  return WhereAmI();
}
std::string SleepUntil(std::string path) {
  WaitForFile(path);
  return WhereAmI();
}
// SleepUntil that first adds its worker's pid to the file `tell`, one line each.
std::string TellAndSleepUntil(std::string tell, std::string path) {
  { std::ofstream(tell, std::ios::app) << getpid() << "\n"; }
  return SleepUntil(path);
}

class Survivor {
 public:
  Survivor() : restarted_(cumulus::WasRestarted()) {}
  int Pid() const { return static_cast<int>(getpid()); }
  bool Restarted() const { return restarted_ && cumulus::WasRestarted(); }
  std::string Where() const { return WhereAmI(); }
  std::vector<uint8_t> Big(uint64_t bytes) const { return Blob(bytes, 7); }
  int Incr() { return ++count_; }
  // From now on this process ignores SIGTERM (only SIGKILL ends it).
  bool IgnoreTerm() { return signal(SIGTERM, SIG_IGN) != SIG_ERR; }
  // Answers once the file `path` exists (a call that is running when its node dies).
  bool Await(std::string path) const { return WaitForFile(path); }

 private:
  bool restarted_;
  int count_ = 0;
};
Survivor* CreateSurvivor() { return new Survivor(); }

// An actor whose constructor takes `mib` MiB (touched), adds its pid to the file `tell`, and
// returns only once the file `go` exists: its node sees its creation running all that time.
class Hoarder {
 public:
  Hoarder(const std::string& tell, int mib, const std::string& go)
      : held_(static_cast<size_t>(mib) << 20, 1) {
    { std::ofstream(tell, std::ios::app) << getpid() << "\n"; }
    WaitForFile(go);
  }
  int Pid() const { return static_cast<int>(getpid()) + held_[0] - 1; }

 private:
  std::vector<char> held_;
};
Hoarder* CreateHoarder(std::string tell, int mib, std::string go) {
  return new Hoarder(tell, mib, go);
}

}  // namespace

CUMULUS_REMOTE(WhereAmI, Plus, DieOnce, Hold, Blob, Mix, SumWhere, Shout, SleepUntil,
               TellAndSleepUntil);
CUMULUS_REMOTE(CreateSurvivor, &Survivor::Pid, &Survivor::Restarted, &Survivor::Where,
               &Survivor::Big, &Survivor::Incr, &Survivor::IgnoreTerm, &Survivor::Await,
               CreateHoarder, &Hoarder::Pid);

namespace {

using driver::Check;
using driver::failures;
void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}
using driver::Args;
template <typename R>
std::string Text(const R& r) {
  return r.ok() ? std::string("ok") : r.status().ToString();
}
template <typename R>
cumulus::StatusCode Code(const R& r) {
  return r.ok() ? cumulus::StatusCode::kOk : r.status().code();
}
const auto kWait = std::chrono::seconds(90);

void WorkerDeath(const std::string& dir) {
  // A task whose worker is SIGKILLed runs again (it may, by default) and its result is right.
  auto retried = cumulus::TryGet(cumulus::Task(DieOnce).Remote(dir + "/die-a", 4), kWait);
  Check("task_retried_after_sigkill", retried.ok() && *retried == 42, Text(retried));
  // With no retries it fails, saying what happened.
  auto once =
      cumulus::TryGet(cumulus::Task(DieOnce).SetMaxRetries(0).Remote(dir + "/die-b", 5), kWait);
  Check("task_without_retries_fails",
        Code(once) == cumulus::StatusCode::kUnavailable &&
            once.status().message().find("signal 9") != std::string::npos &&
            once.status().message().find("no retries left") != std::string::npos,
        Text(once));

  // An actor whose process is SIGKILLed from outside is built again; it knows it was restarted.
  auto s = cumulus::Actor(CreateSurvivor).SetMaxRestarts(2).Remote();
  auto pid = cumulus::TryGet(s.Task(&Survivor::Pid).Remote(), kWait);
  auto first = cumulus::TryGet(s.Task(&Survivor::Restarted).Remote(), kWait);
  Check("actor_first_not_restarted", first.ok() && !*first, Text(first));
  (void)cumulus::TryGet(s.Task(&Survivor::Incr).Remote(), kWait);
  if (pid.ok()) kill(*pid, SIGKILL);
  // Sent before this process notices the death: at-least-once (one retry) runs it on the new one.
  auto again = cumulus::TryGet(s.Task(&Survivor::Restarted).SetMaxRetries(1).Remote(), kWait);
  auto pid2 = cumulus::TryGet(s.Task(&Survivor::Pid).Remote(), kWait);
  auto count = cumulus::TryGet(s.Task(&Survivor::Incr).Remote(), kWait);
  Check("actor_restarted_after_sigkill",
        again.ok() && *again && pid2.ok() && pid.ok() && *pid2 != *pid && count.ok() && *count == 1,
        Text(again) + " " + Text(pid2) + " " + Text(count));
}

void NodeDeath(const std::string& dir, const cumulus::NodeId& victim) {
  const uint64_t kBytes = 1 << 20;  // stored, not inline
  auto on_victim = [&](auto task) { return task.SetNodeAffinity(victim, /*soft=*/true); };
  // Once a task pinned there ran, this node's view has the victim: soft affinity finds it.
  auto where = cumulus::TryGet(cumulus::Task(WhereAmI).SetNodeAffinity(victim).Remote(), kWait);
  // A chain of stored results on the victim: b1 <- b2 <- b3 <- b4 (CUMULUS_MAX_LINEAGE_DEPTH=3
  // keeps the lineage of b1..b3 only).
  auto b1 = on_victim(cumulus::Task(Blob)).Remote(kBytes, 1);
  auto b2 = on_victim(cumulus::Task(Mix)).Remote(b1, 2);
  auto b3 = on_victim(cumulus::Task(Mix)).Remote(b2, 3);
  auto b4 = on_victim(cumulus::Task(Mix)).Remote(b3, 4);
  // An actor there (it may restart) with a stored result of a call.
  auto s = cumulus::Actor(CreateSurvivor).SetMaxRestarts(1).SetNodeAffinity(victim, true).Remote();
  auto big = s.Task(&Survivor::Big).Remote(kBytes);
  auto actor_node = cumulus::TryGet(s.Task(&Survivor::Where).Remote(), kWait);
  bool ready =
      cumulus::Wait(std::vector<cumulus::ObjectRef<std::vector<uint8_t>>>{b1, b2, b3, b4, big}, 5,
                    kWait)
          .ready.size() == 5;
  // Tasks running there when it dies (it has 3 CPUs: one is left for the check after them).
  std::vector<cumulus::ObjectRef<std::string>> sleepers;
  for (int i = 0; i < 2; ++i) {
    sleepers.push_back(on_victim(cumulus::Task(SleepUntil)).Remote(dir + "/go"));
  }

  bool setup = ready && actor_node.ok() && *actor_node == victim.Hex() && where.ok() &&
               *where == victim.Hex();
  std::string setup_detail = std::string(ready ? "" : "not all objects were made; ") + "actor on " +
                             (actor_node.ok() ? *actor_node : Text(actor_node)) +
                             ", pinned task on " + (where.ok() ? *where : Text(where)) +
                             ", victim " + victim.Hex();

  Say("READY");
  if (!WaitForFile(dir + "/killed")) {
    Check("test_killed_the_node", false, "no " + dir + "/killed");
    return;
  }
  Check("setup_on_victim", setup, setup_detail);
  auto want = Blob(kBytes, 1);
  auto want2 = Mix(want, 2);
  auto want3 = Mix(want2, 3);

  // A new task whose argument lived there: the argument is rebuilt, then the task runs.
  auto arg = cumulus::TryGet(cumulus::Task(SumWhere).Remote(b2), kWait);
  Check("argument_rebuilt_for_new_task",
        arg.ok() && arg->second == Sum(want2) && arg->first != victim.Hex(), Text(arg));
  // Get of an object whose chain was there: rebuilt recursively.
  auto got3 = cumulus::TryGet(b3, kWait);
  Check("lineage_rebuilt_recursively", got3.ok() && Sum(*got3) == Sum(want3), Text(got3));
  // Beyond the kept lineage: ObjectLost, saying why.
  auto got4 = cumulus::TryGet(b4, kWait);
  Check("too_deep_is_object_lost",
        Code(got4) == cumulus::StatusCode::kObjectLost &&
            got4.status().message().find("lineage is 4 tasks deep") != std::string::npos,
        Text(got4));
  // An actor call's stored result is not rebuilt: ObjectLost naming why.
  auto lost = cumulus::TryGet(big, kWait);
  Check("actor_result_is_object_lost",
        Code(lost) == cumulus::StatusCode::kObjectLost &&
            lost.status().message().find("actor call") != std::string::npos,
        Text(lost));
  // Tasks that were running there ran again elsewhere.
  std::set<std::string> landed;
  std::string errors;
  for (auto& r : sleepers) {
    auto v = cumulus::TryGet(r, kWait);
    if (v.ok()) {
      landed.insert(*v);
    } else {
      errors += v.status().ToString() + "; ";
    }
  }
  Check("running_tasks_retried_elsewhere",
        errors.empty() && !landed.empty() && !landed.count(victim.Hex()), errors);
  // The actor restarted on another node, knowing it was.
  auto moved = cumulus::TryGet(s.Task(&Survivor::Where).Remote(), kWait);
  auto restarted = cumulus::TryGet(s.Task(&Survivor::Restarted).Remote(), kWait);
  Check("actor_restarted_elsewhere",
        moved.ok() && *moved != victim.Hex() && restarted.ok() && *restarted,
        Text(moved) + " " + Text(restarted));
  // New work goes to the nodes that are left.
  auto fresh = cumulus::TryGet(cumulus::Task(Plus).Remote(2, 3), kWait);
  Check("new_work_runs", fresh.ok() && *fresh == 5, Text(fresh));
}

// The test SIGSTOPs the victim: its connections stay open, so only the head's verdict (DEAD after
// the heartbeat timeout) tells the owner that the actor there is gone.
void HungNode(const std::string& dir, const cumulus::NodeId& victim) {
  auto where = cumulus::TryGet(cumulus::Task(WhereAmI).SetNodeAffinity(victim).Remote(), kWait);
  auto s = cumulus::Actor(CreateSurvivor).SetMaxRestarts(1).SetNodeAffinity(victim, true).Remote();
  auto first = cumulus::TryGet(s.Task(&Survivor::Where).Remote(), kWait);
  bool setup = where.ok() && first.ok() && *first == victim.Hex();
  std::string detail = Text(where) + " " + (first.ok() ? *first : Text(first));
  Say("READY");
  if (!WaitForFile(dir + "/stopped")) return Check("test_stopped_the_node", false, "no file");
  Check("actor_on_victim", setup, detail);
  // Sent to the hung process; at-least-once: answered by the actor built again elsewhere.
  auto moved = cumulus::TryGet(s.Task(&Survivor::Where).SetMaxRetries(1).Remote(), kWait);
  auto restarted = cumulus::TryGet(s.Task(&Survivor::Restarted).Remote(), kWait);
  Check("hung_node_actor_restarted_elsewhere",
        moved.ok() && *moved != victim.Hex() && restarted.ok() && *restarted,
        Text(moved) + " " + Text(restarted));
}

// One CPU on each of two nodes and none on the driver's: an actor of one CPU runs on one node,
// whose machine the test kills (node and workers) while a call of the actor runs. A new actor of
// one CPU, created as soon as that call failed (the head may not know yet) and again once the
// head has declared the node dead, must land on the node that is left and answer.
void NewActorAfterNodeDeath(const std::string& dir) {
  const std::map<std::string, double> kOneCpu = {{"CPU", 1}};
  auto first = cumulus::Actor(CreateSurvivor).SetResources(kOneCpu).Remote();
  auto where = cumulus::TryGet(first.Task(&Survivor::Where).Remote(), kWait);
  auto running = first.Task(&Survivor::Await).Remote(dir + "/dead");
  Say("READY where=" + (where.ok() ? *where : Text(where)) + " actor=" + first.id().Hex());
  if (!WaitForFile(dir + "/killed")) return Check("test_killed_the_node", false, "no file");
  auto died = cumulus::TryGet(running, kWait);
  Check("call_on_killed_node_fails", Code(died) == cumulus::StatusCode::kActorDied, Text(died));
  // At once, as a tuner restarting a trial would: the head may not know yet.
  auto second = cumulus::Actor(CreateSurvivor).SetResources(kOneCpu).Remote();
  auto moved = cumulus::TryGet(second.Task(&Survivor::Where).Remote(), kWait);
  Check("new_actor_at_once_on_the_live_node", where.ok() && moved.ok() && *moved != *where,
        (moved.ok() ? *moved : Text(moved)) + " (killed: " + (where.ok() ? *where : "?") + ")");
  (void)second.Kill();  // frees the CPU for the next one
  if (!WaitForFile(dir + "/dead")) return Check("test_saw_the_node_dead", false, "no file");
  auto third = cumulus::Actor(CreateSurvivor).SetResources(kOneCpu).Remote();
  auto later = cumulus::TryGet(third.Task(&Survivor::Where).Remote(), kWait);
  Check("new_actor_after_dead_on_the_live_node", where.ok() && later.ok() && *later != *where,
        (later.ok() ? *later : Text(later)) + " (killed: " + (where.ok() ? *where : "?") + ")");
}

void HeadRestart(const std::string& dir) {
  // Work in flight while the head is down.
  auto s = cumulus::Actor(CreateSurvivor).Remote();
  (void)cumulus::TryGet(s.Task(&Survivor::Incr).Remote(), kWait);
  Say("READY");
  if (!WaitForFile(dir + "/head_down")) return Check("head_killed", false, "no head_down");
  // Tasks and actor calls go on without the head.
  int sum = 0;
  bool ok = true;
  for (int round = 0; round < 5; ++round) {
    std::vector<cumulus::ObjectRef<int>> refs;
    for (int i = 0; i < 100; ++i) refs.push_back(cumulus::Task(Plus).Remote(i, 1));
    for (auto& r : refs) {
      auto v = cumulus::TryGet(r, kWait);
      ok = ok && v.ok();
      sum += v.ok() ? *v : 0;
    }
  }
  auto calls = cumulus::TryGet(s.Task(&Survivor::Incr).Remote(), kWait);
  Say("HEADLESS_DONE");
  // (Checked after that line: the test reads the output up to it while waiting for it.)
  Check("tasks_run_while_head_down", ok && sum == 5 * 5050, std::to_string(sum));
  Check("actor_calls_while_head_down", calls.ok() && *calls == 2, Text(calls));
  // A named actor needs the head: its creation waits until the head is back.
  auto named = cumulus::Actor(CreateSurvivor).SetName("after-restart").Remote();
  auto n = cumulus::TryGet(named.Task(&Survivor::Incr).Remote(), kWait);
  Check("named_actor_after_head_restart", n.ok() && *n == 1, Text(n));
  auto found = cumulus::GetActor<Survivor>("after-restart");
  auto again = found.ok() ? cumulus::TryGet(found->Task(&Survivor::Incr).Remote(), kWait)
                          : cumulus::Result<int>(found.status());
  Check("get_actor_after_head_restart", again.ok() && *again == 2, Text(again));
}

// The pids in `path`, one a line, once there are `n` of them (waits up to two minutes).
std::string WaitForPids(const std::string& path, size_t n) {
  for (int i = 0; i < 1200; ++i) {
    std::ifstream in(path);
    std::vector<std::string> pids;
    for (std::string line; std::getline(in, line);) pids.push_back(line);
    if (pids.size() >= n) {
      std::string out;
      for (auto& p : pids) out += " " + p;
      return out;
    }
    usleep(100000);
  }
  return "";
}

// The test takes the head away for good (SIGKILL or SIGSTOP) while this process runs with
// CUMULUS_HEAD_WAIT_MS set: calls that need the head fail after that wait, naming the head; actor
// calls, which do not need it, go on.
void HeadGone(const std::string& dir) {
  std::string head = std::getenv("CUMULUS_ADDRESS") ? std::getenv("CUMULUS_ADDRESS") : "";
  int wait_ms =
      std::getenv("CUMULUS_HEAD_WAIT_MS") ? std::atoi(std::getenv("CUMULUS_HEAD_WAIT_MS")) : 0;
  std::string wait_text =
      wait_ms % 1000 == 0 ? std::to_string(wait_ms / 1000) + " s" : std::to_string(wait_ms) + " ms";
  auto s = cumulus::Actor(CreateSurvivor).SetName("before").Remote();
  auto first = cumulus::TryGet(s.Task(&Survivor::Incr).Remote(), kWait);
  Say("READY");
  if (!WaitForFile(dir + "/head_gone")) return Check("head_gone", false, "no head_gone");
  Check("named_actor_while_the_head_is_up", first.ok() && *first == 1, Text(first));
  auto fails_after_the_wait = [&](const std::string& check, auto call) {
    auto start = std::chrono::steady_clock::now();
    cumulus::Status st = call();
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    Say("GOT " + st.ToString() + " (after " + std::to_string(took) + " ms)");
    Check(check,
          wait_ms > 0 && st.code() == cumulus::StatusCode::kUnavailable &&
              st.message().find("the head at " + head + " could not be reached for " + wait_text) !=
                  std::string::npos &&
              took >= wait_ms && took < wait_ms + 3000,
          st.ToString() + " (after " + std::to_string(took) + " ms)");
  };
  fails_after_the_wait("get_actor_fails_after_the_wait",
                       [] { return cumulus::GetActor<Survivor>("before").status(); });
  fails_after_the_wait("named_actor_fails_after_the_wait", [] {
    auto a = cumulus::Actor(CreateSurvivor).SetName("after").Remote();
    return cumulus::TryGet(a.Task(&Survivor::Incr).Remote(), kWait).status();
  });
  auto again = cumulus::TryGet(s.Task(&Survivor::Incr).Remote(), kWait);
  Check("actor_calls_go_on_without_the_head", again.ok() && *again == 2, Text(again));
}

void DriverDeath(const std::string& dir) {
  // Actors and workers on every node, objects in every store, tasks still running, and a
  // placement group with an actor and a running task in its bundles.
  auto group = cumulus::CreatePlacementGroup({{{"CPU", 1}}, {{"CPU", 1}}},
                                             cumulus::PlacementGroupStrategy::kSpread, kWait);
  Check("driver_death_group_created", group.ok(), Text(group));
  std::vector<cumulus::ActorHandle<Survivor>> actors;
  std::string pids;
  for (int i = 0; i < 4; ++i) {
    auto actor = cumulus::Actor(CreateSurvivor).SetStrategy(cumulus::Strategy::kSpread);
    if (i == 3 && group.ok()) actor.SetPlacementGroup(*group, 0);
    actors.push_back(actor.Remote());
    auto pid = cumulus::TryGet(actors.back().Task(&Survivor::Pid).Remote(), kWait);
    if (pid.ok()) pids += " " + std::to_string(*pid);
  }
  std::vector<cumulus::ObjectRef<std::vector<uint8_t>>> blobs;
  for (int i = 0; i < 6; ++i) {
    blobs.push_back(cumulus::Task(Blob)
                        .SetStrategy(cumulus::Strategy::kSpread)
                        .Remote(1 << 20, static_cast<uint32_t>(i)));
  }
  auto put = cumulus::Put(std::vector<uint8_t>(1 << 20, 1));
  // One detached actor: it stays when this driver dies.
  auto keeper = cumulus::Actor(CreateSurvivor).SetName("keeper").SetDetached().Remote();
  auto keeper_pid = cumulus::TryGet(keeper.Task(&Survivor::Pid).Remote(), kWait);
  (void)cumulus::TryGet(keeper.Task(&Survivor::Incr).Remote(), kWait);
  cumulus::Wait(blobs, blobs.size(), kWait);
  // Tasks that never end: three on the cluster's free CPUs, one in the group's second bundle.
  std::vector<cumulus::ObjectRef<std::string>> sleepers;
  const std::string tell = dir + "/sleepers";
  for (int i = 0; i < 4; ++i) {
    auto task = cumulus::Task(TellAndSleepUntil);
    if (i == 3 && group.ok()) task.SetPlacementGroup(*group, 1);
    sleepers.push_back(task.Remote(tell, dir + "/never"));
  }
  std::string sleeper_pids = WaitForPids(tell, sleepers.size());
  Check("driver_death_sleepers_running", !sleeper_pids.empty(), "not all 4 tasks started");
  Say("READY keeper=" + std::to_string(keeper_pid.ok() ? *keeper_pid : -1) + " group=" +
      (group.ok() ? group->id().Hex() : "none") + " sleepers" + sleeper_pids + " pids" + pids);
  WaitForFile(dir + "/never");  // the test kills this process first
}

// Under a node whose memory monitor watches its workers' memory (fault_test sets the limit),
// three tasks hold memory, started in this order: the oldest and biggest (a, may be retried),
// the newest that may be retried (c), and a newer one that may not be retried (b); then an
// actor, the newest process of all, its constructor still running, takes the memory that
// crosses the threshold. The monitor must kill c, and only c, which is then retried; a, b and
// the actor are left alone.
void MemoryVictims(const std::string& dir) {
  const std::string tell = dir + "/holding", go = dir + "/go";
  auto a = cumulus::Task(Hold).Remote(dir + "/a", 300, tell, go);
  bool holding = !WaitForPids(tell, 1).empty();
  auto c = cumulus::Task(Hold).Remote(dir + "/c", 200, tell, go);
  holding = holding && !WaitForPids(tell, 2).empty();
  auto b = cumulus::Task(Hold).SetMaxRetries(0).Remote(dir + "/b", 0, tell, go);
  holding = holding && !WaitForPids(tell, 3).empty();
  auto actor = cumulus::Actor(CreateHoarder).Remote(tell, 200, go);
  std::string pids = WaitForPids(tell, 4);
  Check("tasks_and_actor_hold_memory", holding && !pids.empty(), "not all of them started");
  Say("HOLDING pids" + pids);
  auto c_tries = cumulus::TryGet(c, kWait);
  Check("newest_retriable_task_killed_and_retried", c_tries.ok() && *c_tries == 2, Text(c_tries));
  { std::ofstream(go) << "1\n"; }
  auto a_tries = cumulus::TryGet(a, kWait);
  auto b_tries = cumulus::TryGet(b, kWait);
  Check("older_and_unretriable_tasks_left_alone",
        a_tries.ok() && *a_tries == 1 && b_tries.ok() && *b_tries == 1,
        Text(a_tries) + " " + Text(b_tries));
  // Its pid is the fourth told: the process whose constructor ran is the one that answers.
  int told = std::atoi(pids.substr(pids.rfind(' ') + 1).c_str());
  auto pid = cumulus::TryGet(actor.Task(&Hoarder::Pid).Remote(), kWait);
  Check("actor_left_alone", pid.ok() && *pid == told,
        Text(pid) + (pid.ok() ? " " + std::to_string(*pid) : "") + " vs " + std::to_string(told));
}

// Another program finds the detached actor left by driver_death, uses it, and kills it.
void Keeper() {
  auto found = cumulus::GetActor<Survivor>("keeper");
  auto count = found.ok() ? cumulus::TryGet(found->Task(&Survivor::Incr).Remote(), kWait)
                          : cumulus::Result<int>(found.status());
  Check("detached_actor_outlived_its_job", count.ok() && *count == 2, Text(count));
  auto killed = found.ok() ? found->Kill() : found.status();
  Check("detached_actor_killed", killed.ok(), killed.ToString());
  auto gone = cumulus::GetActor<Survivor>("keeper");
  Check("detached_actor_name_freed", Code(gone) == cumulus::StatusCode::kNotFound, Text(gone));
  auto unnamed = cumulus::Actor(CreateSurvivor).SetDetached().Remote();
  auto refused = cumulus::TryGet(unnamed.Task(&Survivor::Pid).Remote(), kWait);
  Check("detached_needs_a_name",
        Code(refused) == cumulus::StatusCode::kInvalidArgument &&
            refused.status().message().find("SetName") != std::string::npos,
        Text(refused));
}

// An actor ended by its handle: its process exits, and nothing failed.
void KillActor() {
  auto a = cumulus::Actor(CreateSurvivor).Remote();
  auto pid = cumulus::TryGet(a.Task(&Survivor::Pid).Remote(), kWait);
  Check("actor_started", pid.ok(), Text(pid));
  auto killed = a.Kill();
  Check("actor_killed", killed.ok(), killed.ToString());
  Say("KILLED pid=" + std::to_string(pid.ok() ? *pid : -1));
}

int Job(const std::map<std::string, std::string>& args) {
  std::printf("driver says hello (job %s)\n", std::getenv("CUMULUS_JOB_ID"));
  std::fflush(stdout);
  auto shout = cumulus::TryGet(cumulus::Task(Shout).Remote(std::string("hello")), kWait);
  Check("worker_ran", shout.ok(), Text(shout));
  if (args.count("hold")) {
    // With --ignore-term=1 the driver and its actor ignore SIGTERM: only SIGKILL ends them.
    bool ignore = args.count("ignore-term") > 0;
    if (ignore) signal(SIGTERM, SIG_IGN);
    auto s = cumulus::Actor(CreateSurvivor).Remote();
    auto ignoring = ignore ? cumulus::TryGet(s.Task(&Survivor::IgnoreTerm).Remote(), kWait)
                           : cumulus::Result<bool>(false);
    auto pid = cumulus::TryGet(s.Task(&Survivor::Pid).Remote(), kWait);
    Say("HOLDING pid=" + std::to_string(pid.ok() ? *pid : -1) + " driver=" +
        std::to_string(getpid()) + " ignoring=" + (ignoring.ok() && *ignoring ? "1" : "0"));
    while (true) pause();  // until cancelled
  }
  return args.count("exit") ? std::atoi(args.at("exit").c_str()) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (auto st = cumulus::Init(argc, argv); !st.ok()) {
    std::fprintf(stderr, "fault_driver: %s\n", st.ToString().c_str());
    return 1;
  }
  auto args = Args(argc, argv);
  std::string scenario = args["scenario"], dir = args["dir"];
  if (scenario == "worker_death") {
    WorkerDeath(dir);
  } else if (scenario == "node_death") {
    auto victim = cumulus::NodeId::FromHex(args["victim"]);
    if (!victim.ok()) {
      std::fprintf(stderr, "fault_driver: --victim=NODE_ID is required\n");
      return 2;
    }
    NodeDeath(dir, *victim);
  } else if (scenario == "hung_node") {
    auto victim = cumulus::NodeId::FromHex(args["victim"]);
    if (!victim.ok()) {
      std::fprintf(stderr, "fault_driver: --victim=NODE_ID is required\n");
      return 2;
    }
    HungNode(dir, *victim);
  } else if (scenario == "new_actor_after_node_death") {
    NewActorAfterNodeDeath(dir);
  } else if (scenario == "head_restart") {
    HeadRestart(dir);
  } else if (scenario == "head_gone") {
    HeadGone(dir);
  } else if (scenario == "driver_death") {
    DriverDeath(dir);
  } else if (scenario == "keeper") {
    Keeper();
  } else if (scenario == "kill_actor") {
    KillActor();
  } else if (scenario == "memory") {
    MemoryVictims(dir);
  } else if (scenario == "job") {
    int rc = Job(args);
    if (rc != 0) return rc;
  } else {
    std::fprintf(stderr, "fault_driver: unknown --scenario=%s\n", scenario.c_str());
    return 2;
  }
  std::printf("DONE failures=%d\n", failures);
  std::fflush(stdout);
  cumulus::Shutdown();
  return failures == 0 ? 0 : 1;
}
