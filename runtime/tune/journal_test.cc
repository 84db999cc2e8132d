// The journal's own arithmetic (no cluster): how long earlier runs of an experiment lasted, which
// is what a restored time budget has left.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/tune/journal.h"

namespace cumulus::tune {
namespace {

JournalEntry At(JournalEntry::Kind kind, int64_t micros) {
  JournalEntry e;
  e.kind = kind;
  e.micros = micros;
  return e;
}

TEST(JournalTimeOfRuns, EachRunFromItsStartToItsLastEntry) {
  using K = JournalEntry::Kind;
  std::vector<JournalEntry> entries = {At(K::kRun, 1'000), At(K::kTrialAdded, 1'500),
                                       At(K::kReport, 3'000), At(K::kRun, 10'000),
                                       At(K::kReport, 10'700)};
  EXPECT_EQ(TimeOfRuns(entries).count(), 2'000 + 700);
  EXPECT_EQ(TimeOfRuns({}).count(), 0);
  EXPECT_EQ(TimeOfRuns({At(K::kRun, 5)}).count(), 0);
}

// A run restored on a host whose clock is behind the first run's: measured on its own clock, not
// from its start to the first run's last entry (that counted 2,500 us for a run of 200 and spent
// the budget of a run that had most of it left).
TEST(JournalTimeOfRuns, ARunOnAClockBehindTheLastIsMeasuredOnItsOwn) {
  using K = JournalEntry::Kind;
  std::vector<JournalEntry> entries = {At(K::kRun, 1'000), At(K::kReport, 3'000), At(K::kRun, 500),
                                       At(K::kReport, 700)};
  EXPECT_EQ(TimeOfRuns(entries).count(), 2'000 + 200);
  // A clock that stepped back inside a run: the run lasted until its latest entry.
  entries = {At(K::kRun, 1'000), At(K::kReport, 4'000), At(K::kReport, 2'000)};
  EXPECT_EQ(TimeOfRuns(entries).count(), 3'000);
}

}  // namespace
}  // namespace cumulus::tune
