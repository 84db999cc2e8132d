// The command provider against small shell scripts that keep a fake cloud in a directory (one
// file per instance holding its state). The Kubernetes scripts in scripts/providers/kubernetes/
// follow the same contract but need a cluster; they are not run here.
#include "runtime/autoscaler/command_provider.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "runtime/autoscaler/run_program.h"
#include "runtime/base/subprocess.h"
#include "runtime/base/temp_dir.h"

namespace cumulus {
namespace {

using namespace std::chrono_literals;

TimePoint In(Duration d) { return SystemClock::Get().Now() + d; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class CommandProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cloud_ = dir_.path() + "/cloud";
    mkdir(cloud_.c_str(), 0700);
    // launch TYPE COUNT: records its arguments and environment, makes COUNT instances.
    Script("launch.sh", R"(echo "$@" > "$CLOUD/launch-args"
env | grep '^CUMULUS_' | sort > "$CLOUD/launch-env"
i=0
while [ $i -lt "$2" ]; do
  n=$(ls "$CLOUD" | grep -c '^vm-' || true)
  id="vm-$1-$n"
  echo "pending" > "$CLOUD/$id"
  echo "$id"
  i=$((i+1))
done)");
    Script("list.sh", R"(echo "# id state node"
for f in "$CLOUD"/vm-*; do
  [ -e "$f" ] || continue
  id=$(basename "$f")
  echo "$id $(cat "$f") -"
done)");
    Script("terminate.sh", R"(echo terminated > "$CLOUD/$1")");
    setenv("CLOUD", cloud_.c_str(), 1);
  }
  void TearDown() override { unsetenv("CLOUD"); }

  void Script(const std::string& name, const std::string& body) {
    std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << "#!/bin/sh\nset -e\n" << body << "\n";
    chmod(path.c_str(), 0700);
  }
  std::string Path(const std::string& name) { return dir_.path() + "/" + name; }

  CommandProvider Make(double timeout_s = 10) {
    CommandProviderOptions o;
    o.name = "fake";
    o.cluster_name = "lab";
    o.settings.launch = {Path("launch.sh"), "{type}", "{count}", "{head}", "{token_file}"};
    o.settings.list = {Path("list.sh")};
    o.settings.terminate = {Path("terminate.sh"), "{instance_id}"};
    o.settings.timeout_s = timeout_s;
    return CommandProvider(o);
  }

  NodeTypeConfig Type() {
    NodeTypeConfig t;
    t.name = "cpu4";
    t.provider = "fake";
    t.resources = *ResourceSet::Parse("CPU=4");
    t.labels = {{"site", "cloud"}, {"region", "r1"}};
    return t;
  }

  TempDir dir_;
  std::string cloud_;
  LaunchSpec spec_{"10.1.2.3:6380", "/etc/cumulus/token", /*metrics_port=*/-1};
};

TEST_F(CommandProviderTest, LaunchListTerminate) {
  CommandProvider p = Make();
  auto ids = p.Launch(Type(), 2, spec_, In(10s));
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, (std::vector<std::string>{"vm-cpu4-0", "vm-cpu4-1"}));
  // The placeholders and the environment the script got.
  EXPECT_EQ(ReadAll(cloud_ + "/launch-args"), "cpu4 2 10.1.2.3:6380 /etc/cumulus/token\n");
  std::string env = ReadAll(cloud_ + "/launch-env");
  EXPECT_NE(env.find("CUMULUS_LABELS=cumulus.node_type=cpu4,region=r1,site=cloud\n"),
            std::string::npos)
      << env;
  EXPECT_NE(env.find("CUMULUS_RESOURCES=CPU=4,GPU=0\n"), std::string::npos) << env;
  EXPECT_NE(env.find("CUMULUS_CLUSTER=lab\n"), std::string::npos) << env;
  EXPECT_NE(env.find("CUMULUS_METRICS_PORT=\n"), std::string::npos) << env;  // no metrics asked

  auto listed = p.List(In(10s));
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].id, "vm-cpu4-0");
  EXPECT_EQ((*listed)[0].state, InstanceState::kPending);
  EXPECT_EQ((*listed)[0].node_type, "cpu4");  // remembered from the launch
  EXPECT_EQ((*listed)[0].node_id, "");        // "-"

  ASSERT_TRUE(p.Terminate("vm-cpu4-1", In(10s)).ok());
  listed = p.List(In(10s));
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ((*listed)[1].state, InstanceState::kTerminated);
  EXPECT_EQ((*listed)[0].state, InstanceState::kPending);
}

TEST_F(CommandProviderTest, AFailingScriptIsOneLineWithItsStderr) {
  Script("launch.sh", "echo 'quota exceeded for instance type cpu4' >&2\nexit 3");
  CommandProvider p = Make();
  auto ids = p.Launch(Type(), 1, spec_, In(10s));
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), StatusCode::kUnavailable);
  std::string m = ids.status().message();
  EXPECT_NE(m.find("command provider fake: launch ("), std::string::npos) << m;
  EXPECT_NE(m.find("failed (exit 3): quota exceeded for instance type cpu4"), std::string::npos)
      << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST_F(CommandProviderTest, OutputOutsideTheContractIsAnError) {
  Script("launch.sh", "echo 'Created instance i-123 in us-east-1'");
  CommandProvider p = Make();
  auto ids = p.Launch(Type(), 1, spec_, In(10s));
  ASSERT_FALSE(ids.ok());
  EXPECT_NE(ids.status().message().find("not an instance id"), std::string::npos) << ids.status();
  Script("launch.sh", "true");
  ids = p.Launch(Type(), 1, spec_, In(10s));
  ASSERT_FALSE(ids.ok());
  EXPECT_NE(ids.status().message().find("printed no instance id"), std::string::npos);

  Script("list.sh", "echo 'vm-1 running'\necho 'vm-2 booting'");
  auto listed = p.List(In(10s));
  ASSERT_FALSE(listed.ok());
  EXPECT_NE(listed.status().message().find("line 2 of the list program's output ('vm-2 "
                                           "booting') has 'booting' is not an instance state"),
            std::string::npos)
      << listed.status();
}

TEST_F(CommandProviderTest, ATimeoutKillsTheScriptAndItsChildren) {
  // The script starts a child that would outlive it, then hangs.
  Script("list.sh", "sleep 600 &\necho $! > \"$CLOUD/child\"\nsleep 600");
  CommandProvider p = Make(/*timeout_s=*/1);
  auto start = std::chrono::steady_clock::now();
  auto listed = p.List(In(30s));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.status().code(), StatusCode::kTimedOut);
  EXPECT_NE(listed.status().message().find("did not finish within 1 s (killed)"), std::string::npos)
      << listed.status();
  EXPECT_LT(took, 10s);
  int child = std::atoi(ReadAll(cloud_ + "/child").c_str());
  ASSERT_GT(child, 0);
  // The group was SIGKILLed: the child goes too (a zombie until init reaps it counts as gone).
  // SIGKILL is delivered when the child next runs, so wait for that.
  std::string stat;
  bool gone = WaitUntil(
      [&] {
        stat = ReadAll("/proc/" + std::to_string(child) + "/stat");
        return stat.empty() || stat.find(") Z") != std::string::npos;
      },
      10s);
  EXPECT_TRUE(gone) << stat;

  // The call's own deadline wins when it is sooner than timeout_s.
  CommandProvider slow = Make(/*timeout_s=*/60);
  start = std::chrono::steady_clock::now();
  listed = slow.List(In(500ms));
  EXPECT_EQ(listed.status().code(), StatusCode::kTimedOut);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(RunProgram, ReportsExitAndOutput) {
  auto r = RunProgram({"sh", "-c", "echo out; echo err >&2; exit 4"}, In(10s));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 4);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  auto missing = RunProgram({"/nonexistent/program"}, In(10s));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  RunProgramOptions env;
  env.env = {{"CUMULUS_X", "y z"}};
  r = RunProgram({"sh", "-c", "printf %s \"$CUMULUS_X\""}, In(10s), env);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "y z");
}

TEST(FillPlaceholders, ReplacesKnownNamesOnly) {
  EXPECT_EQ(FillPlaceholders("--n={count}/{type}{x}", {{"count", "3"}, {"type", "a"}}),
            "--n=3/a{x}");
  EXPECT_EQ(FillPlaceholders("{", {}), "{");
  EXPECT_TRUE(ValidInstanceId("pod-abc.1"));
  EXPECT_FALSE(ValidInstanceId("a b"));
  EXPECT_FALSE(ValidInstanceId(""));
}

}  // namespace
}  // namespace cumulus
