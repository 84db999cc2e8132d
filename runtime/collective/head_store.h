// HeadStore: the rendezvous store of a group's Gloo mesh (gloo_module.h) on the head's key-value
// store, so that a group's members meet through the cluster they already trust (keys under a
// prefix per group and generation). Gloo calls it from the joining thread only; failures become
// exceptions, which CollectiveGroup::Join turns into a Status.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/base/clock.h"
#include "runtime/collective/gloo_module.h"
#include "runtime/head/control_client.h"

namespace cumulus {

class HeadStore : public RendezvousStore {
 public:
  // Keys are `prefix` + Gloo's key, in namespace `ns`.
  HeadStore(std::unique_ptr<ControlClient> head, std::string ns, std::string prefix,
            Duration timeout)
      : head_(std::move(head)), ns_(std::move(ns)), prefix_(std::move(prefix)), timeout_(timeout) {}

  void Set(const std::string& key, const std::vector<char>& data) override {
    auto put = head_->KvPut(ns_, prefix_ + key, std::string(data.begin(), data.end()));
    if (!put.ok())
      throw std::runtime_error("rendezvous put of " + key + ": " + put.status().message());
  }

  std::vector<char> Get(const std::string& key) override {
    auto v = head_->KvWait(ns_, prefix_ + key, timeout_);  // its peer may not have set it yet
    if (!v.ok())
      throw std::runtime_error("rendezvous wait for " + key + ": " + v.status().message());
    return std::vector<char>(v->begin(), v->end());
  }

  void Wait(const std::vector<std::string>& keys, std::chrono::milliseconds t) override {
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
