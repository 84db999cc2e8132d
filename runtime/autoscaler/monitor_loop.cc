// Monitor::Run: the monitor as a CAF actor (CAF 0.17). This is the one place CAF is used in the
// autoscaler, because its model is the right one here: one owner of the monitor's state (an
// actor), timer messages for the rounds, and slow, failure-prone provider calls run by actors of
// their own, each with a timer (its deadline plus a grace), whose answers arrive as messages. No
// mutex guards the monitor's state and nothing in the loop waits on a provider.
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <map>
#include <memory>

#include "runtime/autoscaler/monitor.h"
#include "runtime/base/logging.h"

namespace cumulus::monitor_loop {

// What a provider call hands back: the change to apply to the monitor's state, on its actor.
struct Answer {
  std::function<void()> apply;
};

using tick_atom = caf::atom_constant<caf::atom("tick")>;      // a round is due
using poll_atom = caf::atom_constant<caf::atom("poll")>;      // look at the stop flag
using call_atom = caf::atom_constant<caf::atom("call")>;      // run the provider call
using answer_atom = caf::atom_constant<caf::atom("answer")>;  // a provider call's answer
using late_atom = caf::atom_constant<caf::atom("late")>;      // a call is past deadline + grace

// How often the stop flag (set from a signal-handling thread, which cannot message an actor
// safely) is looked at.
constexpr std::chrono::milliseconds kStopPoll{100};

}  // namespace cumulus::monitor_loop

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cumulus::monitor_loop::Answer)

namespace cumulus {

using namespace monitor_loop;

class MonitorLoop {
 public:
  static Status Run(Monitor& monitor, const std::atomic<bool>& stop);

 private:
  // An actor for one provider call. Detached (a thread of its own): the call blocks for as long
  // as a launch takes. It sends its answer, `id`, to `monitor` as an ordinary message (so an
  // answer that comes after the monitor gave up waiting is still applied) and ends.
  static caf::behavior CallActor(caf::event_based_actor* self, Monitor::ProviderCall call,
                                 caf::actor monitor, uint64_t id) {
    return {[self, call, monitor, id](call_atom) {
      self->send(monitor, answer_atom::value, id, Answer{call()});
      self->quit();
    }};
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
      *result = Status::Cancelled("'cumulus down' asked to stop");
      return false;
    }
    return true;
  }
};

Status MonitorLoop::Run(Monitor& m, const std::atomic<bool>& stop) {
  caf::actor_system_config cfg;
  // Two scheduler threads are plenty: the monitor and the provider calls are detached actors
  // (threads of their own), because all of them block (on the head, on a provider).
  cfg.set("scheduler.max-threads", 2);
  cfg.set("scheduler.policy", caf::atom("sharing"));
  // Set on the ways out (stop, `cumulus down`, a lost head); an actor that ends otherwise
  // (an exception in a round) is not a clean stop.
  auto result =
      std::make_shared<Status>(Status::Internal("the autoscaler's monitor ended unexpectedly"));
  {
    caf::actor_system system{cfg};
    system.spawn<caf::detached>([&m, &stop, result](caf::event_based_actor* self) -> caf::behavior {
      Duration grace = m.options_.provider_grace;
      // Calls not answered yet, by id: what to do if one is past its deadline + grace.
      auto waiting = std::make_shared<std::map<uint64_t, std::function<void()>>>();
      auto next_id = std::make_shared<uint64_t>(0);
      m.start_call_ = [self, grace, waiting, next_id](Monitor::ProviderCall call, Duration deadline,
                                                      std::function<void()> timed_out) {
        uint64_t id = ++*next_id;
        (*waiting)[id] = std::move(timed_out);
        auto worker = self->home_system().spawn<caf::detached>(
            CallActor, std::move(call), caf::actor_cast<caf::actor>(self), id);
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
          [waiting](answer_atom, uint64_t id, Answer& answer) {
            waiting->erase(id);
            answer.apply();  // also when late: a launch's instances still go in the books
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
    // The monitor's actor has ended; provider calls still running end by their own deadlines
    // (their answers have no one to go to now: a node launched meanwhile is adopted when it
    // registers, and `cumulus down` lists the providers' instances itself).
    system.await_all_actors_done();
  }
  m.start_call_ = nullptr;
  return *result;
}

Status Monitor::Run(const std::atomic<bool>& stop) { return MonitorLoop::Run(*this, stop); }

}  // namespace cumulus
