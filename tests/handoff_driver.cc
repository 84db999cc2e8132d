// A Cumulus program run by drain_test's handoff cases, attached to a node other than the one
// that drains. The test and it take turns through files in --dir:
//   it runs --count tasks on the node labelled name=a, each returning --bytes pseudo-random bytes
//   (seeded by its index), waits until all are made without reading them (so the only copies are
//   on that node; check made), says PHASE made, prints their ids on one line
//   "MADE <hex> <hex> ...", and waits for `read`;
//   then it Gets each and checks the bytes (all_bytes_same), says PHASE read, waits for `drop`,
//   drops its references (the objects are freed wherever they live now), says PHASE dropped and
//   waits for `end`.
// With --consumers=LABEL,LABEL..., it does not Get them itself at `read`: it passes each object
// as the argument of a task on every node so labelled, which checks the bytes it was given
// (arguments_read; the driver itself never reads them, so as their owner it knows no more than
// what it was told of their moves). Each run of the task that makes them appends a line to
// --dir/made_runs, so the test sees whether one was made again.
#include <cumulus/cumulus.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "driver_checks.h"

namespace {

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }
bool WaitForFile(const std::string& path) {
  for (int i = 0; i < 120000 && !Exists(path); ++i) usleep(1000);
  return Exists(path);
}
std::vector<uint8_t> Made(uint64_t bytes, uint32_t seed, std::string runs) {
  if (!runs.empty()) std::ofstream(runs, std::ios::app) << seed << "\n";
  return driver::Blob(bytes, seed);
}
// Whether `bytes` are the ones Made(bytes.size(), seed) makes.
bool Same(std::vector<uint8_t> bytes, uint32_t seed) {
  return bytes == driver::Blob(bytes.size(), seed);
}

std::vector<std::string> Split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

CUMULUS_REMOTE(Made);
CUMULUS_REMOTE(Same);

int main(int argc, char** argv) {
  cumulus::Status st = cumulus::Init(argc, argv);
  if (!st.ok()) {
    std::printf("CHECK init FAIL %s\n", st.ToString().c_str());
    return 1;
  }
  auto args = driver::Args(argc, argv);
  const std::string dir = args["dir"];
  const int count = std::stoi(args["count"]);
  const uint64_t bytes = std::stoull(args["bytes"]);
  const std::vector<std::string> consumers = Split(args["consumers"]);
  const std::string runs = consumers.empty() ? "" : dir + "/made_runs";
  using std::chrono::seconds;

  std::vector<cumulus::ObjectRef<std::vector<uint8_t>>> refs;
  for (int i = 0; i < count; ++i) {
    refs.push_back(cumulus::Task(Made).SetLabelSelector("name=a").Remote(
        bytes, static_cast<uint32_t>(i + 1), runs));
  }
  {
    // (Its result holds references too: gone at the end of this block.)
    auto made = cumulus::Wait(refs, refs.size(), std::chrono::milliseconds(60000));
    driver::Check("made", made.not_ready.empty(),
                  std::to_string(made.not_ready.size()) + " not made in 60 s");
  }
  std::printf("PHASE made\n");
  std::string line = "MADE";
  for (auto& r : refs) line += " " + r.id().Hex();
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);

  driver::Check("read", WaitForFile(dir + "/read"), "no 'read' file");
  std::string wrong;
  if (!consumers.empty()) {
    std::vector<std::pair<std::string, cumulus::ObjectRef<bool>>> checks;
    for (int i = 0; i < count; ++i) {
      for (const std::string& label : consumers) {
        checks.emplace_back(label + " " + std::to_string(i),
                            cumulus::Task(Same).SetLabelSelector(label).Remote(
                                refs[i], static_cast<uint32_t>(i + 1)));
      }
    }
    for (auto& [what, check] : checks) {
      auto same = cumulus::TryGet(check, seconds(20));
      if (!same.ok()) {
        wrong += " " + what + ": " + same.status().ToString();
      } else if (!*same) {
        wrong += " " + what + ": wrong bytes";
      }
    }
    driver::Check("arguments_read", wrong.empty(), wrong);
  } else {
    for (int i = 0; i < count; ++i) {
      auto got = cumulus::TryGet(refs[i], seconds(60));
      if (!got.ok()) {
        wrong += " " + std::to_string(i) + ": " + got.status().ToString();
      } else if (*got != driver::Blob(bytes, static_cast<uint32_t>(i + 1))) {
        wrong += " " + std::to_string(i) + ": wrong bytes";
      }
    }
    driver::Check("all_bytes_same", wrong.empty(), wrong);
  }
  std::printf("PHASE read\n");
  std::fflush(stdout);

  driver::Check("drop", WaitForFile(dir + "/drop"), "no 'drop' file");
  refs.clear();
  std::printf("PHASE dropped\n");
  std::fflush(stdout);
  driver::Check("end", WaitForFile(dir + "/end"), "no 'end' file");
  std::printf("DONE failures=%d\n", driver::failures);
  std::fflush(stdout);
  return driver::failures == 0 ? 0 : 1;
}
