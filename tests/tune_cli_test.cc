// The tuning command line with real processes (`cumulus start` head on loopback,
// tune_driver.cc): `cumulus trials` (the list, one experiment, one trial, --plot) and `cumulus
// logs --trial` over an experiment the driver ran, and their bad input (docs/tune.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/tune/journal.h"
#include "tune_fixture.h"

namespace cumulus {
namespace {

// The command line over the same experiment: the list, the table as JSON, one trial's history,
// the picture (rendered by rsvg-convert where it is installed), a trial's own output, bad input.
TEST_F(TuneTest, TrialsCommandShowsTheJournaledExperiment) {
  auto head = StartHead({"--resources", "CPU=2"});
  auto driver = Driver({"--scenario=run", "--name=cli", "--samples=6", "--iters=4"});
  std::string out = Finish(*driver);
  ASSERT_NE(out.find("RESULT trials=6 "), std::string::npos) << out;
  std::vector<std::string> conn = {"--address", address_, "--token-file", token_file_};
  auto cli = [&](std::vector<std::string> args, std::string* text) {
    args.insert(args.end(), conn.begin(), conn.end());
    return Cli(args, text);
  };
  std::string text;
  ASSERT_EQ(cli({"trials"}, &text), 0) << text;
  EXPECT_NE(text.find("cli"), std::string::npos) << text;
  EXPECT_NE(text.find("ENDED"), std::string::npos) << text;
  ASSERT_EQ(cli({"trials", "cli", "--json"}, &text), 0) << text;
  for (auto& [id, line] : Trials(out)) {
    std::string state = line.substr(line.find("state=") + 6);
    state = state.substr(0, state.find(' '));
    EXPECT_NE(text.find("\"id\": \"" + id + "\""), std::string::npos) << text;
    EXPECT_NE(text.find("\"state\": \"" + state + "\""), std::string::npos) << text;
  }
  ASSERT_EQ(cli({"trials", "cli", "t0001", "--csv"}, &text), 0) << text;
  EXPECT_NE(text.find("accuracy"), std::string::npos) << text;
  // Flags before the names; a short trial id; the trial's state and config above its history.
  ASSERT_EQ(cli({"trials", "--width", "100", "cli", "1"}, &text), 0) << text;
  EXPECT_EQ(text.rfind("trial t0001 of cli: ", 0), 0u) << text;
  EXPECT_NE(text.find("\n  config: "), std::string::npos) << text;
  EXPECT_NE(text.find("\nhistory:\niteration,"), std::string::npos) << text;
  std::string svg = dir_.path() + "/cli.svg";
  ASSERT_EQ(cli({"trials", "cli", "--plot", svg}, &text), 0) << text;
  std::ifstream in(svg);
  std::string picture((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(picture.find("<svg"), std::string::npos);
  EXPECT_NE(picture.find("</svg>"), std::string::npos);
  if (access("/usr/bin/rsvg-convert", X_OK) == 0) {
    std::string png = dir_.path() + "/cli.png";
    Subprocess r({"/usr/bin/rsvg-convert", "-o", png, svg}, true);
    std::string err = r.ReadAll(30s);
    auto st = r.Wait(30s);
    EXPECT_TRUE(st && WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << err;
  }
  // Each trial's output apart: the driver's job id is in the journal's first entry.
  auto j = Load("cli");
  ASSERT_TRUE(j.ok()) << j.status();
  std::string job = j->entries.front().job;
  ASSERT_EQ(cli({"logs", job, "--trial", "t0002"}, &text), 0) << text;
  EXPECT_NE(text.find("trial t0002 iteration 1"), std::string::npos) << text;
  EXPECT_EQ(text.find("trial t0001 "), std::string::npos) << "another trial's output:\n" << text;
  std::string full = text;
  ASSERT_EQ(cli({"logs", "--trial", "2", job}, &text), 0) << text;
  EXPECT_EQ(text, full) << "t0002 as 2";
  EXPECT_EQ(cli({"logs", "0badf00d", "--trial", "t0002"}, &text), 1) << text;
  EXPECT_NE(text.find("no job 0badf00d"), std::string::npos) << text;
  // A trial id the job never ran, an experiment another job ran: an error naming what it ran.
  EXPECT_EQ(cli({"logs", job, "--trial", "t0099"}, &text), 1) << text;
  EXPECT_NE(text.find("ran no trial t0099 (its experiments: cli;"), std::string::npos) << text;
  // A trial that printed nothing is no error: nothing on stdout, a line saying so.
  auto quiet = Driver({"--scenario=run", "--name=quiet", "--samples=2", "--iters=2", "--quiet=1"});
  ASSERT_NE(Finish(*quiet).find("RESULT trials=2 "), std::string::npos);
  auto q = Load("quiet");
  ASSERT_TRUE(q.ok()) << q.status();
  std::string quiet_job = q->entries.front().job;
  ASSERT_EQ(cli({"logs", quiet_job, "--trial", "t0001"}, &text), 0) << text;
  EXPECT_EQ(text.rfind("cumulus: trial t0001 of experiment quiet (", 0), 0u) << text;
  EXPECT_NE(text.find(") has printed nothing\n"), std::string::npos) << text;
  EXPECT_EQ(cli({"logs", quiet_job, "--trial", "cli/t0001"}, &text), 1) << text;
  EXPECT_NE(text.find("did not run experiment cli (job " + job + " did)"), std::string::npos)
      << text;
  // Bad input: one line each.
  EXPECT_EQ(cli({"trials", "nope"}, &text), 1) << text;
  EXPECT_NE(text.find("no experiment named 'nope'"), std::string::npos) << text;
  EXPECT_EQ(cli({"trials", "cli", "t9999"}, &text), 1) << text;
  EXPECT_EQ(cli({"trials", "bad/name"}, &text), 2) << text;
  EXPECT_EQ(cli({"trials", "cli", "--json", "--csv"}, &text), 2) << text;
  EXPECT_EQ(cli({"trials", "cli", "1", "--plot", svg}, &text), 2) << text;
  EXPECT_NE(text.find("--plot draws a whole experiment: leave out TRIAL"), std::string::npos)
      << text;
  EXPECT_EQ(cli({"trials", "cli", "--log-x"}, &text), 2) << text;
  EXPECT_EQ(cli({"trials", "cli", "--plot", dir_.path() + "/cli.png"}, &text), 2) << text;
  EXPECT_NE(text.find("--plot writes an SVG picture"), std::string::npos) << text;
}

}  // namespace
}  // namespace cumulus
