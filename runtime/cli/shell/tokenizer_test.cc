// The shell's word splitting: quotes, backslashes, comments, and what completion needs.
#include "runtime/cli/shell/tokenizer.h"

#include <gtest/gtest.h>

namespace cumulus::cli::shell {
namespace {

using Words = std::vector<std::string>;

TEST(TokenizerTest, SplitsOnWhitespaceAndKeepsQuotedText) {
  EXPECT_EQ(*Tokenize("  list   tasks\t--filter state=RUNNING "),
            (Words{"list", "tasks", "--filter", "state=RUNNING"}));
  EXPECT_EQ(*Tokenize("submit --name 'my job' -- ./a \"x y\" z\\ w"),
            (Words{"submit", "--name", "my job", "--", "./a", "x y", "z w"}));
  EXPECT_EQ(*Tokenize(R"(a "q\"uote\\" 'it''s' "$x")"), (Words{"a", "q\"uote\\", "its", "$x"}));
  EXPECT_EQ(*Tokenize("''"), (Words{""}));
}

TEST(TokenizerTest, AHashStartingAWordIsAComment) {
  EXPECT_EQ(*Tokenize("status # the nodes"), (Words{"status"}));
  EXPECT_EQ(*Tokenize("# only a comment"), Words{});
  EXPECT_EQ(*Tokenize("logs a#b"), (Words{"logs", "a#b"}));
}

TEST(TokenizerTest, AnUnterminatedQuoteIsAnErrorForALineButNotForCompletion) {
  EXPECT_FALSE(Tokenize("submit --name 'half").ok());
  EXPECT_FALSE(Tokenize("a \"b").ok());
  EXPECT_FALSE(Tokenize("trailing\\").ok());
  Tokens t = SplitWords("logs 'ab");
  EXPECT_TRUE(t.unterminated);
  EXPECT_TRUE(t.ends_in_word);
  EXPECT_EQ(t.words, (Words{"logs", "ab"}));
}

TEST(TokenizerTest, KnowsWhetherTheLineEndsInsideAWord) {
  EXPECT_TRUE(SplitWords("list no").ends_in_word);
  EXPECT_FALSE(SplitWords("list ").ends_in_word);
  EXPECT_FALSE(SplitWords("").ends_in_word);
}

TEST(TokenizerTest, QuoteRoundTrips) {
  for (std::string w : {"plain", "with space", "it's", "a\"b", "back\\slash", "#x", ""}) {
    auto back = Tokenize("x " + Quote(w));
    ASSERT_TRUE(back.ok()) << w;
    EXPECT_EQ(*back, (Words{"x", w})) << Quote(w);
  }
  EXPECT_EQ(Quote("plain"), "plain");
}

}  // namespace
}  // namespace cumulus::cli::shell
