// The listings' cursor and selection (state_table.h), without a cluster.
#include "runtime/cli/state_table.h"

#include <gtest/gtest.h>

namespace cumulus::cli {
namespace {

TEST(StateTableTest, ACursorIsAnIdInEitherCaseAndNothingElse) {
  std::string after = "";
  EXPECT_TRUE(CheckCursor("job", &after).ok());
  after = "ABCd01";
  EXPECT_TRUE(CheckCursor("job", &after).ok());
  EXPECT_EQ(after, "abcd01") << "ids are matched in lower case";
  after = "zzzz";
  Status st = CheckCursor("job", &after);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--after 'zzzz' is not a job id"), std::string::npos) << st.message();
}

TEST(StateTableTest, AnUpperCaseCursorPagesLikeItsLowerCase) {
  std::vector<Row> rows = {{{"id", "0a"}}, {{"id", "0b"}}, {{"id", "0c"}}};
  std::string after = "0B";
  ASSERT_TRUE(CheckCursor("id", &after).ok());
  size_t total = 0;
  auto page = Select(rows, {}, "id", after, 10, /*in_key_order=*/true, &total);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ(page->front().at("id"), "0c");
}

}  // namespace
}  // namespace cumulus::cli
