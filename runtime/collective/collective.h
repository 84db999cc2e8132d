// The runtime's side of collective groups: how a member joins (CollectiveGroup::Join), with the
// cluster's address and credentials. Users form groups with cumulus/collective.h.
//
// Each member joins with (group name, generation, world size, rank). Rendezvous goes through the
// head's key-value store (a Gloo rendezvous Store backed by it, and the NCCL unique id), in
// namespace "collective" under key prefix "<scope>/<name>/<generation>/", so a group re-formed
// after a failure (a new generation) never reads the old one's addresses; the node of a job's
// driver deletes the job's entries when the driver goes away. NCCL is used only if every member
// can (each has NCCL, sees a GPU, and a different one). A watchdog fails an operation still
// running past its deadline, and aborts the NCCL communicator.
#pragma once

#include <string>

#include "cumulus/collective_group.h"
#include "runtime/base/clock.h"
#include "runtime/net/tcp.h"

namespace cumulus {

struct CollectiveOptions {
  std::string name;  // the group
  // What distinguishes this run's group from another of the same name and generation (the
  // runtime's joins use the job id). Members of one group share it; a (scope, name, generation)
  // must not be reused, or members meet the old run's rendezvous entries.
  std::string scope;
  uint32_t generation = 0;  // a re-formed group takes a new one
  int world_size = 0;
  int rank = -1;
  HostPort head;  // rendezvous through the head's key-value store
  std::string token;
  std::string bind_host = "127.0.0.1";          // where this member listens for the others
  Duration timeout = std::chrono::seconds(60);  // joining, and every operation
  // NCCL for device buffers: kAuto forms an NCCL communicator when every member can (this build
  // has NCCL, each sees a GPU through CUDA_VISIBLE_DEVICES, and no two share one); kOn fails Join
  // otherwise; kOff never. All members must pass the same setting.
  enum class Nccl { kAuto, kOn, kOff } nccl = Nccl::kAuto;
  int cuda_device = 0;  // the device (of those visible) the NCCL communicator uses
};

// A group's timeout (joining, and every operation): 1 ms to a week. It is added to clocks and
// handed to Gloo and NCCL in milliseconds, so it must be positive and far from overflowing.
Status CheckCollectiveTimeout(Duration timeout);

}  // namespace cumulus
