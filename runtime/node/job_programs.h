// JobProgramCache: where each job's program is on this node. A job's driver (or the node that
// forwards its first task here) tells the node the job's record: the object holding the
// program's bytes and where to pull it from. The first worker of the job fetches it once into
// WORK_DIR/jobs/HASH/NAME (copied from this node's store if it holds it, else pulled from the
// driver's node straight into the file, so a program may be larger than the store's memory
// tier); later workers start from that file. A job whose program cannot be
// fetched is tried again at most once a second.
//
// The cache is bounded (max_bytes, `cumulus start --program-cache-size`): before a program is
// fetched, and after, the least recently used programs are removed from jobs/ until it fits,
// skipping programs in use (of a job known here, being fetched, or of a job with a live worker on
// this node, e.g. a detached actor's). A program larger than the whole bound is refused. The file
// is written to a temporary file renamed into place: a failed write leaves nothing behind.
//
// A fetch never blocks the loop: the record is asked of the head through `lookup`, and the
// program is pulled and written by `off_loop` on another thread (SetFetchers); `fetched` is
// called on the loop thread when a fetch ends, so that the tasks waiting for it are scheduled
// again. Not thread-safe: the node's event loop owns it.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/node/program_cache_index.h"

namespace cumulus {

class ObjectStore;

struct JobProgram {
  std::string path;               // the executable on this node
  std::vector<std::string> argv;  // as the driver was started
  bool submitted = false;         // run by `cumulus submit`: workers write to the job's log
  std::string hash;               // the program's hash (its directory under jobs/)
  uint64_t size = 0;              // bytes
};

class JobProgramCache {
 public:
  // Asks the head for a job's serialized JobRecord (NotFound if it has none); `done` runs on the
  // loop thread.
  using RecordLookup =
      std::function<void(const JobId&, std::function<void(Result<std::string>)> done)>;
  // Runs `work` on another thread, then `done` with its result on the loop thread (not at all
  // if the node stops first).
  using OffLoop = std::function<void(std::function<Result<JobProgram>()> work,
                                     std::function<void(Result<JobProgram>)> done)>;

  JobProgramCache(std::string work_dir, ObjectStore* store, std::string token, Clock& clock,
                  uint64_t max_bytes = kDefaultProgramCacheBytes)
      : work_dir_(std::move(work_dir)),
        store_(store),
        token_(std::move(token)),
        clock_(clock),
        index_(max_bytes) {}

  // REQUIRES: called once, before Get.
  void SetFetchers(RecordLookup lookup, OffLoop off_loop, std::function<void()> fetched) {
    lookup_ = std::move(lookup);
    off_loop_ = std::move(off_loop);
    fetched_ = std::move(fetched);
  }

  // Whether a job has a live worker on this node (its program must stay). Optional.
  void SetJobRunning(std::function<bool(const JobId&)> running) { running_ = std::move(running); }

  // Takes a job's serialized JobRecord. False (and nothing kept) if it is malformed or names a
  // program of another job.
  bool Remember(const JobId& job, std::string record);
  // The serialized record of `job` known here, or nullptr.
  const std::string* Record(const JobId& job) const;

  // The job's program; nullptr (and OK) while it is being fetched (the fetch is started now if
  // it is not here yet). The error of a fetch that failed is the answer for a second after it
  // (Unavailable: it cannot be fetched now; NotFound: the head knows no such job), then the
  // next call fetches again.
  Result<const JobProgram*> Get(const JobId& job, TimePoint now);

  // The job ended: forget its record and program path (the file stays for later jobs of the
  // same program until it is evicted); a fetch under way for it is ignored when it ends.
  void Forget(const JobId& job);

  // Bytes of the programs in jobs/, and the bound.
  uint64_t bytes() const { return index_.bytes(); }
  uint64_t max_bytes() const { return index_.max_bytes(); }

 private:
  struct Failure {
    Status status;
    TimePoint until;  // the answer until then
  };

  void StartFetch(const JobId& job);
  void Pull(const JobId& job, uint64_t fetch, const std::string& record);
  void Fetched(const JobId& job, uint64_t fetch, Result<JobProgram> program);
  bool InUse(const std::string& hash);
  // Evicts programs until `incoming` more bytes fit (or only programs in use are left).
  void MakeRoom(uint64_t incoming);

  std::string work_dir_;
  ObjectStore* store_;
  std::string token_;
  Clock& clock_;
  RecordLookup lookup_;
  OffLoop off_loop_;
  std::function<void()> fetched_;
  std::map<JobId, std::string> records_;  // serialized JobRecord of jobs known here
  std::map<JobId, JobProgram> programs_;
  std::map<JobId, uint64_t> fetching_;  // fetches under way, by number
  uint64_t next_fetch_ = 1;
  std::map<JobId, Failure> failed_;  // jobs whose program could not be fetched
  std::function<bool(const JobId&)> running_;
  ProgramCacheIndex index_;
  std::map<JobId, std::string> hash_of_;  // program hash of jobs known, fetching or running here
};

}  // namespace cumulus
