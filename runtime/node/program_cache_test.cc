// The node's program cache stays under its bound: least recently used programs go first, never
// one in use; a program write that fails leaves no temporary file behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <deque>
#include <filesystem>
#include <fstream>

#include "runtime/base/clock.h"
#include "runtime/base/file_write.h"
#include "runtime/base/temp_dir.h"
#include "runtime/core/records.h"
#include "runtime/node/job_programs.h"
#include "runtime/node/program_cache_index.h"

namespace cumulus {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> FilesUnder(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file()) out.push_back(it->path().filename().string());
  }
  return out;
}

TEST(ProgramCacheIndexTest, EvictsLeastRecentlyUsedFirstAndSkipsProgramsInUse) {
  FakeClock clock;
  ProgramCacheIndex index(100);
  index.Add("a", 40, clock.Now());
  clock.AdvanceTime(1s);
  index.Add("b", 40, clock.Now());
  clock.AdvanceTime(1s);
  index.Touch("a", clock.Now());  // a is now the most recent: b goes first
  auto none = [](const std::string&) { return false; };
  EXPECT_TRUE(index.Evict(20, none).empty());  // 80 + 20 fits
  EXPECT_EQ(index.Evict(40, none), std::vector<std::string>{"b"});
  EXPECT_EQ(index.bytes(), 40u);

  // In use: skipped; the next least recently used goes instead.
  index.Add("b", 40, clock.Now());
  clock.AdvanceTime(1s);
  index.Add("c", 10, clock.Now());
  auto a_in_use = [](const std::string& h) { return h == "a"; };
  EXPECT_EQ(index.Evict(60, a_in_use), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(index.bytes(), 40u);
  EXPECT_TRUE(index.Contains("a"));

  // All in use: nothing evicted, the bound is exceeded until they are not.
  auto all = [](const std::string&) { return true; };
  EXPECT_TRUE(index.Evict(100, all).empty());
  EXPECT_EQ(index.Evict(100, none), std::vector<std::string>{"a"});
  EXPECT_EQ(index.bytes(), 0u);
}

// A JobProgramCache whose fetches the test answers, writing the program files itself.
class BoundedCacheTest : public ::testing::Test {
 protected:
  BoundedCacheTest() : cache_(dir_.path(), nullptr, "token", clock_, /*max_bytes=*/100) {
    cache_.SetFetchers(
        [](const JobId&, std::function<void(Result<std::string>)> done) {
          done(Status::NotFound("no head here"));
        },
        [this](std::function<Result<JobProgram>()>, std::function<void(Result<JobProgram>)> done) {
          pulls_.push_back(std::move(done));
        },
        [] {});
    cache_.SetJobRunning([this](const JobId& job) { return running_.count(job) > 0; });
  }

  // Job `n`, its program of `size` bytes with hash "000000000000000n".
  JobId Job(int n, uint64_t size) {
    JobId job = JobId::FromInt(static_cast<uint32_t>(n));
    JobRecord r;
    r.binary_object = ObjectId::FromPut(TaskId::ForDriver(job), 1).Hex();
    r.binary_size = size;
    r.binary_hash = Hash(n);
    r.transfer_address = "127.0.0.1:1";
    r.argv = {"/bin/prog"};
    EXPECT_TRUE(cache_.Remember(job, EncodeRecord(r)));
    return job;
  }
  static std::string Hash(int n) {
    std::string h = std::to_string(n);
    return std::string(16 - h.size(), '0') + h;
  }
  // Starts the fetch of `job` and completes it as the off-loop work would.
  void Fetch(const JobId& job, int n, uint64_t size) {
    auto first = cache_.Get(job, clock_.Now());
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_EQ(*first, nullptr);
    ASSERT_EQ(pulls_.size(), 1u);
    std::string dir = dir_.path() + "/jobs/" + Hash(n);
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/prog") << std::string(size, 'x');
    JobProgram p;
    p.path = dir + "/prog";
    p.hash = Hash(n);
    p.size = size;
    auto done = std::move(pulls_.front());
    pulls_.pop_front();
    done(p);
    auto got = cache_.Get(job, clock_.Now());
    ASSERT_TRUE(got.ok() && *got);
  }
  bool Cached(int n) { return std::filesystem::exists(dir_.path() + "/jobs/" + Hash(n)); }

  TempDir dir_;
  FakeClock clock_;
  JobProgramCache cache_;
  std::deque<std::function<void(Result<JobProgram>)>> pulls_;
  std::set<JobId> running_;
};

TEST_F(BoundedCacheTest, ProgramsOfEndedJobsAreEvictedLeastRecentlyUsedFirst) {
  JobId a = Job(1, 40), b = Job(2, 40);
  Fetch(a, 1, 40);
  clock_.AdvanceTime(1s);
  Fetch(b, 2, 40);
  clock_.AdvanceTime(1s);
  ASSERT_TRUE(cache_.Get(a, clock_.Now()).ok());  // a worker of a starts: b's is older now
  cache_.Forget(a);
  cache_.Forget(b);
  JobId c = Job(3, 40);
  Fetch(c, 3, 40);
  EXPECT_TRUE(Cached(1));
  EXPECT_FALSE(Cached(2)) << "the least recently used program stays";
  EXPECT_TRUE(Cached(3));
  EXPECT_EQ(cache_.bytes(), 80u);
  EXPECT_LE(cache_.bytes(), cache_.max_bytes());
}

TEST_F(BoundedCacheTest, AProgramInUseIsNeverEvicted) {
  JobId a = Job(1, 60), b = Job(2, 60);
  Fetch(a, 1, 60);
  running_.insert(a);  // a detached actor of job a outlives it
  cache_.Forget(a);
  Fetch(b, 2, 60);  // over the bound: but a's program is in use, and b's is being fetched
  EXPECT_TRUE(Cached(1));
  EXPECT_TRUE(Cached(2));
  running_.clear();  // a's last worker is gone
  cache_.Forget(b);
  JobId c = Job(3, 60);
  Fetch(c, 3, 60);
  EXPECT_FALSE(Cached(1));
  EXPECT_FALSE(Cached(2));
  EXPECT_TRUE(Cached(3));
  EXPECT_EQ(cache_.bytes(), 60u);
}

TEST_F(BoundedCacheTest, AProgramLargerThanTheBoundIsRefused) {
  JobId a = Job(1, 101);
  auto got = cache_.Get(a, clock_.Now());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(got.status().message().find("--program-cache-size"), std::string::npos);
  EXPECT_TRUE(pulls_.empty());
}

TEST(WriteFileAtomicallyTest, AWriteThatFailsHalfwayLeavesNoTemporaryFile) {
  TempDir dir;
  std::string path = dir.path() + "/prog";
  std::string bytes(1 << 20, 'x');
  // The disk "fills" after 64 KiB: the file size limit fails the write as ENOSPC would.
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit old;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  struct rlimit small = old;
  small.rlim_cur = 64 << 10;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  Status st = WriteFileAtomically(path, bytes.data(), bytes.size(), 0700);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, SIG_DFL);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st;
  EXPECT_TRUE(FilesUnder(dir.path()).empty()) << FilesUnder(dir.path())[0];

  // A directory it cannot write to: nothing either; then a write that works: the file, whole.
  ASSERT_EQ(chmod(dir.path().c_str(), 0500), 0);
  st = WriteFileAtomically(path, bytes.data(), bytes.size(), 0700);
  ASSERT_EQ(chmod(dir.path().c_str(), 0700), 0);
  if (geteuid() != 0) {
    EXPECT_FALSE(st.ok());
  }
  EXPECT_TRUE(FilesUnder(dir.path()).empty() || geteuid() == 0);
  std::filesystem::remove(path);
  ASSERT_TRUE(WriteFileAtomically(path, bytes.data(), bytes.size(), 0700).ok());
  EXPECT_EQ(FilesUnder(dir.path()), std::vector<std::string>{"prog"});
  EXPECT_EQ(std::filesystem::file_size(path), bytes.size());
}

}  // namespace
}  // namespace cumulus
