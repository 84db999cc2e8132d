// A Cumulus program run by collective_test against a real cluster (CUMULUS_ADDRESS): a collective
// group over actors spread across nodes, declared by this driver, and formed again after one
// member's process is SIGKILLed and the actor restarts. One line per check:
//   CHECK <name> ok | CHECK <name> FAIL <why>, then DONE failures=N.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <cumulus/collective.h>
#include <cumulus/cumulus.h>

#include "driver_checks.h"

using driver::Check;

class Member {
 public:
  // Joins the group the driver declared; returns "rank N" or the error.
  std::string Join(std::string name) {
    group_.reset();
    auto g = cumulus::JoinCollectiveGroup(name, std::chrono::seconds(30));
    if (!g.ok()) return g.status().ToString();
    group_ = std::move(*g);
    return "rank " + std::to_string(group_->rank());
  }
  // Sum over the group of (rank + 1) * (i + 1), element i of n; empty with the error in `why`.
  std::vector<double> Sum(int n) {
    if (!group_) throw std::runtime_error("not in a group");
    std::vector<double> v(n);
    for (int i = 0; i < n; ++i) v[i] = (group_->rank() + 1.0) * (i + 1);
    cumulus::Status st =
        group_->AllReduce(v.data(), v.size(), cumulus::DType::kFloat64, cumulus::ReduceOp::kSum);
    if (!st.ok()) throw std::runtime_error(st.ToString());
    return v;
  }
  std::string Node() { return cumulus::CurrentNodeId().Hex(); }
  bool Restarted() { return cumulus::WasRestarted(); }
  int Die() {
    kill(getpid(), SIGKILL);
    return 0;
  }
  // Joining a group whose declaration does not list this actor fails, saying so.
  std::string JoinUndeclared() {
    auto g = cumulus::JoinCollectiveGroup("nobody-declared-this", std::chrono::seconds(1));
    return g.ok() ? "joined" : g.status().ToString();
  }

 private:
  std::unique_ptr<cumulus::CollectiveGroup> group_;
};

Member* MakeMember() { return new Member(); }

CUMULUS_REMOTE(MakeMember, &Member::Join, &Member::Sum, &Member::Node, &Member::Restarted,
               &Member::Die, &Member::JoinUndeclared);

namespace {

bool SumIsRight(const std::vector<double>& v, int world) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != world * (world + 1) / 2.0 * (i + 1)) return false;
  }
  return !v.empty();
}

// Every member joins; true if they got ranks 0..n-1.
bool JoinAll(std::vector<cumulus::ActorHandle<Member>>& members, const std::string& name,
             std::string* why) {
  std::vector<cumulus::ObjectRef<std::string>> refs;
  for (auto& m : members) refs.push_back(m.Task(&Member::Join).Remote(name));
  bool ok = true;
  for (size_t i = 0; i < refs.size(); ++i) {
    std::string got = cumulus::Get(refs[i]);
    if (got != "rank " + std::to_string(i)) {
      ok = false;
      *why += "member " + std::to_string(i) + ": " + got + "; ";
    }
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (cumulus::Status st = cumulus::Init(argc, argv); !st.ok()) {
    std::fprintf(stderr, "collective_driver: %s\n", st.ToString().c_str());
    return 1;
  }
  const int world = 3;
  std::vector<cumulus::ActorHandle<Member>> members;
  for (int i = 0; i < world; ++i) {
    members.push_back(cumulus::Actor(MakeMember)
                          .SetResource("CPU", 1)
                          .SetStrategy(cumulus::Strategy::kSpread)
                          .SetMaxRestarts(1)
                          .Remote());
  }
  std::vector<std::string> nodes;
  for (auto& m : members) nodes.push_back(cumulus::Get(m.Task(&Member::Node).Remote()));
  Check("members_on_two_nodes", nodes[0] != nodes[1] || nodes[1] != nodes[2]);

  // Bad input.
  auto dup = cumulus::CreateCollectiveGroup("dup", {members[0].id(), members[0].id()});
  Check("duplicate_member_refused", dup.code() == cumulus::StatusCode::kInvalidArgument,
        dup.ToString());
  auto in_driver = cumulus::JoinCollectiveGroup("g");
  Check("join_by_name_outside_an_actor_refused",
        !in_driver.ok() && in_driver.status().code() == cumulus::StatusCode::kInvalidArgument,
        in_driver.ok() ? "joined" : in_driver.status().ToString());
  std::string undeclared = cumulus::Get(members[0].Task(&Member::JoinUndeclared).Remote());
  Check("undeclared_group_times_out",
        undeclared.find("no declaration of collective group 'nobody-declared-this'") !=
            std::string::npos,
        undeclared);

  // Declared, joined, reduced across nodes.
  Check("declared", cumulus::CreateCollectiveGroup("g", cumulus::ActorIds(members)).ok());
  std::string why;
  Check("joined", JoinAll(members, "g", &why), why);
  std::vector<cumulus::ObjectRef<std::vector<double>>> sums;
  for (auto& m : members) sums.push_back(m.Task(&Member::Sum).Remote(7919));
  bool right = true;
  for (auto& s : sums) right = right && SumIsRight(cumulus::Get(s), world);
  Check("allreduce_across_nodes", right);

  // One member's process dies: the others' next allreduce fails; the actor restarts; the driver
  // declares the group again (a new generation) and it works.
  (void)cumulus::TryGet(members[2].Task(&Member::Die).Remote());
  std::vector<cumulus::ObjectRef<std::vector<double>>> broken;
  for (int i = 0; i < 2; ++i) broken.push_back(members[i].Task(&Member::Sum).Remote(100));
  bool failed = true;
  std::string errors;
  for (auto& b : broken) {
    auto r = cumulus::TryGet(b);
    failed = failed && !r.ok();
    errors += r.ok() ? "succeeded; " : r.status().ToString() + "; ";
  }
  Check("survivors_fail", failed, errors);
  Check("member_restarted", cumulus::Get(members[2].Task(&Member::Restarted).Remote()));
  Check("declared_again", cumulus::CreateCollectiveGroup("g", cumulus::ActorIds(members)).ok());
  why.clear();
  Check("rejoined", JoinAll(members, "g", &why), why);
  sums.clear();
  for (auto& m : members) sums.push_back(m.Task(&Member::Sum).Remote(7919));
  right = true;
  for (auto& s : sums) right = right && SumIsRight(cumulus::Get(s), world);
  Check("allreduce_after_reforming", right);

  for (auto& m : members) (void)m.Kill();
  std::printf("DONE failures=%d\n", driver::failures);
  std::fflush(stdout);
  cumulus::Shutdown();
  return driver::failures == 0 ? 0 : 1;
}
