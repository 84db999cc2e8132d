// The owner side's units (TaskManager, ActorManager, ReferenceTable) driven without sockets: a
// fake OwnerIo records what they send and connect to.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "runtime/core/messages.h"
#include "runtime/net/frame.h"
#include "runtime/proto/core.capnp.h"
#include "workers/task_manager.h"

namespace cumulus {
namespace {

// An actorLost message as the node reads it.
struct LostReport {
  ActorId actor;
  NodeId node;
  int life = 0;
  std::string cause;
};

// The task id of a frame that holds a submitTask (empty id for other messages); an actorLost
// message goes to `*lost`.
TaskId SubmittedTask(const std::string& frame, std::vector<LostReport>* lost = nullptr) {
  auto words = kj::heapArray<capnp::word>((frame.size() - kFrameHeaderBytes) / 8);
  std::memcpy(words.begin(), frame.data() + kFrameHeaderBytes, words.size() * 8);
  capnp::FlatArrayMessageReader reader(words);
  auto msg = reader.getRoot<proto::CoreMessage>();
  if (msg.isActorLost() && lost) {
    auto l = msg.getActorLost();
    lost->push_back({IdFrom<ActorId>(l.getActorId()), IdFrom<NodeId>(l.getNodeId()),
                     static_cast<int>(l.getLife()), l.getCause()});
  }
  return msg.isSubmitTask() ? IdFrom<TaskId>(msg.getSubmitTask().getTaskId()) : TaskId();
}

class FakeOwnerIo : public OwnerIo {
 public:
  Status SendToNode(std::string frame) override {
    size_t reports = lost.size();
    TaskId task = SubmittedTask(frame, &lost);
    if (lost.size() == reports) to_node.push_back(task);
    return Status();
  }
  void SendToActor(uint64_t conn, std::string frame) override {
    to_actor[conn].push_back(SubmittedTask(frame));
  }
  Status ConnectToActor(const ActorId& actor, int incarnation,
                        const std::string& address) override {
    connects.push_back({actor, incarnation});
    return Status();
  }
  void PublishActorName(const std::string&, const ActorNameRecord&) override {}
  void DeleteLocalCopies(std::vector<ObjectId>) override {}
  void Changed() override {}
  std::string CannotSubmit() const override { return ""; }
  bool stopped() const override { return false; }

  std::vector<TaskId> to_node;   // task ids sent to the node (nil: another message, not lost)
  std::vector<LostReport> lost;  // actorLost messages sent to the node
  std::map<uint64_t, std::vector<TaskId>> to_actor;
  std::vector<std::pair<ActorId, int>> connects;
};

class OwnerTest : public ::testing::Test {
 protected:
  // The node's answer for `task`: an inline value, or `code` with a message.
  void Answer(const TaskId& task, StatusCode code = StatusCode::kOk,
              const std::string& actor_address = "") {
    capnp::MallocMessageBuilder message;
    auto r = message.initRoot<proto::TaskResult>();
    r.setTaskId(DataOf(task));
    r.setCode(static_cast<uint16_t>(code));
    if (code != StatusCode::kOk) {
      r.setMessage("it failed");
    } else {
      auto ret = r.initReturns(1)[0];
      ret.setObjectId(DataOf(ObjectId::FromTaskReturn(task, 1)));
      std::string value = "v";
      ret.setInline(capnp::Data::Reader(reinterpret_cast<const uint8_t*>(value.data()), 1));
    }
    r.setNodeId(DataOf(node_));
    r.setActorAddress(actor_address);
    tasks_.OnResult(r.asReader());
  }
  static internal::ArgData RefArg(const ObjectId& id) {
    internal::ArgData a;
    a.is_ref = true;
    a.ref = id;
    return a;
  }
  internal::CallOptions Retries(int n) {
    internal::CallOptions o;
    o.max_retries = n;
    return o;
  }

  JobId job_ = JobId::FromRandom();
  NodeId node_ = NodeId::FromRandom();
  FakeOwnerIo io_;
  ReferenceTable refs_{100};
  TaskManager tasks_{job_, refs_, io_};
};

TEST_F(OwnerTest, ATaskIsSentOnlyOnceItsArgumentIsReady) {
  ObjectId a = tasks_.SubmitTask("A", {}, {});
  ObjectId b = tasks_.SubmitTask("B", {RefArg(a)}, {});
  ASSERT_EQ(io_.to_node.size(), 1u);
  EXPECT_EQ(io_.to_node[0], a.Task());
  Answer(a.Task());
  ASSERT_EQ(io_.to_node.size(), 2u);
  EXPECT_EQ(io_.to_node[1], b.Task());
  EXPECT_EQ(refs_.Find(a)->state, ObjectEntry::kReady);
}

TEST_F(OwnerTest, AFailedArgumentFailsTheTaskNamingIt) {
  ObjectId a = tasks_.SubmitTask("A", {}, {});
  ObjectId b = tasks_.SubmitTask("B", {RefArg(a)}, {});
  Answer(a.Task(), StatusCode::kInternal);
  EXPECT_EQ(io_.to_node.size(), 1u) << "B is never sent";
  const ObjectEntry* e = refs_.Find(b);
  ASSERT_EQ(e->state, ObjectEntry::kFailed);
  EXPECT_NE(e->error.message().find("argument 0 of B failed"), std::string::npos)
      << e->error.message();
}

TEST_F(OwnerTest, TasksSentToALostNodeFailAndOnesNotSentYetWait) {
  ObjectId a = tasks_.SubmitTask("A", {}, {});
  ObjectId b = tasks_.SubmitTask("B", {RefArg(a)}, {});
  tasks_.NodeLost();
  EXPECT_EQ(refs_.Find(a)->error.code(), StatusCode::kUnavailable);
  EXPECT_EQ(refs_.Find(b)->state, ObjectEntry::kFailed) << "its argument failed";
}

TEST_F(OwnerTest, ActorCallsGoInOrderAndARestartSendsAgainOnlyCallsWithRetries) {
  internal::CallOptions restartable;
  restartable.max_restarts = 1;
  ActorId actor = ActorId::Of(job_);
  ActorManager& actors = tasks_.actors();
  ActorEntry& a = actors.Create(actor, "Counter", "Counter", {}, restartable);
  actors.Start(a, {}, restartable);
  ASSERT_EQ(io_.to_node.size(), 1u) << "the constructor goes to the node";
  ObjectId first = tasks_.SubmitActorCall(actor, "Add", {}, Retries(1));
  ObjectId second = tasks_.SubmitActorCall(actor, "Add", {}, Retries(0));
  EXPECT_TRUE(io_.to_actor.empty()) << "nothing goes out before the actor runs";

  Answer(io_.to_node[0], StatusCode::kOk, "127.0.0.1:1");
  ASSERT_EQ(io_.connects.size(), 1u);
  EXPECT_EQ(io_.connects[0].second, 0) << "its first life";
  actors.Adopt(/*conn=*/7, actor, 0);
  ASSERT_EQ(io_.to_actor[7].size(), 2u);
  EXPECT_EQ(io_.to_actor[7][0], first.Task());
  EXPECT_EQ(io_.to_actor[7][1], second.Task());

  // Its process dies with both calls running: it restarts; the call with a retry goes again.
  actors.ConnectionClosed(7, actor, "closed");
  EXPECT_EQ(refs_.Find(first)->state, ObjectEntry::kPending);
  const ObjectEntry* lost = refs_.Find(second);
  ASSERT_EQ(lost->state, ObjectEntry::kFailed);
  EXPECT_EQ(lost->error.code(), StatusCode::kActorDied);
  EXPECT_NE(lost->error.message().find("no retries left"), std::string::npos);
  ASSERT_EQ(io_.to_node.size(), 2u) << "the constructor again";
  Answer(io_.to_node[1], StatusCode::kOk, "127.0.0.1:2");
  ASSERT_EQ(io_.connects.size(), 2u);
  EXPECT_EQ(io_.connects[1].second, 1);
  EXPECT_FALSE(actors.Adopt(7, actor, 0).keep) << "a connection of its first life is dropped";
  actors.Adopt(8, actor, 1);
  ASSERT_EQ(io_.to_actor[8].size(), 1u);
  EXPECT_EQ(io_.to_actor[8][0], first.Task());

  // Lost again: no restarts left, so the call fails saying so.
  actors.ConnectionClosed(8, actor, "closed");
  EXPECT_EQ(actors.Find(actor)->state, ActorEntry::kDead);
  EXPECT_NE(refs_.Find(first)->error.message().find("no restarts left"), std::string::npos)
      << refs_.Find(first)->error.message();
}

// Each life of an owned actor that is lost is told to the owner's node, which keeps it if the
// head declares the actor's node dead (no node is left to recall it then): the one whose
// connection closed at once, with what the owner saw, and the one lost with its node; an actor
// elsewhere is not reported.
TEST_F(OwnerTest, EachLostLifeOfAnOwnedActorIsToldToTheOwnersNode) {
  ActorManager& actors = tasks_.actors();
  internal::CallOptions once;
  once.max_restarts = 1;
  ActorId crashed = ActorId::Of(job_), alive = ActorId::Of(job_), elsewhere = ActorId::Of(job_);
  for (const ActorId& id : {crashed, alive}) {
    actors.Start(actors.Create(id, "A", "A", {}, id == alive ? once : internal::CallOptions{}), {},
                 {});
    Answer(io_.to_node.back(), StatusCode::kOk, "127.0.0.1:1");  // on node_
  }
  actors.Start(actors.Create(elsewhere, "A", "A", {}, {}), {}, {});
  NodeId other = NodeId::FromRandom();
  std::swap(node_, other);
  Answer(io_.to_node.back(), StatusCode::kOk, "127.0.0.1:2");
  std::swap(node_, other);
  actors.Adopt(1, crashed, 0);
  actors.Adopt(2, alive, 0);
  actors.Adopt(3, elsewhere, 0);

  actors.ConnectionClosed(1, crashed, "closed");  // before the head says why
  ASSERT_EQ(io_.lost.size(), 1u);
  EXPECT_EQ(io_.lost[0].actor, crashed);
  EXPECT_EQ(io_.lost[0].node, node_);
  EXPECT_EQ(io_.lost[0].life, 0);
  EXPECT_EQ(io_.lost[0].cause, "its process closed the connection");
  std::vector<uint64_t> conns = actors.NodeDied(node_);
  EXPECT_EQ(conns, std::vector<uint64_t>{2});
  ASSERT_EQ(io_.lost.size(), 2u) << "the crashed one is told once";
  EXPECT_EQ(io_.lost[1].actor, alive);
  EXPECT_EQ(io_.lost[1].node, node_);
  EXPECT_EQ(io_.lost[1].life, 0);
  EXPECT_EQ(io_.lost[1].cause, "its node " + node_.Hex() + " was declared dead by the head");
  EXPECT_EQ(actors.Find(alive)->state, ActorEntry::kPending) << "it restarts";
  actors.NodeDied(node_);
  EXPECT_EQ(io_.lost.size(), 2u) << "told once";
}

TEST_F(OwnerTest, AnActorKilledWhileItIsBuiltIsKilledOnceItAnswers) {
  ActorId actor = ActorId::Of(job_);
  ActorManager& actors = tasks_.actors();
  actors.Start(actors.Create(actor, "A", "A", {}, {}), {}, {});
  ObjectId call = tasks_.SubmitActorCall(actor, "F", {}, {});
  ASSERT_TRUE(actors.Kill(actor).ok());
  EXPECT_EQ(refs_.Find(call)->error.code(), StatusCode::kActorDied);
  Answer(io_.to_node[0], StatusCode::kOk, "127.0.0.1:1");
  ASSERT_EQ(io_.connects.size(), 1u) << "connected to, to be killed";
  auto adopted = actors.Adopt(9, actor, 0);
  EXPECT_FALSE(adopted.keep);
  EXPECT_FALSE(adopted.last_frame.empty()) << "the kill";
  EXPECT_TRUE(io_.to_actor[9].empty()) << "no call reaches it";
  EXPECT_EQ(actors.Kill(ActorId::Of(job_)).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace cumulus
