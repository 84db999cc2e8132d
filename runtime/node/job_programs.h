// JobProgramCache: where each job's program is on this node. A job's driver (or the node that
// forwards its first task here) tells the node the job's record: the object holding the
// program's bytes and where to pull it from. The first worker of the job fetches it once into
// WORK_DIR/jobs/HASH/NAME; later workers start from that file. A job whose program cannot be
// fetched now is tried again at most once a second.
//
// Not thread-safe: the node's event loop owns it.
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

namespace cumulus {

class ObjectStore;

struct JobProgram {
  std::string path;               // the executable on this node
  std::vector<std::string> argv;  // as the driver was started
  bool submitted = false;         // run by `cumulus submit`: workers write to the job's log
};

class JobProgramCache {
 public:
  // Asks the head for a job's serialized JobRecord (NotFound if it has none).
  using RecordLookup = std::function<Result<std::string>(const JobId&)>;

  JobProgramCache(std::string work_dir, ObjectStore* store, std::string token)
      : work_dir_(std::move(work_dir)), store_(store), token_(std::move(token)) {}

  // Takes a job's serialized JobRecord. False (and nothing kept) if it is malformed or names a
  // program of another job.
  bool Remember(const JobId& job, std::string record);
  // The serialized record of `job` known here, or nullptr.
  const std::string* Record(const JobId& job) const;

  // The job's program, fetched now if it is not here yet (this blocks for the fetch).
  // Unavailable when it cannot be fetched now (asked again at most once a second per job).
  Result<const JobProgram*> Get(const JobId& job, TimePoint now, const RecordLookup& lookup);

  // The job ended: forget its record and program path (the file stays for later jobs of the
  // same program).
  void Forget(const JobId& job);

 private:
  Result<JobProgram> Fetch(const JobId& job, const RecordLookup& lookup);

  std::string work_dir_;
  ObjectStore* store_;
  std::string token_;
  std::map<JobId, std::string> records_;  // serialized JobRecord of jobs known here
  std::map<JobId, JobProgram> programs_;
  std::map<JobId, TimePoint> retry_at_;  // jobs whose program could not be fetched
};

}  // namespace cumulus
