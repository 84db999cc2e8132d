#include "runtime/node/job_programs.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "runtime/base/file_write.h"
#include "runtime/base/logging.h"

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
  failed_.erase(job);  // (a lookup that failed may be answered now)
  return true;
}

const std::string* JobProgramCache::Record(const JobId& job) const {
  auto it = records_.find(job);
  return it == records_.end() ? nullptr : &it->second;
}

Result<const JobProgram*> JobProgramCache::Get(const JobId& job, TimePoint now) {
  auto cached = programs_.find(job);
  if (cached != programs_.end()) {
    index_.Touch(cached->second.hash, now);
    return &cached->second;
  }
  if (fetching_.count(job)) return nullptr;
  auto failed = failed_.find(job);
  if (failed != failed_.end()) {
    if (failed->second.until > now) return failed->second.status;
    failed_.erase(failed);
  }
  StartFetch(job);
  // (A record that cannot be decoded fails the fetch at once.)
  failed = failed_.find(job);
  if (failed != failed_.end()) return failed->second.status;
  return nullptr;
}

void JobProgramCache::StartFetch(const JobId& job) {
  uint64_t fetch = next_fetch_++;
  fetching_[job] = fetch;
  // Told by the driver or the node that forwarded its work; else from the head.
  auto known = records_.find(job);
  if (known != records_.end()) return Pull(job, fetch, known->second);
  lookup_(job, [this, job, fetch](Result<std::string> raw) {
    auto it = fetching_.find(job);
    if (it == fetching_.end() || it->second != fetch) return;  // forgotten meanwhile
    if (!raw.ok() && raw.status().code() == StatusCode::kNotFound) {
      return Fetched(job, fetch,
                     Status::NotFound("job " + job.Hex() + " is not registered with the head (" +
                                      raw.status().message() + ")"));
    }
    if (!raw.ok()) {
      return Fetched(job, fetch,
                     Status(raw.status().code(), "cannot ask the head where job " + job.Hex() +
                                                     "'s program is: " + raw.status().message()));
    }
    auto record = records_.emplace(job, std::move(*raw)).first;
    Pull(job, fetch, record->second);
  });
}

namespace {

// Pulls object `id` from `from` straight into the file `path` (mode `mode`), not through this
// node's object store: a program may be larger than the store's memory tier. The bytes go into a
// temporary file next to it, its blocks reserved first (a full disk is an error, not a fault on
// a mapped page), renamed into place once complete; on any failure it is removed.
Status PullToFile(const HostPort& from, const std::string& token, const ObjectId& id,
                  const std::string& path, mode_t mode) {
  std::string name = path + ".XXXXXX.tmp";
  std::vector<char> tmp(name.begin(), name.end());
  tmp.push_back('\0');
  int fd = -1;
  void* map = nullptr;
  uint64_t mapped = 0;
  bool created = false, renamed = false;
  auto unmap = [&] {
    if (map != nullptr) munmap(map, mapped);
    map = nullptr;
    if (fd >= 0) close(fd);
    fd = -1;
  };
  auto error = [&](const std::string& what, int err) {
    return Status::ResourceExhausted("cannot " + what + " " + path + ": " + std::strerror(err));
  };
  PullTarget target;
  target.create = [&](const ObjectId&, uint64_t size) -> Result<MutableBuffer> {
    fd = mkstemps(tmp.data(), 4);
    if (fd < 0) return error("create a file next to", errno);
    created = true;
    if (size > 0) {
      int err = posix_fallocate(fd, 0, static_cast<off_t>(size));
      if (err != 0) return error("make room for", err);
      map = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (map == MAP_FAILED) {
        map = nullptr;
        return error("map", errno);
      }
      mapped = size;
    }
    return MutableBuffer{static_cast<uint8_t*>(map), size, 0};
  };
  target.seal = [&](const ObjectId&) -> Status {
    if (map != nullptr && msync(map, mapped, MS_SYNC) != 0) return error("write", errno);
    if (fchmod(fd, mode) != 0) return error("set the mode of", errno);
    unmap();
    if (rename(tmp.data(), path.c_str()) != 0) return error("rename a file to", errno);
    renamed = true;
    return Status();
  };
  target.abort = [](const ObjectId&) { return Status(); };  // removed below, as any failure
  Status st = PullObject(from, token, id, target);
  if (created && !renamed) {  // any failure after the file was made: nothing is left
    unmap();
    unlink(tmp.data());
  }
  return st;
}

// Writes the program of `record` into WORK_DIR/jobs/HASH/NAME: copied from this node's store if
// it can give it (NotFound, or any other failure to read it there), else pulled from the driver's
// node straight into the file. Off the loop thread. On failure nothing is left in jobs/HASH (a
// temporary file is removed, the directory too if it was made for this fetch).
Result<JobProgram> FetchProgram(const std::string& work_dir, ObjectStore& store,
                                const std::string& token, const JobRecord& record) {
  std::string dir = work_dir + "/jobs/" + record.binary_hash;
  std::string base = record.argv.empty()
                         ? std::string("program")
                         : std::filesystem::path(record.argv[0]).filename().string();
  if (base.empty() || base == "." || base == "..") base = "program";
  std::string path = dir + "/" + base;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    bool made = std::filesystem::create_directories(dir, ec);
    if (ec) return Status::ResourceExhausted("cannot make " + dir + ": " + ec.message());
    auto write = [&]() -> Status {
      CUMULUS_ASSIGN_OR_RETURN(ObjectId obj, ObjectId::FromHex(record.binary_object));
      Status written;
      if (auto bytes = store.Get(obj); bytes.ok()) {
        written = WriteFileAtomically(path, bytes->data(), bytes->size(), 0700);
      } else {
        CUMULUS_ASSIGN_OR_RETURN(HostPort from, ParseHostPort(record.transfer_address));
        written = PullToFile(from, token, obj, path, 0700);
      }
      return written.ok() ? written : written.WithContext("the job's program");
    };
    Status st = write();
    if (!st.ok()) {
      if (made) std::filesystem::remove_all(dir, ec);
      return st;
    }
  }
  JobProgram program;
  program.path = path;
  program.argv = record.argv;
  program.submitted = record.submitted;
  program.hash = record.binary_hash;
  program.size = std::filesystem::file_size(path, ec);
  if (ec) program.size = record.binary_size;
  return program;
}

}  // namespace

void JobProgramCache::Pull(const JobId& job, uint64_t fetch, const std::string& bytes) {
  auto record = DecodeRecord<JobRecord>(bytes);
  if (!record.ok()) return Fetched(job, fetch, record.status());
  hash_of_[job] = record->binary_hash;
  if (index_.Contains(record->binary_hash)) {
    index_.Touch(record->binary_hash, clock_.Now());
  } else if (record->binary_size > index_.max_bytes()) {
    return Fetched(
        job, fetch,
        Status::ResourceExhausted("the job's program (" + std::to_string(record->binary_size) +
                                  " bytes) is larger than this node's program cache (" +
                                  std::to_string(index_.max_bytes()) +
                                  " bytes; cumulus start --program-cache-size)"));
  } else {
    MakeRoom(record->binary_size);
  }
  off_loop_(
      [work_dir = work_dir_, store = store_, token = token_, record = *record] {
        return FetchProgram(work_dir, *store, token, record);
      },
      [this, job, fetch](Result<JobProgram> program) { Fetched(job, fetch, std::move(program)); });
}

void JobProgramCache::Fetched(const JobId& job, uint64_t fetch, Result<JobProgram> program) {
  auto it = fetching_.find(job);
  if (it == fetching_.end() || it->second != fetch) return;  // forgotten meanwhile
  fetching_.erase(it);
  if (program.ok()) {
    index_.Add(program->hash, program->size, clock_.Now());
    programs_[job] = std::move(*program);
    MakeRoom(0);  // (fetches that ran side by side may have overshot)
  } else {
    failed_[job] = {program.status(), clock_.Now() + std::chrono::seconds(1)};
  }
  if (fetched_) fetched_();
}

void JobProgramCache::Forget(const JobId& job) {
  records_.erase(job);
  programs_.erase(job);
  fetching_.erase(job);
  failed_.erase(job);
  if (!running_ || !running_(job)) hash_of_.erase(job);  // (a detached actor's stays in use)
}

bool JobProgramCache::InUse(const std::string& hash) {
  bool used = false;
  for (auto it = hash_of_.begin(); it != hash_of_.end();) {
    const JobId& job = it->first;
    bool live = programs_.count(job) || fetching_.count(job) || records_.count(job) ||
                (running_ && running_(job));
    if (!live) {
      it = hash_of_.erase(it);  // its job ended and its last worker is gone
      continue;
    }
    used = used || it->second == hash;
    ++it;
  }
  return used;
}

void JobProgramCache::MakeRoom(uint64_t incoming) {
  for (auto& hash : index_.Evict(incoming, [this](const std::string& h) { return InUse(h); })) {
    std::error_code ec;
    std::filesystem::remove_all(work_dir_ + "/jobs/" + hash, ec);
    CUMULUS_LOG(INFO) << "node: evicted job program " << hash
                      << " from the program cache (least recently used; " << index_.bytes()
                      << " of " << index_.max_bytes() << " bytes used)";
    if (ec) CUMULUS_LOG(WARN) << "node: cannot remove " << hash << ": " << ec.message();
  }
}

}  // namespace cumulus
