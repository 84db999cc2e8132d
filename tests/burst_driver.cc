// A Cumulus program run by autoscaler_test against a cluster with an autoscaler. It asks for one
// task of --cpus CPUs (with --selector, if given; only on node --pin=HEX, if given: hard node
// affinity), holding it --hold_ms, and prints the node it ran on, or the error:
//   CHECK ran ok          then   WHERE <node hex>
//   CHECK ran FAIL <why>
// With --actor=NAME, it then starts a detached actor NAME that asks for no resources on the node
// the task ran on, and prints once the actor runs there (it outlives this program: `cumulus kill
// NAME` ends it):
//   CHECK actor ok        then   ACTOR <node hex>
// With --actors=NAME:CPUS,..., it first starts those detached actors one after the other, each
// holding CPUS CPUs, and prints where each runs once it does (the next is asked for only then):
//   CHECK actors ok       with   ACTOR NAME <node hex>   per actor
// With --blob_mb=N, it then has a task on that node make an N MiB value and waits until it is
// stored there, without reading it (its only copy is on that node), prints
//   BLOB ready
// waits for its stdin to close (the test closes it), then reads the value wherever it is by then:
//   CHECK blob ok
// Arguments: [--actors=LIST] [--cpus=N [--selector=SEL] [--pin=HEX] [--hold_ms=MS] [--actor=NAME]
// [--blob_mb=N]] [--wait_s=S].
#include <cumulus/cumulus.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>

#include "driver_checks.h"

std::string HoldThenWhere(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return cumulus::CurrentNodeId().Hex();
}
// `mb` MiB, byte i being 'a' + i % 26.
std::string Blob(int mb) {
  std::string out(static_cast<size_t>(mb) << 20, ' ');
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>('a' + i % 26);
  return out;
}
// An actor that holds nothing: it takes no resources (an actor's default), only a worker.
class Keeper {
 public:
  std::string Where() const { return cumulus::CurrentNodeId().Hex(); }
};
Keeper* MakeKeeper() { return new Keeper(); }

CUMULUS_REMOTE(HoldThenWhere, Blob, MakeKeeper, &Keeper::Where);

int Finish() {
  // Shutdown runs what is still queued, such as the publication of a keeper's address under its
  // name (without it, a quick exit could leave the name without an address).
  cumulus::Shutdown();
  std::printf("DONE failures=%d\n", driver::failures);
  std::fflush(stdout);
  return driver::failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  cumulus::Status st = cumulus::Init(argc, argv);
  if (!st.ok()) {
    std::printf("CHECK init FAIL %s\n", st.ToString().c_str());
    return 1;
  }
  auto args = driver::Args(argc, argv);
  int wait_s = args.count("wait_s") ? std::stoi(args["wait_s"]) : 60;
  if (args.count("actors")) {
    bool ok = true;
    std::string why, list = args["actors"];
    for (size_t at = 0; ok && at < list.size();) {
      size_t end = std::min(list.find(',', at), list.size());
      std::string item = list.substr(at, end - at);
      at = end + 1;
      size_t colon = item.find(':');
      std::string name = item.substr(0, colon);
      auto keeper = cumulus::Actor(MakeKeeper)
                        .SetName(name)
                        .SetDetached()
                        .SetResource("CPU", std::stod(item.substr(colon + 1)))
                        .Remote();
      auto on = cumulus::TryGet(keeper.Task(&Keeper::Where).Remote(), std::chrono::seconds(wait_s));
      ok = on.ok();
      why = ok ? "" : name + ": " + on.status().ToString();
      if (ok) std::printf("ACTOR %s %s\n", name.c_str(), on->c_str());
    }
    driver::Check("actors", ok, why);
  }
  if (!args.count("cpus")) return Finish();
  double cpus = std::stod(args["cpus"]);
  int hold = args.count("hold_ms") ? std::stoi(args["hold_ms"]) : 0;
  auto task = cumulus::Task(HoldThenWhere).SetResource("CPU", cpus);
  if (args.count("selector")) task.SetLabelSelector(args["selector"]);
  if (args.count("pin")) {
    auto node = cumulus::NodeId::FromHex(args["pin"]);
    if (!node.ok()) {
      driver::Check("ran", false, node.status().ToString());
      return Finish();
    }
    task.SetNodeAffinity(*node);
  }
  auto where = cumulus::TryGet(task.Remote(hold), std::chrono::seconds(wait_s));
  driver::Check("ran", where.ok(), where.ok() ? "" : where.status().ToString());
  if (where.ok()) std::printf("WHERE %s\n", where->c_str());
  if (where.ok() && args.count("actor")) {
    auto node = cumulus::NodeId::FromHex(*where);
    bool ok = node.ok();
    std::string why = node.ok() ? "" : node.status().ToString();
    if (ok) {
      auto keeper = cumulus::Actor(MakeKeeper)
                        .SetName(args["actor"])
                        .SetDetached()
                        .SetNodeAffinity(*node)
                        .Remote();
      auto on = cumulus::TryGet(keeper.Task(&Keeper::Where).Remote(), std::chrono::seconds(wait_s));
      ok = on.ok() && *on == *where;
      why = on.ok() ? "it runs on " + *on + ", not " + *where : on.status().ToString();
      if (ok) std::printf("ACTOR %s\n", on->c_str());
    }
    driver::Check("actor", ok, ok ? "" : why);
  }
  if (where.ok() && args.count("blob_mb")) {
    int mb = std::stoi(args["blob_mb"]);
    auto node = cumulus::NodeId::FromHex(*where);
    if (!node.ok()) {
      driver::Check("blob", false, node.status().ToString());
      return Finish();
    }
    auto blob = cumulus::Task(Blob).SetNodeAffinity(*node).Remote(mb);
    auto waited = cumulus::Wait(std::vector<decltype(blob)>{blob}, 1, std::chrono::seconds(wait_s));
    if (waited.ready.empty()) {
      driver::Check("blob", false, "the blob was not made within --wait_s");
      return Finish();
    }
    std::printf("BLOB ready\n");
    std::fflush(stdout);
    for (std::string line; std::getline(std::cin, line);) {
    }
    auto value = cumulus::TryGet(blob, std::chrono::seconds(wait_s));
    driver::Check("blob", value.ok() && *value == Blob(mb),
                  !value.ok() ? value.status().ToString() : "the value read back differs");
  }
  return Finish();
}
