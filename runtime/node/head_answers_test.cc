// The node's units wait for the head's answers without blocking: a fake NodeContext holds each
// request until the test answers it, as the router's head thread and EventLoop::Post would.
#include <gtest/gtest.h>

#include <deque>

#include "runtime/core/messages.h"
#include "runtime/core/records.h"
#include "runtime/head/node_codec.h"
#include "runtime/node/group_coordinator.h"
#include "runtime/node/job_programs.h"
#include "scheduler/bundle_table.h"

namespace cumulus {
namespace {

struct HeadRequest {
  std::string op;  // put, get, delete
  std::string ns;
  std::string key;
  std::function<void(Result<std::string>)> done;
};

class FakeNode : public NodeContext {
 public:
  FakeNode() : id_(NodeId::FromRandom()) {}

  const NodeId& node_id() const override { return id_; }
  ClusterSnapshot Snapshot(TimePoint, bool) override {
    ClusterSnapshot s;
    s.local_node = id_;
    NodeView self;
    self.id = id_;
    self.total = *ResourceSet::Parse("CPU=4");
    self.available = self.total;
    s.nodes.push_back(self);
    return s;
  }
  bool RefreshView(TimePoint, bool) override { return false; }
  Status ReserveHere(const PlacementGroupId&, const JobId&, uint32_t, const std::vector<uint32_t>&,
                     const std::vector<ResourceSet>&) override {
    return Status();
  }
  void ReleaseHere(const PlacementGroupId& id, uint32_t round) override {
    released.emplace_back(id, round);
  }
  bool SendToNode(const NodeId& node, std::string, TimePoint, bool) override {
    sent_to_nodes.push_back(node);
    return true;
  }
  void SendToConn(uint64_t conn, std::string frame) override {
    replies.emplace_back(conn, std::move(frame));
  }
  void BookView(const NodeId&, const ResourceSet&, bool) override {}
  void ScheduleAgain() override { schedule_again++; }
  void HeadPut(const std::string& ns, const std::string& key, const std::string&,
               std::function<void(Status)> done) override {
    head.push_back({"put", ns, key, [done](Result<std::string> r) { done(r.status()); }});
  }
  void HeadGet(const std::string& ns, const std::string& key,
               std::function<void(Result<std::string>)> done) override {
    head.push_back({"get", ns, key, std::move(done)});
  }
  void HeadDelete(const std::string& ns, const std::string& key,
                  std::function<void(Status)> done) override {
    head.push_back({"delete", ns, key, [done](Result<std::string> r) { done(r.status()); }});
  }

  // Answers the oldest request.
  HeadRequest Answer(Result<std::string> answer) {
    HeadRequest r = head.front();
    head.pop_front();
    r.done(std::move(answer));
    return r;
  }

  NodeId id_;
  std::deque<HeadRequest> head;
  std::vector<std::pair<uint64_t, std::string>> replies;
  std::vector<std::pair<PlacementGroupId, uint32_t>> released;
  std::vector<NodeId> sent_to_nodes;
  int schedule_again = 0;
};

void CreateGroup(GroupCoordinator& groups, uint64_t origin, const PlacementGroupId& id,
                 const JobId& job) {
  capnp::MallocMessageBuilder message;
  auto req = message.initRoot<proto::GroupRequest>();
  req.setGroupId(DataOf(id));
  req.setJobId(DataOf(job));
  auto b = req.initBundles(1);
  ResourceSet cpu = *ResourceSet::Parse("CPU=1");
  EncodeResources(cpu, b[0].initResources(static_cast<unsigned>(cpu.units().size())));
  groups.Create(origin, job, req.asReader());
}

TEST(GroupCoordinatorTest, TheDriverIsAnsweredOnceTheGroupIsRecorded) {
  FakeNode node;
  FakeClock clock;
  GroupCoordinator groups(node, clock);
  PlacementGroupId id = PlacementGroupId::FromRandom();
  CreateGroup(groups, 7, id, JobId::FromRandom());
  DemandList pending;
  groups.Schedule(clock.Now(), pending);

  ASSERT_EQ(node.head.size(), 1u);
  EXPECT_EQ(node.head.front().op, "put");
  EXPECT_EQ(node.head.front().key, id.Hex());
  EXPECT_TRUE(node.replies.empty());  // not before the head has answered
  EXPECT_EQ(groups.Locate(id).status().code(), StatusCode::kUnavailable);

  node.Answer(std::string());
  ASSERT_EQ(node.replies.size(), 1u);
  EXPECT_EQ(node.replies[0].first, 7u);
  EXPECT_EQ(node.replies[0].second, GroupReplyFrame(id, Status(), {node.node_id()}, 0));
  ASSERT_TRUE(groups.Locate(id).ok());
}

TEST(GroupCoordinatorTest, AGroupRemovedWhileItIsRecordedIsReleasedAndItsRecordDeleted) {
  FakeNode node;
  FakeClock clock;
  GroupCoordinator groups(node, clock);
  PlacementGroupId id = PlacementGroupId::FromRandom();
  JobId job = JobId::FromRandom();
  CreateGroup(groups, 7, id, job);
  DemandList pending;
  groups.Schedule(clock.Now(), pending);
  groups.Remove(7, job, id);
  EXPECT_TRUE(node.released.empty());

  node.Answer(std::string());
  ASSERT_EQ(node.released.size(), 1u);
  EXPECT_EQ(node.released[0].second, kAllRounds);
  ASSERT_EQ(node.replies.size(), 1u);
  EXPECT_EQ(node.replies[0].second,
            GroupReplyFrame(id,
                            Status::Cancelled("the placement group was removed before it was "
                                              "reserved"),
                            {}, 0));
  ASSERT_EQ(node.head.size(), 1u);
  EXPECT_EQ(node.head.front().op, "delete");
}

TEST(GroupCoordinatorTest, AnAnswerForAGroupWhoseJobEndedIsIgnored) {
  FakeNode node;
  FakeClock clock;
  GroupCoordinator groups(node, clock);
  PlacementGroupId id = PlacementGroupId::FromRandom();
  JobId job = JobId::FromRandom();
  CreateGroup(groups, 7, id, job);
  DemandList pending;
  groups.Schedule(clock.Now(), pending);
  groups.EndJob(job);
  ASSERT_EQ(node.head.size(), 2u);  // the write, then its delete, in that order
  EXPECT_EQ(node.head.back().op, "delete");
  node.Answer(std::string());
  EXPECT_TRUE(node.replies.empty());
  EXPECT_EQ(groups.Locate(id).status().code(), StatusCode::kUnavailable);  // looked up anew
}

std::string GroupRecordOf(const JobId& job, const std::vector<NodeId>& nodes) {
  GroupRecord r;
  r.job = job.Hex();
  for (auto& n : nodes) r.nodes.push_back(n.Hex());
  return EncodeRecord(r);
}

TEST(GroupCoordinatorTest, AGroupOfAnotherNodeIsLookedUpOnceAndThenKnown) {
  FakeNode node;
  FakeClock clock;
  GroupCoordinator groups(node, clock);
  PlacementGroupId id = PlacementGroupId::FromRandom();
  JobId job = JobId::FromRandom();
  NodeId other = NodeId::FromRandom();
  EXPECT_EQ(groups.Locate(id).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(groups.Locate(id).status().code(), StatusCode::kUnavailable);
  ASSERT_EQ(node.head.size(), 1u);  // one request, however often it is asked
  EXPECT_EQ(node.head.front().op, "get");

  node.Answer(GroupRecordOf(job, {other}));
  EXPECT_EQ(node.schedule_again, 1);
  auto where = groups.Locate(id);
  ASSERT_TRUE(where.ok()) << where.status();
  EXPECT_EQ(where->first, job);
  EXPECT_EQ(where->second, std::vector<NodeId>{other});
  EXPECT_TRUE(node.head.empty());
}

TEST(GroupCoordinatorTest, AGroupTheHeadDoesNotKnowIsNotFoundOnceAnswered) {
  FakeNode node;
  FakeClock clock;
  GroupCoordinator groups(node, clock);
  PlacementGroupId id = PlacementGroupId::FromRandom();
  (void)groups.Locate(id);
  node.Answer(Status::NotFound("no such key"));
  EXPECT_EQ(groups.Locate(id).status().code(), StatusCode::kNotFound);

  // A head that cannot be asked: the task waits, and no pass is asked for (no busy loop).
  (void)groups.Locate(id);
  int passes = node.schedule_again;
  node.Answer(Status::Unavailable("the head cannot be reached"));
  EXPECT_EQ(node.schedule_again, passes);
  EXPECT_EQ(groups.Locate(id).status().code(), StatusCode::kUnavailable);
}

TEST(GroupCoordinatorTest, RemovingAGroupOfAnotherNodeWaitsForWhereItIs) {
  FakeNode node;
  FakeClock clock;
  GroupCoordinator groups(node, clock);
  PlacementGroupId id = PlacementGroupId::FromRandom();
  JobId job = JobId::FromRandom();
  NodeId other = NodeId::FromRandom();
  groups.Remove(3, job, id);
  ASSERT_EQ(node.head.size(), 1u);
  EXPECT_TRUE(node.sent_to_nodes.empty());
  node.Answer(GroupRecordOf(job, {other}));
  EXPECT_EQ(node.sent_to_nodes, std::vector<NodeId>{other});  // its release
  ASSERT_EQ(node.head.size(), 1u);
  EXPECT_EQ(node.head.front().op, "delete");
}

// ---- JobProgramCache ---------------------------------------------------------------------------

struct FakeFetchers {
  std::deque<std::pair<JobId, std::function<void(Result<std::string>)>>> lookups;
  std::deque<std::function<void(Result<JobProgram>)>> pulls;
  int fetched = 0;

  void Install(JobProgramCache& cache) {
    cache.SetFetchers(
        [this](const JobId& job, std::function<void(Result<std::string>)> done) {
          lookups.emplace_back(job, std::move(done));
        },
        [this](std::function<Result<JobProgram>()>, std::function<void(Result<JobProgram>)> done) {
          pulls.push_back(std::move(done));
        },
        [this] { fetched++; });
  }
};

std::string JobRecordOf(const JobId& job) {
  JobRecord r;
  r.binary_object = ObjectId::FromPut(TaskId::ForDriver(job), 1).Hex();
  r.binary_hash = "0123456789abcdef";
  r.transfer_address = "127.0.0.1:1";
  r.argv = {"/bin/prog"};
  return EncodeRecord(r);
}

TEST(JobProgramCacheTest, TasksWaitForTheFetchWhichRunsOnce) {
  FakeClock clock;
  JobProgramCache cache("/tmp", nullptr, "token", clock);
  FakeFetchers f;
  f.Install(cache);
  JobId job = JobId::FromRandom();
  TimePoint now = clock.Now();
  auto first = cache.Get(job, now);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, nullptr);
  auto second = cache.Get(job, now);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, nullptr);
  ASSERT_EQ(f.lookups.size(), 1u);

  f.lookups.front().second(JobRecordOf(job));
  EXPECT_EQ(f.fetched, 0);
  ASSERT_EQ(f.pulls.size(), 1u);  // the record came: its program is pulled off the loop
  JobProgram p;
  p.path = "/tmp/jobs/0123456789abcdef/prog";
  f.pulls.front()(p);
  EXPECT_EQ(f.fetched, 1);
  auto program = cache.Get(job, now);
  ASSERT_TRUE(program.ok());
  ASSERT_NE(*program, nullptr);
  EXPECT_EQ((*program)->path, p.path);
}

TEST(JobProgramCacheTest, AFailedFetchIsTheAnswerForASecond) {
  FakeClock clock;
  JobProgramCache cache("/tmp", nullptr, "token", clock);
  FakeFetchers f;
  f.Install(cache);
  JobId job = JobId::FromRandom();
  TimePoint now = clock.Now();
  (void)cache.Get(job, now);
  f.lookups.front().second(Status::NotFound("no such key"));
  f.lookups.pop_front();
  EXPECT_EQ(f.fetched, 1);
  EXPECT_EQ(cache.Get(job, now).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(f.lookups.empty());
  (void)cache.Get(job, clock.Now() + std::chrono::seconds(2));
  EXPECT_EQ(f.lookups.size(), 1u);  // asked again
}

// The second counts from when the fetch ended (the cache's clock), not from when it was asked.
TEST(JobProgramCacheTest, AFailedFetchIsRememberedForASecondFromItsEnd) {
  FakeClock clock;
  JobProgramCache cache("/tmp", nullptr, "token", clock);
  FakeFetchers f;
  f.Install(cache);
  JobId job = JobId::FromRandom();
  (void)cache.Get(job, clock.Now());
  clock.AdvanceTime(std::chrono::seconds(5));  // the head took its time
  f.lookups.front().second(Status::Unavailable("the head cannot be reached"));
  f.lookups.pop_front();

  clock.AdvanceTime(std::chrono::milliseconds(999));
  EXPECT_EQ(cache.Get(job, clock.Now()).status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(f.lookups.empty());  // not asked again yet

  clock.AdvanceTime(std::chrono::milliseconds(1));
  auto again = cache.Get(job, clock.Now());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, nullptr);       // being fetched again
  EXPECT_EQ(f.lookups.size(), 1u);  // asked again
}

TEST(JobProgramCacheTest, AFetchForAJobThatEndedIsIgnored) {
  FakeClock clock;
  JobProgramCache cache("/tmp", nullptr, "token", clock);
  FakeFetchers f;
  f.Install(cache);
  JobId job = JobId::FromRandom();
  ASSERT_TRUE(cache.Remember(job, JobRecordOf(job)));
  (void)cache.Get(job, clock.Now());
  ASSERT_EQ(f.pulls.size(), 1u);
  EXPECT_TRUE(f.lookups.empty());  // its record was known
  cache.Forget(job);
  f.pulls.front()(JobProgram{});
  EXPECT_EQ(f.fetched, 0);
  EXPECT_EQ(cache.Record(job), nullptr);
}

}  // namespace
}  // namespace cumulus
