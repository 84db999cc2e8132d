// The fixture of the tuner's tests with real processes (tune_test.cc, tune_gang_test.cc): a
// `cumulus start` head and nodes on loopback (ClusterTest), tune_driver.cc as the driver.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster_fixture.h"
#include "runtime/tune/journal.h"

namespace cumulus {

class TuneTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    head_store_memory_ = "256M";
    node_store_memory_ = "256M";
  }
  // Attached to the head's node (which has no CPU in the node-kill test: its trial runs on a
  // node that may be killed, never on the driver's own).
  std::unique_ptr<Subprocess> Driver(std::vector<std::string> args) {
    return StartDriver("tune_driver", std::move(args), CoreSocket(HeadNodeId()));
  }
  // The driver's output once it printed DONE (fails the test if it does not within `limit`).
  std::string Finish(Subprocess& driver, std::chrono::seconds limit = 180s) {
    std::string out = driver.ReadAll(limit);  // until it exits and closes its output
    EXPECT_NE(out.find("\nDONE"), std::string::npos) << "the driver did not finish:\n" << out;
    return out;
  }
  static std::map<std::string, std::string> Trials(const std::string& out) {
    std::map<std::string, std::string> t;
    size_t at = 0;
    while ((at = out.find("TRIAL t", at)) != std::string::npos) {
      size_t end = out.find('\n', at);
      std::string line = out.substr(at, end - at);
      t[line.substr(6, 5)] = line;
      at = end;
    }
    return t;
  }
  // The journal of `name` in the test's head (Unavailable, and a failure, if it cannot be reached).
  Result<tune::Journal::Loaded> Load(const std::string& name) {
    auto c = Client();
    if (!c) return Status::Unavailable("the journal of '" + name + "': the head is unreachable");
    return tune::Journal::Load(*c, name);
  }
  // Waits until the journal of `name` has `reports` reports; false at the deadline.
  bool WaitForReports(const std::string& name, size_t reports, std::chrono::seconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    auto c = Client();
    if (!c) return false;
    while (std::chrono::steady_clock::now() < deadline) {
      auto j = tune::Journal::Load(*c, name);
      if (j.ok()) {
        size_t n = 0;
        for (auto& e : j->entries) n += e.kind == tune::JournalEntry::Kind::kReport;
        if (n >= reports) return true;
      }
      std::this_thread::sleep_for(100ms);  // polling the head's state, not synchronising
    }
    return false;
  }
  // A run of experiment `name` (with `flags` after the common ones) SIGKILLed after 8 reports,
  // then restored: nothing journaled changes, no finished trial runs again, it ends. `result`:
  // the restored driver's output; `journal`: the experiment's journal once it ended. The head
  // is this function's and is stopped when it returns: what a caller checks in the journal it
  // checks in `journal`, not with Load().
  void KillAndRestore(const std::string& name, std::vector<std::string> flags,
                      std::string* result = nullptr, tune::Journal::Loaded* journal = nullptr);
};

}  // namespace cumulus
