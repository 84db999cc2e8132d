// Monitor::Run: the monitor as a CAF actor (CAF 0.17). This is the one place CAF is used in the
// autoscaler, because its model is the right one here: one owner of the monitor's state (an
// actor), timer messages for the rounds, and slow, failure-prone provider calls as requests to
// actors of their own, each with a timeout, whose answers arrive as messages. No mutex guards the
// monitor's state and nothing in the loop waits on a provider.
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <memory>

#include "runtime/autoscaler/monitor.h"
#include "runtime/base/logging.h"

namespace cumulus::monitor_loop {

// What a provider call hands back: the change to apply to the monitor's state, on its actor.
struct Answer {
  std::function<void()> apply;
};

using tick_atom = caf::atom_constant<caf::atom("tick")>;  // a round is due
using poll_atom = caf::atom_constant<caf::atom("poll")>;  // look at the stop flag
using call_atom = caf::atom_constant<caf::atom("call")>;  // run the provider call

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
  // as a launch takes. It answers once and ends.
  static caf::behavior CallActor(caf::event_based_actor* self, Monitor::ProviderCall call) {
    return {[self, call](call_atom) -> Answer {
      Answer answer{call()};
      self->quit();
      return answer;
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
  auto result = std::make_shared<Status>(Status::Cancelled("stopped"));
  {
    caf::actor_system system{cfg};
    system.spawn<caf::detached>([&m, &stop, result](caf::event_based_actor* self) -> caf::behavior {
      Duration grace = m.options_.provider_grace;
      m.start_call_ = [self, grace](Monitor::ProviderCall call, Duration deadline,
                                    std::function<void()> timed_out) {
        auto worker = self->home_system().spawn<caf::detached>(CallActor, std::move(call));
        self->request(worker, deadline + grace, call_atom::value)
            .then([](Answer& answer) { answer.apply(); },
                  [timed_out](caf::error&) { timed_out(); });
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
          [self, &stop](poll_atom) {
            if (stop.load()) {
              self->quit();
              return;
            }
            self->delayed_send(self, kStopPoll, poll_atom::value);
          },
      };
    });
    // The monitor's actor has ended; provider calls still running end by their own deadlines
    // (their answers have no one to go to: a node launched meanwhile is adopted when it
    // registers, and `cumulus down` lists the providers' instances itself).
    system.await_all_actors_done();
  }
  m.start_call_ = nullptr;
  return *result;
}

Status Monitor::Run(const std::atomic<bool>& stop) { return MonitorLoop::Run(*this, stop); }

}  // namespace cumulus
