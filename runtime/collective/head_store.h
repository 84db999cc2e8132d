// HeadStore: Gloo's rendezvous store on the head's key-value store, so that a group's members
// meet through the cluster they already trust (keys under a prefix per group and generation).
// Gloo calls it from the joining thread only; failures become exceptions, which
// CollectiveGroup::Join turns into a Status.
#pragma once

#include <gloo/rendezvous/store.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/base/clock.h"
#include "runtime/head/control_client.h"

namespace cumulus {

class HeadStore : public gloo::rendezvous::Store {
 public:
  // Keys are `prefix` + Gloo's key, in namespace `ns`.
  HeadStore(std::unique_ptr<ControlClient> head, std::string ns, std::string prefix,
            Duration timeout)
      : head_(std::move(head)), ns_(std::move(ns)), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    auto put = head_->KvPut(ns_, prefix_ + key, std::string(data.begin(), data.end()));
    if (!put.ok())
      throw std::runtime_error("rendezvous put of " + key + ": " + put.status().message());
  }

  std::vector<char> get(const std::string& key) override {
    auto v = head_->KvWait(ns_, prefix_ + key, timeout_);  // its peer may not have set it yet
    if (!v.ok())
      throw std::runtime_error("rendezvous wait for " + key + ": " + v.status().message());
    return std::vector<char>(v->begin(), v->end());
  }

  void wait(const std::vector<std::string>& keys) override {
    wait(keys, std::chrono::duration_cast<std::chrono::milliseconds>(timeout_));
  }

  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    for (auto& k : keys) {
      auto v = head_->KvWait(ns_, prefix_ + k, t);
      if (!v.ok())
        throw std::runtime_error("rendezvous wait for " + k + ": " + v.status().message());
    }
  }

  ControlClient& client() { return *head_; }

 private:
  std::unique_ptr<ControlClient> head_;
  std::string ns_, prefix_;
  Duration timeout_;
};

}  // namespace cumulus
