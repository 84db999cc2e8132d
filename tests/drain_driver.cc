// A Cumulus program run by drain_test against a head, node A (name=a) and node B (name=b,
// special=1), attached to A. The test and it take turns through files in --dir:
//   it starts a task on B that holds until `release` (telling `started` when it runs) and puts a
//   200 KB result on B (big_on_b), then waits for `drained` (the test ran `cumulus drain B`);
//   it submits tasks (SPREAD), an actor and a SPREAD placement group: all land on A
//   (tasks_on_a, actor_on_a, group_on_a); a task needing special=1, which only B has, waits
//   instead of failing (only_b_waits); after `release` the long task ends on B (long_ran_on_b);
//   it says PHASE holding, waits for `drop` (B has handed the object to A and left), reads it
//   again (big_after_handoff), drops its reference, says
//   PHASE dropped, and waits for `end`.
#include <cumulus/cumulus.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "driver_checks.h"

namespace {

std::string WhereAmI() { return cumulus::CurrentNodeId().Hex(); }
bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }
// Waits (up to two minutes) for the test to create `path`.
bool WaitForFile(const std::string& path) {
  for (int i = 0; i < 120000 && !Exists(path); ++i) usleep(1000);
  return Exists(path);
}
std::string TellAndHoldUntil(std::string tell, std::string path) {
  { std::ofstream(tell) << "1\n"; }
  WaitForFile(path);
  return WhereAmI();
}
std::string Briefly(int ms) {
  usleep(static_cast<useconds_t>(ms) * 1000);
  return WhereAmI();
}
std::vector<uint8_t> Big(uint64_t bytes) { return driver::Blob(bytes, 7); }

class Where {
 public:
  std::string Node() const { return WhereAmI(); }
};
Where* CreateWhere() { return new Where(); }

}  // namespace

CUMULUS_REMOTE(TellAndHoldUntil);
CUMULUS_REMOTE(Briefly);
CUMULUS_REMOTE(Big);
CUMULUS_REMOTE(CreateWhere, &Where::Node);

int main(int argc, char** argv) {
  cumulus::Status st = cumulus::Init(argc, argv);
  if (!st.ok()) {
    std::printf("CHECK init FAIL %s\n", st.ToString().c_str());
    return 1;
  }
  auto args = driver::Args(argc, argv);
  const std::string dir = args["dir"], a = args["a"], b = args["b"];
  using std::chrono::seconds;

  auto long_task = cumulus::Task(TellAndHoldUntil)
                       .SetLabelSelector("name=b")
                       .Remote(dir + "/started", dir + "/release");
  std::optional<cumulus::ObjectRef<std::vector<uint8_t>>> big =
      cumulus::Task(Big).SetLabelSelector("name=b").Remote(uint64_t{200000});
  auto bytes = cumulus::TryGet(*big, seconds(60));
  driver::Check("big_on_b", bytes.ok() && *bytes == driver::Blob(200000, 7),
                bytes.ok() ? "wrong bytes" : bytes.status().ToString());
  std::printf("PHASE submitted\n");
  std::fflush(stdout);
  driver::Check("drained", WaitForFile(dir + "/drained"), "no 'drained' file");

  // New work after the drain: none of it on B, although B has room and SPREAD would use it.
  std::vector<cumulus::ObjectRef<std::string>> refs;
  for (int i = 0; i < 6; ++i) {
    refs.push_back(cumulus::Task(Briefly)
                       .SetStrategy(cumulus::Strategy::kSpread)
                       .SetResource("CPU", 1)
                       .Remote(100));
  }
  int on_a = 0;
  std::string elsewhere;
  for (auto& r : refs) {
    auto where = cumulus::TryGet(r, seconds(60));
    if (where.ok() && *where == a) {
      ++on_a;
    } else {
      elsewhere += " " + (where.ok() ? *where : where.status().ToString());
    }
  }
  driver::Check("tasks_on_a", on_a == 6, "ran elsewhere:" + elsewhere);
  {
    auto actor = cumulus::Actor(CreateWhere).SetResource("CPU", 1).Remote();
    auto where = cumulus::TryGet(actor.Task(&Where::Node).Remote(), seconds(60));
    driver::Check("actor_on_a", where.ok() && *where == a,
                  where.ok() ? "on " + *where : where.status().ToString());
  }
  {
    auto group = cumulus::CreatePlacementGroup({{{"CPU", 0.5}}, {{"CPU", 0.5}}},
                                               cumulus::PlacementGroupStrategy::kSpread,
                                               std::chrono::milliseconds(30000));
    bool all_a = group.ok();
    if (group.ok()) {
      for (size_t i = 0; i < group->bundle_count(); ++i)
        all_a = all_a && group->bundle_node(i).Hex() == a;
      (void)cumulus::RemovePlacementGroup(*group);
    }
    driver::Check("group_on_a", all_a,
                  group.ok() ? "a bundle went to B" : group.status().ToString());
  }
  {
    // Only B has special=1: the task waits (pending demand), it does not fail as infeasible.
    auto only_b = cumulus::Task(Briefly).SetResource("special", 1).Remote(0);
    auto r = cumulus::TryGet(only_b, seconds(2));
    driver::Check("only_b_waits", !r.ok() && r.status().code() == cumulus::StatusCode::kTimedOut,
                  r.ok() ? "ran on " + *r : r.status().ToString());
    (void)cumulus::Cancel(only_b);
  }

  std::printf("PHASE placed\n");
  std::fflush(stdout);
  driver::Check("release", WaitForFile(dir + "/release"), "no 'release' file");
  auto long_where = cumulus::TryGet(long_task, seconds(60));
  driver::Check("long_ran_on_b", long_where.ok() && *long_where == b,
                long_where.ok() ? "on " + *long_where : long_where.status().ToString());

  std::printf("PHASE holding\n");
  std::fflush(stdout);
  driver::Check("drop", WaitForFile(dir + "/drop"), "no 'drop' file");
  if (!a.empty() && a != "none") {  // B drained and handed the object to A
    auto again = cumulus::TryGet(*big, seconds(60));
    driver::Check("big_after_handoff", again.ok() && *again == driver::Blob(200000, 7),
                  again.ok() ? "wrong bytes" : again.status().ToString());
  }
  big.reset();  // the owner frees its object where it lives
  std::printf("PHASE dropped\n");
  std::fflush(stdout);
  driver::Check("end", WaitForFile(dir + "/end"), "no 'end' file");
  std::printf("DONE failures=%d\n", driver::failures);
  std::fflush(stdout);
  return driver::failures == 0 ? 0 : 1;
}
