#include "runtime/cli/local_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "runtime/base/numeric.h"
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
// Writes through a fresh temporary file (O_EXCL|O_NOFOLLOW: never through a planted link), then
// renames it into place.
Status WriteFile(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  unlink(tmp.c_str());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Unavailable("cannot write " + tmp + ": " + std::strerror(errno));
  std::string line = content + "\n";
  bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return Status::Unavailable("cannot write " + path);
  }
  return Status();
}
}  // namespace

std::string StateDir() {
  const char* env = std::getenv("CUMULUS_STATE_DIR");
  if (env && *env) return env;
  return "/tmp/cumulus-" + std::to_string(getuid());
}

Status EnsurePrivateDir(const std::string& dir) {
  std::error_code ec;
  fs::path parent = fs::path(dir).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::InvalidArgument("cannot create " + dir + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0)
    return Status::InvalidArgument("cannot inspect " + dir + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return Status::InvalidArgument(dir + " is not a directory (a symlink or a file?)");
  if (st.st_uid != getuid()) {
    return Status::InvalidArgument(dir +
                                   " belongs to another user; it could hold planted credentials. "
                                   "Choose another directory");
  }
  if ((st.st_mode & 077) != 0 && chmod(dir.c_str(), 0700) != 0) {
    return Status::InvalidArgument("cannot make " + dir +
                                   " private (chmod 700): " + std::strerror(errno));
  }
  return Status();
}

Status EnsureStateDir() {
  CUMULUS_RETURN_IF_ERROR(
      EnsurePrivateDir(StateDir()).WithContext("state dir (set CUMULUS_STATE_DIR to move it)"));
  return EnsurePrivateDir(StateDir() + "/pids");
}

Status RememberCluster(const std::string& address, const std::string& token_file) {
  CUMULUS_RETURN_IF_ERROR(EnsureStateDir());
  CUMULUS_RETURN_IF_ERROR(WriteFile(StateDir() + "/address", address));
  if (token_file.empty()) {
    unlink((StateDir() + "/token_file").c_str());
    return Status();
  }
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
  if (!EnsureStateDir().ok()) return out;  // never act on state another user could have planted
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(StateDir() + "/pids", ec)) {
    auto pid = ParseInteger("a pid file's name", entry.path().filename().string(), {1, INT32_MAX});
    if (pid.ok()) out.push_back({static_cast<int>(*pid), ReadFirstLine(entry.path().string())});
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
  std::string remembered = EnsureStateDir().ok() ? ReadFirstLine(StateDir() + "/address") : "";
  if (!remembered.empty()) return ParseHostPort(remembered);
  return Status::InvalidArgument(
      "no cluster address: pass --address HOST:PORT or set CUMULUS_ADDRESS (no cluster was started "
      "on this machine)");
}

Result<std::string> ResolveToken(const std::string& token_file_flag) {
  if (!token_file_flag.empty()) return LoadToken(token_file_flag);
  if (const char* env = std::getenv("CUMULUS_TOKEN"); env && *env) return std::string(env);
  std::string remembered = EnsureStateDir().ok() ? ReadFirstLine(StateDir() + "/token_file") : "";
  if (!remembered.empty()) return LoadToken(remembered);
  return Status::Unauthenticated(
      "no cluster token: pass --token-file FILE or set CUMULUS_TOKEN (the head prints where its "
      "token file is)");
}

}  // namespace cumulus::cli
