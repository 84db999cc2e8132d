// The command line's flag parser (flags.h): values, booleans, strays, and positional arguments
// among the flags.
#include "runtime/cli/flags.h"

#include <gtest/gtest.h>

namespace cumulus::cli {
namespace {

TEST(Flags, ValuesBooleansAndStrays) {
  Flags f({"timeout"}, {"force"});
  ASSERT_TRUE(f.Parse({"--timeout", "5", "--force"}).ok());
  EXPECT_EQ(f.Get("timeout"), "5");
  EXPECT_TRUE(f.Has("force"));
  Flags g({"timeout"}, {"force"});
  EXPECT_EQ(g.Parse({"FILE"}).message(), "unexpected argument 'FILE'");
  EXPECT_EQ(g.Parse({"--force=1"}).message(), "--force takes no value");
  EXPECT_EQ(g.Parse({"--timeout"}).message(), "--timeout needs a value");
  EXPECT_EQ(g.Parse({"--tiemout", "1"}).message(), "unknown flag '--tiemout'");
}

TEST(Flags, PositionalArgumentsStandAnywhere) {
  Flags f({"timeout"}, {"insecure"});
  std::vector<std::string> positional;
  ASSERT_TRUE(f.Parse({"--insecure", "a.yaml", "--timeout", "-1", "b"}, &positional).ok());
  EXPECT_EQ(positional, (std::vector<std::string>{"a.yaml", "b"}));
  EXPECT_EQ(f.Get("timeout"), "-1") << "a flag's value is never positional";
  // After "--" everything is positional, flags included.
  Flags g({"timeout"}, {"insecure"});
  positional.clear();
  ASSERT_TRUE(g.Parse({"x", "--", "--insecure", "y"}, &positional).ok());
  EXPECT_EQ(positional, (std::vector<std::string>{"x", "--insecure", "y"}));
  EXPECT_FALSE(g.Has("insecure"));
  // Unknown flags are still errors.
  Flags h({}, {"insecure"});
  EXPECT_FALSE(h.Parse({"a.yaml", "--insecur"}, &positional).ok());
}

}  // namespace
}  // namespace cumulus::cli
