// What `cumulus start` remembers on this machine, so that `status` works without --address and
// `stop` knows what to stop. Lives in $CUMULUS_STATE_DIR, default /tmp/cumulus-<uid>, mode 0700.
//
//   address      the head address last started or joined
//   token_file   the path of that cluster's token file
//   pids/<pid>   one per process `cumulus start` left running: "head" or "node"
#pragma once

#include <string>
#include <vector>

#include "cumulus/status.h"
#include "runtime/net/tcp.h"

namespace cumulus::cli {

std::string StateDir();
// Creates the state dir 0700, or checks that the existing one is a directory (not a symlink) owned
// by this user and private; refuses it otherwise, so another user cannot plant or read state.
Status EnsureStateDir();
// The same check for any directory that holds credentials (a head's data dir).
Status EnsurePrivateDir(const std::string& dir);
// `token_file` may be empty (the token came from CUMULUS_TOKEN): only the address is remembered.
Status RememberCluster(const std::string& address, const std::string& token_file);
Status RememberProcess(int pid, const std::string& role);
void ForgetProcess(int pid);
struct StartedProcess {
  int pid;
  std::string role;
};
std::vector<StartedProcess> StartedProcesses();

// The head to talk to: --address, else $CUMULUS_ADDRESS, else the remembered one.
Result<HostPort> ResolveAddress(const std::string& flag);
// The cluster token: --token-file, else $CUMULUS_TOKEN, else the remembered token file.
Result<std::string> ResolveToken(const std::string& token_file_flag);

}  // namespace cumulus::cli
