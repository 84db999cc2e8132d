// The slurm provider against a real SLURM (Debian slurm-wlm 22.05) started by the test on this
// machine: a private munged, slurmctld and slurmd with their own ports, socket, spool and state
// in the test's directory (docs/cluster_file.md, "Testing the slurm provider"). A node launched as
// a SLURM job joins a real head (ClusterTest) and leaves it when the job is cancelled.
//
// Where SLURM cannot run here (not root, a program missing, a daemon that does not come up) the
// test is SKIPPED with the reason, never passed silently.
#include "runtime/autoscaler/slurm_provider.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>

#include "cluster_fixture.h"
#include "runtime/autoscaler/run_program.h"

namespace cumulus {
namespace {

TimePoint In(Duration d) { return SystemClock::Get().Now() + d; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Tail(const std::string& text, size_t n = 600) {
  return text.size() > n ? "..." + text.substr(text.size() - n) : text;
}

// A port nothing listens on now (the kernel's pick).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

bool ProcessGone(int pid) {
  std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  return stat.empty() || stat.find(") Z") != std::string::npos;
}

// Stops the daemon whose pid file is `pid_file`: SIGTERM, then SIGKILL if it lingers.
void StopByPidFile(const std::string& pid_file) {
  int pid = std::atoi(ReadAll(pid_file).c_str());
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  if (!WaitUntil([&] { return ProcessGone(pid); }, 10s)) kill(pid, SIGKILL);
}

// munged + slurmctld + slurmd, private to one directory.
class PrivateSlurm {
 public:
  explicit PrivateSlurm(std::string dir) : dir_(std::move(dir)) {}
  ~PrivateSlurm() {
    for (const char* d : {"slurmd", "slurmctld", "munged"}) StopByPidFile(dir_ + "/" + d + ".pid");
  }

  const std::string& conf() const { return conf_; }

  // Starts the daemons; "" once the node is idle, else why SLURM cannot run here.
  std::string Start() {
    if (geteuid() != 0) return "the SLURM test runs SLURM as root (SlurmUser=root); not root here";
    for (const char* program : {"/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd",
                                "/usr/bin/sbatch", "/usr/bin/squeue", "/usr/bin/scancel"}) {
      if (access(program, X_OK) != 0) {
        return std::string(program) + " is missing (install slurm-wlm and munge)";
      }
    }
    for (const char* sub : {"/spool", "/state", "/log"}) mkdir((dir_ + sub).c_str(), 0700);
    // munge: a fresh key, its own socket.
    {
      std::random_device rd;
      std::ofstream key(dir_ + "/munge.key", std::ios::binary);
      for (int i = 0; i < 1024; ++i) key.put(static_cast<char>(rd() & 0xff));
    }
    chmod((dir_ + "/munge.key").c_str(), 0600);
    std::string socket = dir_ + "/munge.sock";
    auto munged =
        RunProgram({"/usr/sbin/munged", "--key-file=" + dir_ + "/munge.key", "--socket=" + socket,
                    "--pid-file=" + dir_ + "/munged.pid", "--seed-file=" + dir_ + "/munge.seed",
                    "--log-file=" + dir_ + "/log/munged.log", "--force"},
                   In(30s));
    if (!munged.ok() || !munged->ok()) {
      return "munged did not start: " +
             (munged.ok() ? Tail(munged->err) : munged.status().message());
    }
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    std::string name(host);
    name = name.substr(0, name.find('.'));
    int ctld_port = FreePort(), slurmd_port = FreePort();
    while (slurmd_port == ctld_port) slurmd_port = FreePort();
    conf_ = dir_ + "/slurm.conf";
    std::ofstream(conf_)
        << "ClusterName=cumulustest\n"
        << "SlurmctldHost=" << name << "(127.0.0.1)\n"
        << "SlurmctldPort=" << ctld_port << "\nSlurmdPort=" << slurmd_port
        << "\nAuthType=auth/munge\nAuthInfo=socket=" << socket
        << "\nCredType=cred/munge\nSlurmUser=root\nSlurmdUser=root\n"
        << "StateSaveLocation=" << dir_ << "/state\n"
        << "SlurmdSpoolDir=" << dir_ << "/spool\n"
        << "SlurmctldPidFile=" << dir_ << "/slurmctld.pid\n"
        << "SlurmdPidFile=" << dir_ << "/slurmd.pid\n"
        << "SlurmctldLogFile=" << dir_ << "/log/slurmctld.log\n"
        << "SlurmdLogFile=" << dir_ << "/log/slurmd.log\n"
        << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
        << "SchedulerType=sched/builtin\nSelectType=select/cons_tres\n"
        << "SelectTypeParameters=CR_CPU\nReturnToService=2\nKillWait=5\n"
        << "MinJobAge=300\nMpiDefault=none\nJobAcctGatherType=jobacct_gather/none\n"
        << "AccountingStorageType=accounting_storage/none\n"
        << "NodeName=" << name << " NodeHostname=" << name
        << " NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 State=UNKNOWN\n"
        << "PartitionName=debug Nodes=" << name
        << " Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4\n";
    RunProgramOptions env;
    env.env = {{"SLURM_CONF", conf_}};
    for (const char* daemon : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd"}) {
      auto r = RunProgram({daemon, "-c"}, In(30s), env);
      if (!r.ok() || !r->ok()) {
        return std::string(daemon) +
               " did not start: " + (r.ok() ? Tail(r->err) : r.status().message()) +
               "; log: " + Logs();
      }
    }
    // Ready once the node is idle.
    std::string state;
    bool idle = WaitUntil(
        [&] {
          auto r = RunProgram({"sinfo", "-h", "-o", "%T"}, In(10s), env);
          state = r.ok() ? r->out + r->err : r.status().message();
          return r.ok() && r->out.rfind("idle", 0) == 0;
        },
        30s);
    if (!idle) return "the SLURM node did not become idle (sinfo: " + state + "); log: " + Logs();
    return "";
  }

  std::string Logs() {
    return Tail(ReadAll(dir_ + "/log/slurmctld.log"), 300) + " | " +
           Tail(ReadAll(dir_ + "/log/slurmd.log"), 300);
  }

 private:
  std::string dir_;
  std::string conf_;
};

class SlurmProviderTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    slurm_ = std::make_unique<PrivateSlurm>(dir_.path());
    std::string why = slurm_->Start();
    if (!why.empty()) GTEST_SKIP() << "SLURM cannot run here: " << why;
    SlurmProviderOptions o;
    o.name = "hpc";
    o.cluster_name = "test";
    o.cumulus_binary = kCumulus;
    o.settings.output_dir = dir_.path() + "/jobs";
    o.settings.node_data_dir = dir_.path();
    o.settings.object_store_memory = "32M";
    o.settings.slurm_conf = slurm_->conf();
    o.settings.timeout_s = 30;
    auto p = SlurmProvider::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    provider_ = std::move(*p);
  }

  void TearDown() override {
    if (provider_) {
      auto listed = provider_->List(In(30s));
      if (listed.ok()) {
        for (auto& in : *listed) (void)provider_->Terminate(in.id, In(30s));
      }
      // A node daemon a job started and SLURM did not stop: by the pid it printed.
      WaitUntil(
          [&] {
            auto l = provider_->List(In(30s));
            if (!l.ok()) return true;
            for (auto& in : *l) {
              if (in.state == InstanceState::kRunning) return false;
            }
            return true;
          },
          20s);
      for (auto& entry : std::filesystem::directory_iterator(dir_.path() + "/jobs")) {
        std::string pid = Field(ReadAll(entry.path().string()), "pid");
        if (!pid.empty() && std::atoi(pid.c_str()) > 0) kill(std::atoi(pid.c_str()), SIGKILL);
      }
    }
    provider_.reset();
    slurm_.reset();
  }

  NodeTypeConfig Type() {
    NodeTypeConfig t;
    t.name = "hpc-cpu";
    t.provider = "hpc";
    t.resources = *ResourceSet::Parse("CPU=1,custom_slurm=1");
    t.labels = {{"site", "cloud"}, {"region", "slurm"}};
    return t;
  }

  Instance Get(const std::string& id) {
    auto listed = provider_->List(In(30s));
    EXPECT_TRUE(listed.ok()) << listed.status();
    if (listed.ok()) {
      for (auto& in : *listed) {
        if (in.id == id) return in;
      }
    }
    Instance none;
    none.state = InstanceState::kFailed;
    none.detail = "not listed";
    return none;
  }

  std::unique_ptr<PrivateSlurm> slurm_;
  std::unique_ptr<SlurmProvider> provider_;
};

TEST_F(SlurmProviderTest, AJobsNodeJoinsTheHeadAndLeavesWhenCancelled) {
  auto head = StartHead({});
  auto ids = provider_->Launch(Type(), 1, {address_, token_file_}, In(30s));
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_EQ(ids->size(), 1u);
  std::string id = (*ids)[0];

  // The job runs and its node registers with the head (node id read from the job's output).
  Instance in;
  bool running = WaitUntil(
      [&] {
        in = Get(id);
        return in.state == InstanceState::kRunning && !in.node_id.empty();
      },
      60s);
  ASSERT_TRUE(running) << "state " << InstanceStateName(in.state) << " (" << in.detail
                       << "); job output: " << ReadAll(dir_.path() + "/jobs/" + id + ".out")
                       << "; slurm: " << slurm_->Logs();
  EXPECT_EQ(in.node_type, "hpc-cpu");
  ASSERT_TRUE(WaitForState(in.node_id, NodeState::kAlive, 10s));
  ClusterView v = View();
  const NodeRecord* node = Find(v, in.node_id);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->total.Get("custom_slurm"), 1);
  EXPECT_EQ(node->labels.at(kInstanceIdLabel), id);
  EXPECT_EQ(node->labels.at(kNodeTypeLabel), "hpc-cpu");
  EXPECT_EQ(node->labels.at("region"), "slurm");

  // scancel: SLURM's SIGTERM reaches the daemon, which leaves the cluster on purpose.
  ASSERT_TRUE(provider_->Terminate(id, In(30s)).ok());
  ASSERT_TRUE(WaitForState(in.node_id, NodeState::kDead, 30s)) << slurm_->Logs();
  v = View();
  node = Find(v, in.node_id);
  ASSERT_NE(node, nullptr);
  EXPECT_TRUE(node->left) << node->death_reason;
  bool terminated = WaitUntil([&] { return Get(id).state == InstanceState::kTerminated; }, 30s);
  EXPECT_TRUE(terminated) << Get(id).detail;
  // Terminating a finished job again is fine.
  EXPECT_TRUE(provider_->Terminate(id, In(30s)).ok());
}

TEST_F(SlurmProviderTest, SbatchErrorsComeBackAsOneLine) {
  auto head = StartHead({});
  SlurmProviderOptions o;
  o.name = "hpc";
  o.cluster_name = "test";
  o.cumulus_binary = kCumulus;
  o.settings.output_dir = dir_.path() + "/jobs";
  o.settings.slurm_conf = slurm_->conf();
  o.settings.partition = "no-such-partition";
  auto p = SlurmProvider::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  auto ids = (*p)->Launch(Type(), 1, {address_, token_file_}, In(30s));
  ASSERT_FALSE(ids.ok());
  std::string m = ids.status().message();
  EXPECT_NE(m.find("slurm provider hpc: sbatch"), std::string::npos) << m;
  EXPECT_NE(m.find("invalid partition"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

}  // namespace
}  // namespace cumulus
