#include "runtime/cli/local_state.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/head/head_server.h"

namespace cumulus::cli {

namespace fs = std::filesystem;

namespace {
std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}
Status WriteFile(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content << "\n";
    if (!out) return Status::Unavailable("cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status::Unavailable("cannot write " + path + ": " + ec.message());
  return Status();
}
}  // namespace

std::string StateDir() {
  const char* env = std::getenv("CUMULUS_STATE_DIR");
  if (env && *env) return env;
  return "/tmp/cumulus-" + std::to_string(getuid());
}

Status EnsureStateDir() {
  std::error_code ec;
  fs::create_directories(StateDir() + "/pids", ec);
  if (ec) return Status::Unavailable("cannot create " + StateDir() + ": " + ec.message());
  chmod(StateDir().c_str(), 0700);
  return Status();
}

Status RememberCluster(const std::string& address, const std::string& token_file) {
  CUMULUS_RETURN_IF_ERROR(EnsureStateDir());
  CUMULUS_RETURN_IF_ERROR(WriteFile(StateDir() + "/address", address));
  return WriteFile(StateDir() + "/token_file", fs::absolute(token_file).string());
}

Status RememberProcess(int pid, const std::string& role) {
  CUMULUS_RETURN_IF_ERROR(EnsureStateDir());
  return WriteFile(StateDir() + "/pids/" + std::to_string(pid), role);
}

void ForgetProcess(int pid) {
  std::error_code ec;
  fs::remove(StateDir() + "/pids/" + std::to_string(pid), ec);
}

std::vector<StartedProcess> StartedProcesses() {
  std::vector<StartedProcess> out;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(StateDir() + "/pids", ec)) {
    int pid = std::atoi(entry.path().filename().c_str());
    if (pid > 0) out.push_back({pid, ReadFirstLine(entry.path().string())});
  }
  return out;
}

Result<HostPort> ResolveAddress(const std::string& flag) {
  if (!flag.empty()) return ParseHostPort(flag);
  if (const char* env = std::getenv("CUMULUS_ADDRESS"); env && *env) {
    auto hp = ParseHostPort(env);
    if (!hp.ok()) return Status::InvalidArgument("CUMULUS_ADDRESS: " + hp.status().message());
    return hp;
  }
  std::string remembered = ReadFirstLine(StateDir() + "/address");
  if (!remembered.empty()) return ParseHostPort(remembered);
  return Status::InvalidArgument(
      "no cluster address: pass --address HOST:PORT or set CUMULUS_ADDRESS (no cluster was started "
      "on this machine)");
}

Result<std::string> ResolveToken(const std::string& token_file_flag) {
  if (!token_file_flag.empty()) return LoadToken(token_file_flag);
  if (const char* env = std::getenv("CUMULUS_TOKEN"); env && *env) return std::string(env);
  std::string remembered = ReadFirstLine(StateDir() + "/token_file");
  if (!remembered.empty()) return LoadToken(remembered);
  return Status::Unauthenticated(
      "no cluster token: pass --token-file FILE or set CUMULUS_TOKEN (the head prints where its "
      "token file is)");
}

}  // namespace cumulus::cli
