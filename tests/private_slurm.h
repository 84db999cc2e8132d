// A private SLURM (Debian slurm-wlm 22.05) for tests: munged, slurmctld and slurmd started by the
// test as root on this machine, with their own ports, socket, spool and state in one directory
// (docs/cluster_file.md, "Testing the slurm provider"). Used by slurm_provider_test (the provider
// alone) and provider_e2e_test (the monitor through `cumulus up` with a slurm node type).
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "cluster_fixture.h"
#include "runtime/autoscaler/run_program.h"

namespace cumulus {
namespace slurm_test {

inline TimePoint In(Duration d) { return SystemClock::Get().Now() + d; }

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string Tail(const std::string& text, size_t n = 600) {
  return text.size() > n ? "..." + text.substr(text.size() - n) : text;
}

// A port nothing listens on now (the kernel's pick).
inline int FreePort() {
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

inline bool ProcessGone(int pid) {
  std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  return stat.empty() || stat.find(") Z") != std::string::npos;
}

// Stops the daemon whose pid file is `pid_file`: SIGTERM, then SIGKILL if it lingers.
inline void StopByPidFile(const std::string& pid_file) {
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

}  // namespace slurm_test
}  // namespace cumulus
