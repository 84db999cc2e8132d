// Jobs on a real cluster: `cumulus submit` ships a driver (fault_driver --scenario=job) to a node,
// `logs` reads its output and its workers', `cancel` stops it and all it started, `jobs` and
// `list` show the records, which survive a head restart; bad input gets one clear line.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cluster_fixture.h"

namespace cumulus {
namespace {

class JobTest : public ClusterTest {
 protected:
  // The driver program (tens of MiB with debug information) travels through the node's store.
  void SetUp() override {
    ClusterTest::SetUp();
    head_store_memory_ = "256M";
    node_store_memory_ = "256M";
  }
  std::vector<std::string> Auth() { return {"--address", address_, "--token-file", token_file_}; }
  int Run(std::vector<std::string> args, std::string* out, bool auth = true) {
    if (auth) {
      auto a = Auth();
      auto dash = std::find(args.begin(), args.end(), "--");
      args.insert(dash, a.begin(), a.end());
    }
    return Cli(args, out);
  }
  const std::string kDriver = std::string(CUMULUS_BIN_DIR) + "/fault_driver";
  // The driver's "HOLDING pid=ACTOR driver=PID ignoring=0|1" line (without its newline).
  static std::string HoldingLine(const std::string& logs) {
    size_t at = logs.find("HOLDING pid=");
    if (at == std::string::npos) return "";
    return logs.substr(at, logs.find('\n', at) - at);
  }
  static std::string JobIdOf(const std::string& submit_output) {
    size_t at = submit_output.find("Submitted job ");
    return at == std::string::npos ? "" : submit_output.substr(at + 14, 8);
  }
};

TEST_F(JobTest, SubmitRunsTheDriverOnTheClusterAndKeepsItsOutput) {
  auto head = StartHead({"--no-node"});
  int port = std::atoi(address_.substr(address_.rfind(':') + 1).c_str());
  std::string a;
  auto node = StartNode("a", {"--resources", "CPU=2"}, &a);

  std::string out;
  int rc = Run({"submit", "--name", "hello", "--wait", "--", kDriver, "--scenario=job"}, &out);
  EXPECT_EQ(rc, 0) << out;
  std::string job = JobIdOf(out);
  ASSERT_EQ(job.size(), 8u) << out;
  EXPECT_NE(out.find("driver says hello (job " + job + ")"), std::string::npos) << out;
  EXPECT_NE(out.find("worker says hello"), std::string::npos) << out;
  EXPECT_NE(out.find("SUCCEEDED"), std::string::npos) << out;

  // The output is kept: logs reads it after the job ended.
  std::string logs;
  EXPECT_EQ(Run({"logs", job}, &logs), 0) << logs;
  EXPECT_NE(logs.find("driver says hello"), std::string::npos) << logs;
  EXPECT_NE(logs.find("worker says hello"), std::string::npos) << logs;

  // A driver that fails: --wait says so and exits 1.
  std::string failed;
  EXPECT_EQ(Run({"submit", "--wait", "--", kDriver, "--scenario=job", "--exit=3"}, &failed), 1)
      << failed;
  EXPECT_NE(failed.find("exited with status 3"), std::string::npos) << failed;

  // The records live in the control store: they survive a head restart.
  head->Kill(SIGKILL);
  (void)head->Wait(10s);
  head = StartHead({"--no-node"}, port);
  std::string jobs;
  EXPECT_EQ(Run({"jobs", "--json", "--filter", "job=" + job}, &jobs), 0) << jobs;
  EXPECT_NE(jobs.find("\"state\":\"SUCCEEDED\""), std::string::npos) << jobs;
  EXPECT_NE(jobs.find("\"name\":\"hello\""), std::string::npos) << jobs;
  std::string failed_rows;
  EXPECT_EQ(Run({"list", "jobs", "--filter", "state=FAILED"}, &failed_rows), 0);
  EXPECT_NE(failed_rows.find("exited with status 3"), std::string::npos) << failed_rows;
  EXPECT_EQ(Run({"logs", job}, &logs), 0) << logs;
  EXPECT_NE(logs.find("worker says hello"), std::string::npos) << logs;
}

// Bytes of the files under `dir`, and how many job directories are under its nodes' submitted/.
uint64_t BytesUnder(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code e;
    if (it->is_regular_file(e)) total += it->file_size(e);
  }
  return total;
}
int SubmittedDirs(const std::string& data_dir) {
  int n = 0;
  std::error_code ec;
  for (auto& node : std::filesystem::directory_iterator(data_dir, ec)) {
    for (auto& job : std::filesystem::directory_iterator(node.path() / "submitted", ec)) {
      (void)job;
      ++n;
    }
  }
  return n;
}

// Issue 13, defect 4: every `cumulus submit` left a full copy of the program under
// DATA_DIR/node-PID/submitted/JOB forever. A job's files go once it ended; the program its
// workers ran stays once, in the node's bounded program cache; `status` tells the disk use.
TEST_F(JobTest, AJobsFilesGoWhenItEndsAndTheDataDirDoesNotGrow) {
  auto head = StartHead({"--no-node"});
  std::string a;
  auto node = StartNode("a", {"--resources", "CPU=2"}, &a);
  std::string data = dir_.path() + "/a";
  std::string out;
  ASSERT_EQ(Run({"submit", "--wait", "--", kDriver, "--scenario=job"}, &out), 0) << out;
  WaitUntil([&] { return SubmittedDirs(data) == 0; }, 10s);
  uint64_t after_first = BytesUnder(data);
  const int kJobs = 5;
  for (int i = 1; i < kJobs; ++i) {
    ASSERT_EQ(Run({"submit", "--wait", "--", kDriver, "--scenario=job"}, &out), 0) << out;
  }
  bool cleaned = WaitUntil([&] { return SubmittedDirs(data) == 0; }, 10s);
  uint64_t after = BytesUnder(data);
  uint64_t program = std::filesystem::file_size(kDriver);
  std::printf(
      "program %.1f MiB; data dir after 1 job %.1f MiB, after %d jobs %.1f MiB; "
      "submitted/ job dirs left: %d\n",
      program / 1048576.0, after_first / 1048576.0, kJobs, after / 1048576.0, SubmittedDirs(data));
  EXPECT_TRUE(cleaned) << SubmittedDirs(data) << " submitted job dirs left after the jobs ended";
  EXPECT_LT(after, after_first + (2u << 20)) << "the data dir grew with each job";
  EXPECT_LT(after, 2 * program) << "more than the one cached copy of the program";

  // The node reports its disk: the cached program, no submitted files, free space.
  std::string status;
  ASSERT_TRUE(WaitUntil(
      [&] {
        return Run({"status", "--json"}, &status) == 0 &&
               status.find("\"program_cache_bytes\":" + std::to_string(program)) !=
                   std::string::npos &&
               status.find("\"submitted_bytes\":0,") != std::string::npos;
      },
      10s))
      << status;
  EXPECT_EQ(status.find("\"free_bytes\":0}"), std::string::npos) << status;
  EXPECT_EQ(Run({"status"}, &status), 0);
  EXPECT_NE(status.find("program cache "), std::string::npos) << status;
}

TEST_F(JobTest, CancelStopsTheDriverAndEverythingItStarted) {
  auto head = StartHead({"--resources", "CPU=2"});
  std::string out;
  ASSERT_EQ(Run({"submit", "--", kDriver, "--scenario=job", "--hold=1"}, &out), 0) << out;
  std::string job = JobIdOf(out);
  ASSERT_EQ(job.size(), 8u) << out;
  // Its actor's and its own pids show in its log once it runs.
  std::string logs;
  ASSERT_TRUE(WaitUntil(
      [&] {
        Run({"logs", job}, &logs);
        return logs.find("HOLDING pid=") != std::string::npos;
      },
      60s))
      << logs;
  std::string holding = HoldingLine(logs);
  pid_t actor = std::atoi(Field(holding, "HOLDING pid").c_str());
  pid_t driver = std::atoi(Field(holding, "driver").c_str());
  ASSERT_GT(actor, 0) << logs;
  ASSERT_GT(driver, 0) << logs;
  std::string running;
  EXPECT_EQ(Run({"jobs", "--filter", "state=RUNNING"}, &running), 0);
  EXPECT_NE(running.find(job), std::string::npos) << running;
  // Its program sits in its node's store (nodes report every 2 s).
  std::string objects;
  EXPECT_TRUE(WaitUntil(
      [&] {
        Run({"list", "objects", "--json", "--filter", "job=" + job}, &objects);
        return objects.find("\"where\":\"MEMORY\"") != std::string::npos;
      },
      30s))
      << objects;

  std::string cancelled;
  EXPECT_EQ(Run({"cancel", job}, &cancelled), 0) << cancelled;
  EXPECT_NE(cancelled.find("STOPPED"), std::string::npos) << cancelled;
  // SIGTERM reaches the driver (it used to start with SIGINT and SIGTERM blocked, and was always
  // SIGKILLed after the grace).
  EXPECT_NE(cancelled.find("ended after SIGTERM"), std::string::npos) << cancelled;
  EXPECT_TRUE(WaitUntil([&] { return kill(driver, 0) != 0; }, 30s)) << "the driver still runs";
  EXPECT_TRUE(WaitUntil([&] { return kill(actor, 0) != 0; }, 30s)) << "its actor still runs";
  EXPECT_TRUE(WaitUntil(
      [&] {
        Run({"list", "objects", "--json", "--filter", "job=" + job}, &objects);
        return objects == "[]\n";
      },
      30s))
      << "objects of the cancelled job are left: " << objects;
  std::string again;
  EXPECT_EQ(Run({"cancel", job}, &again), 0) << again;
  EXPECT_NE(again.find("already ended: STOPPED"), std::string::npos) << again;
}

// A driver (and its actor) that ignore SIGTERM: the node SIGKILLs the driver once --grace is
// over, not before, and `cancel` says which signal ended it.
TEST_F(JobTest, CancelSigkillsADriverThatIgnoresSigtermAfterTheGrace) {
  auto head = StartHead({"--resources", "CPU=2"});
  std::string out;
  ASSERT_EQ(Run({"submit", "--", kDriver, "--scenario=job", "--hold=1", "--ignore-term=1"}, &out),
            0)
      << out;
  std::string job = JobIdOf(out);
  ASSERT_EQ(job.size(), 8u) << out;
  std::string logs;
  ASSERT_TRUE(WaitUntil(
      [&] {
        Run({"logs", job}, &logs);
        return logs.find("HOLDING pid=") != std::string::npos;
      },
      60s))
      << logs;
  std::string holding = HoldingLine(logs);
  pid_t actor = std::atoi(Field(holding, "HOLDING pid").c_str());
  pid_t driver = std::atoi(Field(holding, "driver").c_str());
  ASSERT_GT(actor, 0) << logs;
  ASSERT_GT(driver, 0) << logs;
  ASSERT_EQ(Field(holding, "ignoring"), "1") << logs;

  std::string cancelled;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Run({"cancel", job, "--grace", "2"}, &cancelled), 0) << cancelled;
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(cancelled.find("STOPPED"), std::string::npos) << cancelled;
  EXPECT_NE(cancelled.find("did not end within 2 s of SIGTERM and was killed with SIGKILL "
                           "(killed by signal 9)"),
            std::string::npos)
      << cancelled;
  // The grace is kept: SIGKILL comes after it, not at once (a lower bound, which load cannot
  // make fail).
  EXPECT_GE(took, 2.0) << cancelled;
  EXPECT_TRUE(WaitUntil([&] { return kill(driver, 0) != 0; }, 30s)) << "the driver still runs";
  EXPECT_TRUE(WaitUntil([&] { return kill(actor, 0) != 0; }, 30s)) << "its actor still runs";
  std::string jobs;
  EXPECT_EQ(Run({"jobs", "--json", "--filter", "job=" + job}, &jobs), 0) << jobs;
  EXPECT_NE(jobs.find("killed with SIGKILL"), std::string::npos) << jobs;
}

TEST_F(JobTest, BadRequestsGetOneClearLine) {
  auto head = StartHead({"--resources", "CPU=1"});
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says;
    bool auth = true;
  };
  std::vector<Case> cases = {
      {{"submit", "--name", "x"}, 2, "needs the program after '--'"},
      {{"submit", "--", "/no/such/program"}, 2, "is not an executable file"},
      {{"submit", "--resources", "GPU=8", "--", kDriver}, 1, "no alive node has GPU=8"},
      {{"submit", "--resources", "CPU=-1", "--", kDriver}, 2, "CPU"},
      {{"logs", "0badf00d"}, 1, "no job 0badf00d"},
      {{"logs", "not-an-id"}, 2, "not-an-id"},
      {{"cancel", "0badf00d"}, 1, "no job 0badf00d"},
      {{"jobs", "--filter", "nokey"}, 2, "KEY=VALUE"},
      {{"jobs", "--filter", "color=red"}, 2, "cannot filter on 'color'"},
      {{"list", "tasks", "--filter", "colour=red"}, 2, "cannot filter on 'colour'"},
      {{"list", "bogus"}, 2, "bogus", /*auth=*/false},
  };
  for (auto& c : cases) {
    std::string out;
    EXPECT_EQ(Run(c.args, &out, c.auth), c.code) << "cumulus " << c.args[0] << "...: " << out;
    EXPECT_NE(out.find(c.says), std::string::npos) << "expected '" << c.says << "' in: " << out;
    EXPECT_EQ(Count(out, "\n"), 1) << "one line, not a stack of errors: " << out;
  }
  // Numbers out of range: the whole output is the one line.
  std::string out;
  for (const char* grace : {"-1", "x", "1e9", "nan", "1e30", "inf", "0x10", " 5", ""}) {
    EXPECT_EQ(Run({"cancel", "0badf00d", "--grace", grace}, &out), 2) << grace;
    EXPECT_EQ(out, "cumulus: --grace must be a number of seconds from 0 to 3600, got '" +
                       std::string(grace) + "'; run 'cumulus cancel --help' for usage\n");
  }
  for (const char* limit : {"0", "-1", "1e30", "12abc", "99999999999999999999"}) {
    EXPECT_EQ(Run({"jobs", "--limit", limit}, &out), 2) << limit;
    EXPECT_EQ(out, "cumulus: --limit must be a whole number from 1 to 1000000000, got '" +
                       std::string(limit) + "'; run 'cumulus jobs --help' for usage\n");
  }
  // Without the cluster's token nothing is done, and it says so in one line.
  EXPECT_NE(Cli({"jobs", "--address", address_, "--token-file", "/dev/null"}, &out), 0) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
}

}  // namespace
}  // namespace cumulus
