#include "runtime/node/state_rows.h"

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
