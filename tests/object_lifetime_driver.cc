// A Cumulus program run by object_lifetime_test: objects freed while the job runs, and objects
// lost with their nodes. It prints one line per check ("CHECK <name> ok" / "CHECK <name> FAIL
// <why>"), lines the test waits for (below), and "DONE failures=N" at the end. It waits for the
// test with a file barrier: the test creates --dir/<name> once it has done what the driver waits
// for.
//   --scenario=free        --b=NODE_ID: a task result stored on node b (and a copy pulled here by
//                          Get) and a Put object on this process's node ("HELD made=ID put=ID"),
//                          then every reference dropped ("DROPPED"); the test watches the stores
//                          let go of them while the job runs on ("freed")
//   --scenario=put_lost    a Put object ("READY"); the test kills this process's node ("killed");
//                          Get fails with ObjectLost (made by Put)
//   --scenario=rebuild     a task result on the one node with resource "slot"; each time the test
//                          kills the node holding it ("killed-N"), a task that reads it makes the
//                          owner rebuild it on the next ("REBUILT N on=NODE"); after the 4th kill
//                          Get fails (rebuilt 3 times already)
#include <cumulus/cumulus.h>
#include <unistd.h>
#include <xxhash.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "driver_checks.h"

namespace {

std::string WhereAmI() { return cumulus::CurrentNodeId().Hex(); }
int Plus(int a, int b) { return a + b; }
using driver::Blob;
uint64_t Sum(const std::vector<uint8_t>& b) { return XXH3_64bits(b.data(), b.size()); }
std::pair<std::string, uint64_t> SumWhere(std::vector<uint8_t> b) { return {WhereAmI(), Sum(b)}; }

}  // namespace

CUMULUS_REMOTE(WhereAmI, Plus, Blob, SumWhere);

namespace {

using driver::Check;
using driver::failures;
const auto kWait = std::chrono::seconds(60);
const uint64_t kBytes = 4 << 20;  // stored, not inline

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}
template <typename R>
std::string Text(const R& r) {
  return r.ok() ? std::string("ok") : r.status().ToString();
}
template <typename R>
cumulus::StatusCode Code(const R& r) {
  return r.ok() ? cumulus::StatusCode::kOk : r.status().code();
}
// Waits (up to two minutes) for the test to create `path`.
bool WaitForFile(const std::string& path) {
  for (int i = 0; i < 120000 && access(path.c_str(), F_OK) != 0; ++i) usleep(1000);
  return access(path.c_str(), F_OK) == 0;
}

// Checks made before a line the test waits for are printed after it (Subprocess::WaitForLine
// skips the lines before the one it waits for).
struct Later {
  std::vector<std::tuple<std::string, bool, std::string>> checks;
  void Check(const std::string& name, bool ok, const std::string& why) {
    checks.emplace_back(name, ok, why);
  }
  void Print() {
    for (auto& [name, ok, why] : checks) driver::Check(name, ok, why);
    checks.clear();
  }
};

void Free(const std::string& dir, const cumulus::NodeId& b) {
  Later later;
  {
    auto made = cumulus::Task(Blob).SetNodeAffinity(b).Remote(kBytes, 1);
    auto put = cumulus::Put(Blob(kBytes, 2));
    // Read here: a copy of `made` is pulled into this process's node too.
    auto got = cumulus::TryGet(made, kWait);
    auto put_got = cumulus::TryGet(put, kWait);
    later.Check("objects_made",
                got.ok() && Sum(*got) == Sum(Blob(kBytes, 1)) && put_got.ok() &&
                    Sum(*put_got) == Sum(Blob(kBytes, 2)),
                Text(got) + " " + Text(put_got));
    Say("HELD made=" + made.id().Hex() + " put=" + put.id().Hex());
    if (!WaitForFile(dir + "/seen")) return Check("test_saw_them", false, "no seen");
  }  // the last references go here
  Say("DROPPED");
  if (!WaitForFile(dir + "/freed")) return Check("test_saw_them_freed", false, "no freed");
  later.Print();
  // The job is still running.
  auto after = cumulus::TryGet(cumulus::Task(Plus).Remote(2, 3), kWait);
  Check("job_runs_on", after.ok() && *after == 5, Text(after));
}

void PutLost(const std::string& dir) {
  Later later;
  auto put = cumulus::Put(Blob(kBytes, 3));
  auto first = cumulus::TryGet(put, kWait);
  later.Check("put_readable", first.ok() && Sum(*first) == Sum(Blob(kBytes, 3)), Text(first));
  Say("READY put=" + put.id().Hex());
  if (!WaitForFile(dir + "/killed")) return Check("test_killed_the_node", false, "no killed");
  later.Print();
  auto lost = cumulus::TryGet(put, kWait);
  Say("GOT " + Text(lost));
  Check("put_is_object_lost",
        Code(lost) == cumulus::StatusCode::kObjectLost &&
            lost.status().message().find("object " + put.id().Hex()) != std::string::npos &&
            lost.status().message().find("made by Put") != std::string::npos,
        Text(lost));
}

void Rebuild(const std::string& dir) {
  Later later;
  auto slot = [](auto task) { return task.SetResource("slot", 1); };
  auto obj = slot(cumulus::Task(Blob)).Remote(kBytes, 4);
  const uint64_t want = Sum(Blob(kBytes, 4));
  // A task that reads it: it runs on the node that has "slot", which pulls it from where it
  // lives; if that node is gone, the owner rebuilds it first (on the node that has "slot").
  auto read = [&] { return cumulus::TryGet(slot(cumulus::Task(SumWhere)).Remote(obj), kWait); };
  auto made = read();
  later.Check("made", made.ok() && made->second == want, Text(made));
  Say("MADE on=" + (made.ok() ? made->first : "none"));
  for (int round = 1; round <= 3; ++round) {
    if (!WaitForFile(dir + "/killed-" + std::to_string(round))) {
      return Check("test_killed_node", false, "no killed-" + std::to_string(round));
    }
    auto r = read();
    later.Check("rebuilt_" + std::to_string(round), r.ok() && r->second == want, Text(r));
    Say("REBUILT " + std::to_string(round) + " on=" + (r.ok() ? r->first : "none"));
  }
  if (!WaitForFile(dir + "/killed-4")) return Check("test_killed_node", false, "no killed-4");
  later.Print();
  auto lost = cumulus::TryGet(obj, kWait);
  Say("GOT " + Text(lost));
  Check("lost_after_3_rebuilds",
        Code(lost) == cumulus::StatusCode::kObjectLost &&
            lost.status().message().find("object " + obj.id().Hex()) != std::string::npos &&
            lost.status().message().find("rebuilt 3 times already") != std::string::npos,
        Text(lost));
  // A task that reads it fails the same way.
  auto reader = read();
  Check("reader_fails_too",
        Code(reader) == cumulus::StatusCode::kObjectLost &&
            reader.status().message().find("rebuilt 3 times already") != std::string::npos,
        Text(reader));
}

}  // namespace

int main(int argc, char** argv) {
  if (auto st = cumulus::Init(argc, argv); !st.ok()) {
    std::fprintf(stderr, "object_lifetime_driver: %s\n", st.ToString().c_str());
    return 1;
  }
  auto args = driver::Args(argc, argv);
  std::string scenario = args["scenario"], dir = args["dir"];
  if (scenario == "free") {
    auto b = cumulus::NodeId::FromHex(args["b"]);
    if (!b.ok()) {
      std::fprintf(stderr, "object_lifetime_driver: --b=NODE_ID is required\n");
      return 2;
    }
    Free(dir, *b);
  } else if (scenario == "put_lost") {
    PutLost(dir);
  } else if (scenario == "rebuild") {
    Rebuild(dir);
  } else {
    std::fprintf(stderr, "object_lifetime_driver: unknown --scenario=%s\n", scenario.c_str());
    return 2;
  }
  std::printf("DONE failures=%d\n", failures);
  std::fflush(stdout);
  cumulus::Shutdown();
  return failures == 0 ? 0 : 1;
}
