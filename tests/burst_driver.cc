// A Cumulus program run by autoscaler_test against a cluster with an autoscaler. It asks for one
// task of --cpus CPUs (with --selector, if given), holding it --hold_ms, and prints the node it ran
// on, or the error:
//   CHECK ran ok          then   WHERE <node hex>
//   CHECK ran FAIL <why>
// Arguments: --cpus=N [--selector=SEL] [--hold_ms=MS] [--wait_s=S].
#include <cumulus/cumulus.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "driver_checks.h"

std::string HoldThenWhere(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return cumulus::CurrentNodeId().Hex();
}
CUMULUS_REMOTE(HoldThenWhere);

int main(int argc, char** argv) {
  cumulus::Status st = cumulus::Init(argc, argv);
  if (!st.ok()) {
    std::printf("CHECK init FAIL %s\n", st.ToString().c_str());
    return 1;
  }
  auto args = driver::Args(argc, argv);
  double cpus = std::stod(args["cpus"]);
  int hold = args.count("hold_ms") ? std::stoi(args["hold_ms"]) : 0;
  int wait_s = args.count("wait_s") ? std::stoi(args["wait_s"]) : 60;
  auto task = cumulus::Task(HoldThenWhere).SetResource("CPU", cpus);
  if (args.count("selector")) task.SetLabelSelector(args["selector"]);
  auto where = cumulus::TryGet(task.Remote(hold), std::chrono::seconds(wait_s));
  driver::Check("ran", where.ok(), where.ok() ? "" : where.status().ToString());
  if (where.ok()) std::printf("WHERE %s\n", where->c_str());
  std::printf("DONE failures=%d\n", driver::failures);
  std::fflush(stdout);
  return driver::failures == 0 ? 0 : 1;
}
