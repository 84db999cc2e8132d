#include "runtime/node/job_programs.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "runtime/core/messages.h"
#include "runtime/object_store/object_store.h"
#include "runtime/transfer/object_transfer.h"

namespace cumulus {

bool JobProgramCache::Remember(const JobId& job, std::string bytes) {
  auto rec = DecodeRecord<JobRecord>(bytes);
  auto binary = rec.ok() ? ObjectId::FromHex(rec->binary_object) : Result<ObjectId>(rec.status());
  bool hash_ok = rec.ok() && rec->binary_hash.size() == 16 &&
                 rec->binary_hash.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (job.IsNil() || !binary.ok() || binary->Task().Job() != job || !hash_ok) return false;
  records_.emplace(job, std::move(bytes));
  return true;
}

const std::string* JobProgramCache::Record(const JobId& job) const {
  auto it = records_.find(job);
  return it == records_.end() ? nullptr : &it->second;
}

Result<const JobProgram*> JobProgramCache::Get(const JobId& job, TimePoint now,
                                               const RecordLookup& lookup) {
  auto cached = programs_.find(job);
  if (cached != programs_.end()) return &cached->second;
  auto retry = retry_at_.find(job);
  if (retry != retry_at_.end() && retry->second > now) {
    return Status::Unavailable("its program could not be fetched");
  }
  auto fetched = Fetch(job, lookup);
  if (!fetched.ok()) {
    if (fetched.status().code() == StatusCode::kUnavailable) {
      retry_at_[job] = now + std::chrono::seconds(1);  // one try a second per job
    }
    return fetched.status();
  }
  retry_at_.erase(job);
  return &(programs_[job] = std::move(*fetched));
}

Result<JobProgram> JobProgramCache::Fetch(const JobId& job, const RecordLookup& lookup) {
  // Told by the driver or the node that forwarded its work; else from the head.
  auto known = records_.find(job);
  if (known == records_.end()) {
    auto raw = lookup(job);
    if (!raw.ok() && raw.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("job " + job.Hex() + " is not registered with the head (" +
                              raw.status().message() + ")");
    }
    if (!raw.ok()) {
      return Status(raw.status().code(), "cannot ask the head where job " + job.Hex() +
                                             "'s program is: " + raw.status().message());
    }
    known = records_.emplace(job, *raw).first;
  }
  CUMULUS_ASSIGN_OR_RETURN(JobRecord record, DecodeRecord<JobRecord>(known->second));
  std::string dir = work_dir_ + "/jobs";
  std::string base = record.argv.empty()
                         ? std::string("program")
                         : std::filesystem::path(record.argv[0]).filename().string();
  if (base.empty() || base == "." || base == "..") base = "program";
  std::error_code ec;
  std::filesystem::create_directories(dir + "/" + record.binary_hash, ec);
  if (ec) {
    return Status::ResourceExhausted("cannot make " + dir + "/" + record.binary_hash + ": " +
                                     ec.message());
  }
  std::string path = dir + "/" + record.binary_hash + "/" + base;
  if (!std::filesystem::exists(path)) {
    CUMULUS_ASSIGN_OR_RETURN(ObjectId obj, ObjectId::FromHex(record.binary_object));
    bool pulled = false;
    if (!store_->Contains(obj)) {
      CUMULUS_ASSIGN_OR_RETURN(HostPort from, ParseHostPort(record.transfer_address));
      CUMULUS_RETURN_IF_ERROR(PullObject(from, token_, obj, PullInto(*store_)));
      pulled = true;
    }
    {
      CUMULUS_ASSIGN_OR_RETURN(ObjectBuffer bytes, store_->Get(obj));
      std::string tmp = path + ".tmp";
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
      f.close();
      if (!f) return Status::ResourceExhausted("cannot write the job's program to " + tmp);
      chmod(tmp.c_str(), 0700);
      std::filesystem::rename(tmp, path);
    }
    if (pulled) (void)store_->Delete(obj);
  }
  JobProgram program;
  program.path = path;
  program.argv = record.argv;
  program.submitted = record.submitted;
  return program;
}

void JobProgramCache::Forget(const JobId& job) {
  records_.erase(job);
  programs_.erase(job);
  retry_at_.erase(job);
}

}  // namespace cumulus
