#include "runtime/node/state_rows.h"

#include "runtime/node/actor_ends.h"

#include <gtest/gtest.h>

#include <capnp/message.h>

#include <cstdio>
#include <set>

namespace cumulus {
namespace {

// Offers rows "id000".."id{n-1}" in a scrambled order, state RUNNING for every tenth.
std::vector<StateRowFields> SelectFrom(const StateQuerySpec& q, int n, bool* more,
                                       uint64_t* matched, int* built) {
  RowSelector s(q);
  *built = 0;
  for (int k = 0; k < n; ++k) {
    int i = (k * 7919) % n;  // a permutation for n not divisible by 7919
    char id[16];
    std::snprintf(id, sizeof(id), "id%03d", i);
    std::string state = i % 10 == 0 ? "RUNNING" : "QUEUED";
    s.Offer(
        id, [&](const std::string& key) { return key == "state" ? state : std::string(); },
        [&] {
          ++*built;
          return StateRowFields{{"task", id}, {"state", state}};
        });
  }
  return s.Take(more, matched);
}

TEST(RowSelectorTest, FiltersEveryRowBeforeTheCapAndKeepsTheSmallestIds) {
  StateQuerySpec q{"tasks", {{"state", "RUNNING"}}, "", 3, false};
  bool more = false;
  uint64_t matched = 0;
  int built = 0;
  auto rows = SelectFrom(q, 1000, &more, &matched, &built);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].at("task"), "id000");
  EXPECT_EQ(rows[1].at("task"), "id010");
  EXPECT_EQ(rows[2].at("task"), "id020");
  EXPECT_TRUE(more);
  EXPECT_EQ(matched, 100u);
  EXPECT_LT(built, 100) << "rows that cannot be kept should not be built";
}

TEST(RowSelectorTest, PagesWithTheCursorSeeEveryRowOnce) {
  std::set<std::string> seen;
  StateQuerySpec q{"tasks", {}, "", 64, false};
  for (int page = 0; page < 100; ++page) {
    bool more = false;
    uint64_t matched = 0;
    int built = 0;
    auto rows = SelectFrom(q, 1000, &more, &matched, &built);
    for (auto& r : rows) EXPECT_TRUE(seen.insert(r.at("task")).second) << r.at("task");
    if (!more) break;
    q.after = rows.back().at("task");
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(RowSelectorTest, IdsMatchByPrefixAndUnknownFieldsAreRefused) {
  StateQuerySpec q{"tasks", {{"task", "id09"}}, "", 100, false};
  bool more = false;
  uint64_t matched = 0;
  int built = 0;
  auto rows = SelectFrom(q, 1000, &more, &matched, &built);
  EXPECT_EQ(rows.size(), 10u);
  EXPECT_FALSE(more);
  Status st = CheckStateQuery({"tasks", {{"colour", "red"}}, "", 10, false});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("cannot filter tasks on 'colour' (fields: task, job"),
            std::string::npos)
      << st.message();
  EXPECT_FALSE(CheckStateQuery({"planets", {}, "", 10, false}).ok());
}

TEST(RowSelectorTest, KeepsTheSmallestIdsAndCountsTheRest) {
  StateQuerySpec q{"tasks", {}, "", 2, false};
  RowSelector s(q);
  for (const char* id : {"t3", "t1", "t4", "t2"}) {
    s.Offer(
        id, [](const std::string&) { return std::string(); },
        [&] {
          return StateRowFields{{"task", id}};
        });
  }
  bool more = false;
  uint64_t matched = 0;
  auto rows = s.Take(&more, &matched);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("task"), "t1");
  EXPECT_EQ(rows[1].at("task"), "t2");
  EXPECT_EQ(matched, 4u);
  EXPECT_TRUE(more);
}

TEST(RowSelectorTest, OfATaskThatEndedTwiceTheLatestEndWins) {
  StateRowFields early{{"state", "FAILED"}, {"ended_micros", "100"}};
  StateRowFields late{{"state", "FINISHED"}, {"ended_micros", "200"}};
  StateRowFields running{{"state", "RUNNING"}};
  EXPECT_TRUE(EndedLater(late, early));
  EXPECT_FALSE(EndedLater(early, late));
  EXPECT_TRUE(EndedLater(early, running));
  EXPECT_FALSE(EndedLater(running, early));
}

TEST(ActorRowsTest, AnActorsRowsFilterOnTheirFieldsOnly) {
  EXPECT_TRUE(
      CheckStateQuery({"actors", {{"state", "DEAD"}, {"class", "Counter"}}, "", 10, false}).ok());
  Status st = CheckStateQuery({"actors", {{"colour", "red"}}, "", 10, false});
  EXPECT_NE(st.message().find("cannot filter actors on 'colour' (fields: actor, job, class, state"),
            std::string::npos)
      << st.message();
  // One row per actor (its live worker before its ends) is the node's part (ActorRows), checked
  // through a real node in CallTest.AnActorByItsIdCalledDescribedRestartedAndKilledByUser.
}

TEST(ActorRowsTest, AnEndIsDeadOnlyWhenItsRecordSaysNoRestartFollows) {
  ActorEnd e;
  e.cause = "its worker crashed: killed by signal 9";
  e.max_restarts = 1;
  std::string death;
  EXPECT_EQ(ActorEndState(e, &death), "RESTARTING");
  EXPECT_EQ(death, "");
  e.life = 1;  // its restart ended too: none left
  EXPECT_EQ(ActorEndState(e, &death), "DEAD");
  EXPECT_EQ(death, "out of restarts (max_restarts 1): its worker crashed: killed by signal 9");
  e.job_ended = true;  // its job ended later: it died of its restarts, not of that
  EXPECT_EQ(ActorEndState(e, &death), "DEAD");
  EXPECT_EQ(death, "out of restarts (max_restarts 1): its worker crashed: killed by signal 9");
  e.job_ended = false;
  e.max_restarts = -1;  // forever
  EXPECT_EQ(ActorEndState(e, &death), "RESTARTING");
  e.job_ended = true;  // its job ended since: nobody restarts it
  EXPECT_EQ(ActorEndState(e, &death), "DEAD");
  EXPECT_EQ(death, "owner died (its job ended)");
  e.detached = true;  // a detached actor outlives its job, but only its owner restarts it
  EXPECT_EQ(ActorEndState(e, &death), "DEAD");
  ActorEnd killed;
  bool by_user = false;
  killed.cause =
      ActorEndCause("exited with status " + std::to_string(kKilledByCallerExitStatus), &by_user);
  killed.by_user = by_user;
  EXPECT_EQ(ActorEndState(killed, &death), "DEAD");
  EXPECT_EQ(death, "killed by user (cumulus kill)");
  ActorEnd owner;
  owner.max_restarts = 5;
  owner.cause = ActorEndCause("exited with status 0", &by_user);
  EXPECT_EQ(ActorEndState(owner, &death), "DEAD");
  EXPECT_EQ(death.rfind("killed by its owner", 0), 0u) << death;
  ActorEnd with_job;
  with_job.max_restarts = -1;
  with_job.with_job = true;
  EXPECT_EQ(ActorEndState(with_job, &death), "DEAD");
  EXPECT_EQ(death, "owner died (its job ended)");
}

TEST(ActorRowsTest, TwoNodesReportingOneActorShowTheLiveRowElseTheLatestEnd) {
  StateRowFields alive{{"state", "ALIVE"}, {"restarts", "1"}};
  StateRowFields restarting{{"state", "RESTARTING"}, {"restarts", "0"}, {"ended_micros", "50"}};
  StateRowFields early{{"state", "DEAD"}, {"restarts", "0"}, {"ended_micros", "100"}};
  StateRowFields late{{"state", "DEAD"}, {"restarts", "1"}, {"ended_micros", "200"}};
  StateRowFields exiting{{"state", "EXITING"}, {"restarts", "1"}};
  EXPECT_TRUE(ActorRowPreferred(alive, restarting));
  EXPECT_FALSE(ActorRowPreferred(restarting, alive));
  EXPECT_TRUE(ActorRowPreferred(alive, late));
  EXPECT_TRUE(ActorRowPreferred(late, early));
  EXPECT_FALSE(ActorRowPreferred(early, late));
  EXPECT_TRUE(ActorRowPreferred(alive, exiting));
  EXPECT_FALSE(ActorRowPreferred(exiting, alive));
}

// An owner's report of an actor lost on another node is kept only once the head declares that
// node dead, with the cause saying so; a node that lives on past kPendingMicros recalls the end
// itself, and the report is dropped.
TEST(ActorEndsTest, AnOwnersReportIsKeptOnlyWhenTheActorsNodeIsDeclaredDead) {
  ActorEnds ends(10);
  auto report = [](const std::string& actor, const std::string& node, int64_t at) {
    ActorEnd e;
    e.actor = actor;
    e.node = node;
    e.cause = "its process closed the connection";
    e.ended_micros = at;
    return e;
  };
  ends.AddPending(report("a1", "n1", 1'000'000));
  ends.AddPending(report("a2", "n2", 1'000'000));
  ends.AddPending(report("a3", "n1", 1'000'000));
  EXPECT_EQ(ends.size(), 0u) << "n1 and n2 live: they recall these ends";
  ends.NodeDead("n1", 2'000'000);
  std::vector<std::string> kept;
  ends.ForEach([&](const ActorEnd& e) {
    kept.push_back(e.actor);
    EXPECT_EQ(e.cause,
              "its node n1 was declared dead by the head (its owner had seen: its process closed "
              "the connection)");
  });
  EXPECT_EQ(kept, (std::vector<std::string>{"a1", "a3"}));
  ends.NodeDead("n1", 3'000'000);
  EXPECT_EQ(ends.size(), 2u) << "kept once";
  ends.NodeDead("n2", 1'000'000 + ActorEnds::kPendingMicros + 1);
  EXPECT_EQ(ends.size(), 2u) << "n2 outlived the report: its own record stands";
}

TEST(RowSelectorTest, QueryAndRowsSurviveTheirMessages) {
  StateQuerySpec q{"objects", {{"job", "ab"}, {"where", "DISK"}}, "cursor", 7, true};
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<proto::StateQuery>();
  EncodeStateQuery(q, b);
  StateQuerySpec back = DecodeStateQuery(b.asReader());
  EXPECT_EQ(back.kind, "objects");
  ASSERT_EQ(back.filters.size(), 2u);
  EXPECT_EQ(back.filters[1].value, "DISK");
  EXPECT_EQ(back.after, "cursor");
  EXPECT_EQ(back.limit, 7u);
  EXPECT_TRUE(back.detail);
  capnp::MallocMessageBuilder r;
  auto reply = r.initRoot<proto::StateReply>();
  EncodeStateRows({{{"object", "x"}, {"size", "3"}}}, reply);
  auto rows = DecodeStateRows(reply.asReader());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("size"), "3");
}

}  // namespace
}  // namespace cumulus
