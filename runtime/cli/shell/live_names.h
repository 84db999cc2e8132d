// Names and ids of what runs on the cluster (nodes, jobs, named actors, tasks, objects, placement
// groups, tuning experiments and trials, node types), for tab completion: fetched from the head in
// the background and cached for a few seconds, so that completing never blocks the prompt for
// longer than Options::wait however slow or gone the head is.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cumulus::cli::shell {

class LiveNames {
 public:
  struct Options {
    std::string address;     // --address given to the shell ("" = the usual fallbacks)
    std::string token_file;  // --token-file given to the shell ("" = the usual fallbacks)
    // How long a Tab waits for a fetch it started; then it completes from what is cached.
    std::chrono::milliseconds wait{600};
    // How long fetched names are used before they are fetched again.
    std::chrono::milliseconds fresh_for{3000};
    // The head's connect and request timeouts of a fetch (it runs on a thread of its own).
    std::chrono::milliseconds fetch_timeout{2000};
  };

  explicit LiveNames(Options options);

  // The names of `kind`: "node", "job", "actor" (named actors' names), "actor_id" (the ids of the
  // actors the nodes host or recall, at most 1000), "task", "object", "group", "experiment",
  // "node_type" (the types alive nodes run as, and those the autoscaler's status names);
  // "trial:EXP" (the trial ids of experiment EXP), "trial" (every experiment's, as TRIAL and as
  // EXP/TRIAL).
  // Thread-safe; returns within about Options::wait.
  std::vector<std::string> Get(const std::string& kind);

 private:
  struct Shared;
  Options options_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace cumulus::cli::shell
