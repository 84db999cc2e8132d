// Monitor::Run: the monitor as a CAF actor (CAF 0.17). This is the one place CAF is used in the
// autoscaler, because its model is the right one here: one owner of the monitor's state (an
// actor), timer messages for the rounds, and slow, failure-prone provider calls run by actors of
// their own, each with a timer (its deadline plus a grace), whose answers arrive as messages. No
// mutex guards the monitor's state and nothing in the loop waits on a provider.
#include <algorithm>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/autoscaler/monitor.h"
#include "runtime/base/logging.h"
#include "runtime/base/numeric.h"

namespace cumulus::monitor_loop {

using tick_atom = caf::atom_constant<caf::atom("tick")>;      // a round is due
using poll_atom = caf::atom_constant<caf::atom("poll")>;      // look at the stop flag
using call_atom = caf::atom_constant<caf::atom("call")>;      // run the provider call
using answer_atom = caf::atom_constant<caf::atom("answer")>;  // a provider call's answer
using late_atom = caf::atom_constant<caf::atom("late")>;      // a call is past deadline + grace

// How often the stop flag (set from a signal-handling thread, which cannot message an actor
// safely) is looked at.
constexpr std::chrono::milliseconds kStopPoll{100};

// The provider calls in flight, shared by the monitor's actor, the calls' actors and whoever
// applies answers after the monitor's actor ended (Run, then Monitor::FinishLateCalls).
struct Calls {
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;            // calls whose provider call has not returned
  bool monitor_done = false;  // the monitor's actor has ended: answers are applied off it
  std::deque<std::pair<uint64_t, std::function<void()>>> answers;  // not applied yet
  // When the last call started should have answered (its deadline plus the grace): waiting for
  // calls longer than this is waiting for a provider that broke its contract.
  TimePoint answers_due = TimePoint::min();

  // A call starts that should answer within `within`.
  void Started(Duration within) {
    std::lock_guard<std::mutex> lock(mu);
    running++;
    answers_due = std::max(answers_due, SaturatingAdd(SystemClock::Get().Now(), within));
  }
};

// Outlives Run while calls still run: the actor system they run in (its destructor waits for
// them), its config, and the calls.
struct LateCalls {
  std::shared_ptr<Calls> calls = std::make_shared<Calls>();
  std::unique_ptr<caf::actor_system_config> cfg;
  std::unique_ptr<caf::actor_system> system;
};

}  // namespace cumulus::monitor_loop

namespace cumulus {

using namespace monitor_loop;

class MonitorLoop {
 public:
  static Status Run(Monitor& monitor, const std::atomic<bool>& stop);
  static bool FinishLateCalls(Monitor& m, Duration limit);
  static int LateCalls(const Monitor& m);

 private:
  // An actor for one provider call. Detached (a thread of its own): the call blocks for as long
  // as a launch takes. It queues its answer, `id`, and tells `monitor` with an ordinary message
  // (so an answer that comes after the monitor gave up waiting is still applied; one that comes
  // after the monitor's actor ended is applied by whoever waits for the calls), and ends.
  static caf::behavior CallActor(caf::event_based_actor* self, Monitor::ProviderCall call,
                                 caf::actor monitor, uint64_t id, std::shared_ptr<Calls> calls) {
    return {[self, call, monitor, id, calls](call_atom) {
      std::function<void()> apply = call();
      {
        std::lock_guard<std::mutex> lock(calls->mu);
        calls->answers.emplace_back(id, std::move(apply));
        calls->running--;
      }
      calls->cv.notify_all();
      self->send(monitor, answer_atom::value);
      self->quit();
    }};
  }

  // Off the monitor's actor, once it ended: applies the answers that came, waiting for more
  // until no call runs or `until`. True if no call runs.
  static bool ApplyLateAnswers(Monitor& m, Calls& calls, TimePoint until) {
    std::unique_lock<std::mutex> lock(calls.mu);
    while (true) {
      while (!calls.answers.empty()) {
        auto apply = std::move(calls.answers.front().second);
        calls.answers.pop_front();
        lock.unlock();
        m.ApplyLate(apply);
        lock.lock();
      }
      if (calls.running == 0) return true;
      auto more = [&] { return !calls.answers.empty() || calls.running == 0; };
      if (until == TimePoint::max()) {
        calls.cv.wait(lock, more);  // (a deadline this far would overflow the wait's clock)
      } else if (!calls.cv.wait_until(lock, until, more)) {
        return false;
      }
    }
  }

  // One round and what follows it: reconnecting to a restarted head, `cumulus down`. Returns
  // false (with `*result` set) when the monitor must stop.
  static bool Round(Monitor& m, Status* result) {
    Status st = m.RunRound();
    if (!st.ok()) {
      CUMULUS_LOG(WARN) << "autoscaler: round failed: " << st;
      if (m.head_->broken() && !m.options_.reconnect) {
        *result = Status::Unavailable("the autoscaler lost the head: " + st.message());
        return false;
      }
    }
    if (m.head_->broken() && m.options_.reconnect) {
      // The head restarted (or is restarting): its KV kept the books; ours are as new.
      auto fresh = m.options_.reconnect();
      if (fresh.ok()) {
        m.head_ = std::move(*fresh);
        m.saved_books_.clear();
        CUMULUS_LOG(INFO) << "autoscaler: connected to the head again";
      }
    }
    auto command = m.head_->KvGet(kAutoscalerNamespace, kCommandKey);
    if (command.ok() && *command == "down") {
      m.down_asked_ = true;
      *result = Status::Cancelled("'cumulus down' asked to stop");
      return false;
    }
    return true;
  }
};

Status MonitorLoop::Run(Monitor& m, const std::atomic<bool>& stop) {
  (void)FinishLateCalls(m, Duration::max());  // (a Run before this one left some)
  if (m.gave_up_calls_) {
    return Status::Unavailable(
        "the autoscaler's monitor gave up on provider calls that never returned: start a new one");
  }
  auto late = std::make_shared<monitor_loop::LateCalls>();
  std::shared_ptr<Calls> calls = late->calls;
  late->cfg = std::make_unique<caf::actor_system_config>();
  // Two scheduler threads are plenty: the monitor and the provider calls are detached actors
  // (threads of their own), because all of them block (on the head, on a provider).
  late->cfg->set("scheduler.max-threads", 2);
  late->cfg->set("scheduler.policy", caf::atom("sharing"));
  // Set on the ways out (stop, `cumulus down`, a lost head); an actor that ends otherwise
  // (an exception in a round) is not a clean stop.
  auto result =
      std::make_shared<Status>(Status::Internal("the autoscaler's monitor ended unexpectedly"));
  late->system = std::make_unique<caf::actor_system>(*late->cfg);
  late->system->spawn<caf::detached>(
      [&m, &stop, result, calls](caf::event_based_actor* self) -> caf::behavior {
        // However it ends, the answers still to come are applied off it from then on.
        self->attach_functor([calls] {
          {
            std::lock_guard<std::mutex> lock(calls->mu);
            calls->monitor_done = true;
          }
          calls->cv.notify_all();
        });
        Duration grace = m.options_.provider_grace;
        // Calls not answered yet, by id: what to do if one is past its deadline + grace.
        auto waiting = std::make_shared<std::map<uint64_t, std::function<void()>>>();
        auto next_id = std::make_shared<uint64_t>(0);
        m.start_call_ = [self, grace, waiting, next_id, calls](Monitor::ProviderCall call,
                                                               Duration deadline,
                                                               std::function<void()> timed_out) {
          uint64_t id = ++*next_id;
          (*waiting)[id] = std::move(timed_out);
          calls->Started(deadline + grace);
          auto worker = self->home_system().spawn<caf::detached>(
              CallActor, std::move(call), caf::actor_cast<caf::actor>(self), id, calls);
          self->send(worker, call_atom::value);
          self->delayed_send(self, deadline + grace, late_atom::value, id);
        };
        self->send(self, tick_atom::value);
        self->delayed_send(self, kStopPoll, poll_atom::value);
        return {
            [self, &m, result](tick_atom) {
              if (!Round(m, result.get())) {
                self->quit();
                return;
              }
              self->delayed_send(self, m.options_.round, tick_atom::value);
            },
            [self, &stop, result](poll_atom) {
              if (stop.load()) {
                *result = Status::Cancelled("stopped");
                self->quit();
                return;
              }
              self->delayed_send(self, kStopPoll, poll_atom::value);
            },
            [waiting, calls](answer_atom) {
              std::deque<std::pair<uint64_t, std::function<void()>>> ready;
              {
                std::lock_guard<std::mutex> lock(calls->mu);
                ready.swap(calls->answers);
              }
              for (auto& [id, apply] : ready) {
                waiting->erase(id);
                apply();  // also when late: a launch's instances still go in the books
              }
            },
            [waiting](late_atom, uint64_t id) {
              auto it = waiting->find(id);
              if (it == waiting->end()) return;  // answered in time
              auto timed_out = std::move(it->second);
              waiting->erase(it);
              timed_out();
            },
        };
      });
  {
    std::unique_lock<std::mutex> lock(calls->mu);
    calls->cv.wait(lock, [&] { return calls->monitor_done; });
  }
  m.start_call_ = nullptr;
  // The monitor's actor has ended. Provider calls still running are waited for a short while
  // only (`cumulus down` must not wait for a launch that takes minutes); what answers meanwhile
  // is applied here, and what answers later by FinishLateCalls (the books on a plain stop; after
  // `down`, a late launch's instances are terminated).
  bool all_done = ApplyLateAnswers(m, *calls, SystemClock::Get().Now() + m.options_.stop_wait);
  if (!m.down_asked_) (void)m.SaveBooks();
  if (all_done) {
    late->system.reset();  // every actor has ended or is ending
  } else {
    int running;
    {
      std::lock_guard<std::mutex> lock(calls->mu);
      running = calls->running;
    }
    CUMULUS_LOG(INFO) << "autoscaler: stopping with " << running
                      << " provider call(s) still running; what a launch makes is "
                      << (m.down_asked_ ? "terminated" : "kept in the books") << " when it answers";
    m.late_calls_ = late;
  }
  return *result;
}

bool MonitorLoop::FinishLateCalls(Monitor& m, Duration limit) {
  if (!m.late_calls_) return true;
  auto late = std::static_pointer_cast<monitor_loop::LateCalls>(m.late_calls_);
  m.late_calls_.reset();
  TimePoint until = SaturatingAdd(SystemClock::Get().Now(), limit);
  int running;
  {
    std::lock_guard<std::mutex> lock(late->calls->mu);
    until = std::min(until, late->calls->answers_due);
  }
  bool all_done = ApplyLateAnswers(m, *late->calls, until);
  if (!m.down_asked_) (void)m.SaveBooks();
  if (all_done) {
    late->system.reset();  // every actor has ended or is ending
    return true;
  }
  {
    std::lock_guard<std::mutex> lock(late->calls->mu);
    running = late->calls->running;
  }
  // A call still runs past its deadline and grace, or past `limit`: it is given up on. Its
  // thread blocks in a provider, and the actor system's destructor would wait for it: both stay
  // alive, with the providers it may still use, for as long as the process lives.
  CUMULUS_LOG(WARN) << "autoscaler: giving up on " << running
                    << " provider call(s) that did not return; their answers are dropped";
  struct GivenUp {
    std::shared_ptr<monitor_loop::LateCalls> late;
    std::map<std::string, std::unique_ptr<NodeProvider>> providers;
  };
  // Never freed, yet reachable from this function-static list, so that LeakSanitizer (the
  // CUMULUS_FUZZ ASan build) does not report it as a leak; never destroyed either, so that no
  // static destructor frees what a given-up call may still touch at exit.
  static std::mutex* given_up_mu = new std::mutex;
  static auto* given_up = new std::vector<std::unique_ptr<GivenUp>>;
  {
    std::lock_guard<std::mutex> lock(*given_up_mu);
    given_up->push_back(
        std::make_unique<GivenUp>(GivenUp{std::move(late), std::move(m.providers_)}));
  }
  m.providers_.clear();
  m.gave_up_calls_ = true;
  return false;
}

int MonitorLoop::LateCalls(const Monitor& m) {
  if (!m.late_calls_) return 0;
  auto late = std::static_pointer_cast<monitor_loop::LateCalls>(m.late_calls_);
  std::lock_guard<std::mutex> lock(late->calls->mu);
  return late->calls->running;
}

Status Monitor::Run(const std::atomic<bool>& stop) { return MonitorLoop::Run(*this, stop); }
bool Monitor::FinishLateCalls(Duration limit) { return MonitorLoop::FinishLateCalls(*this, limit); }
int Monitor::late_calls() const { return MonitorLoop::LateCalls(*this); }

}  // namespace cumulus
