// `cumulus shell` against a real head and node: through a pseudo-terminal (forkpty), as a person
// types (Tab completion of commands and live ids, status, a live view left with a key, Ctrl-C out
// of logs --follow, confirmation and --read-only, history across sessions), and through a pipe,
// as a script (plain output, the exit status of the last failure, one line per bad line).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cluster_fixture.h"
#include "pty_terminal.h"
#include "runtime/core/messages.h"
#include "runtime/core/records.h"

namespace cumulus {
namespace {

class ShellTest : public ClusterTest {
 protected:
  std::vector<std::string> Auth() { return {"--address", address_, "--token-file", token_file_}; }
  std::string History() { return dir_.path() + "/history"; }

  // Runs `cumulus shell ARGS` with `script` on its stdin (a file: not a terminal).
  int Script(const std::string& script, const std::vector<std::string>& args, std::string* out) {
    std::string file = dir_.path() + "/script";
    std::ofstream(file) << script;
    std::string command = kCumulus + " shell";
    for (auto& a : args) command += " '" + a + "'";
    command += " < " + file;
    Subprocess p({"/bin/sh", "-c", command}, /*merge_stderr=*/true);
    *out = p.ReadAll(60s);
    auto st = p.Wait(30s);
    return st && WIFEXITED(*st) ? WEXITSTATUS(*st) : -1;
  }
};

TEST_F(ShellTest, ATerminalCompletesRunsWatchesAndComesBackFromCtrlC) {
  auto head = StartHead({"--no-node"});
  std::string node;
  auto a = StartNode(
      "a", {"--resources", "CPU=2", "--labels", "cumulus.node_type=cpu-small,site=onprem"}, &node);
  ASSERT_FALSE(node.empty());
  // A job that runs as long as the test needs: an attached driver's record, with some output.
  JobId job = JobId::FromInt(0x7e5701);
  {
    auto c = Client();
    ASSERT_TRUE(c);
    JobRecord r;
    r.argv = {"./pretend"};
    r.driver_node = std::string(node.size(), 'f');
    r.start_micros = 1;
    ASSERT_TRUE(c->KvPut(kJobsNamespace, job.Hex(), EncodeRecord(r)).ok());
    ASSERT_TRUE(c->KvPut(kJobLogsNamespace, job.Hex() + "/0000000000000001-n-0",
                         "hello from the pretend job\n")
                    .ok());
  }

  Terminal t(Auth(), History());
  ASSERT_TRUE(t.started());
  ASSERT_TRUE(t.WaitFor("cumulus> ")) << t.Raw();

  // A command name, completed with Tab, then run.
  t.Mark();
  t.Type("stat\t");
  ASSERT_TRUE(t.WaitFor("status ")) << t.Since();
  t.Type("\n");
  EXPECT_TRUE(t.WaitFor("ALIVE")) << t.Since();
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();

  // A subcommand, completed.
  t.Mark();
  t.Type("list placement-g\t");
  ASSERT_TRUE(t.WaitFor("list placement-groups ")) << t.Since();
  t.Type("\n");
  EXPECT_TRUE(t.WaitFor("BUNDLES")) << t.Since();
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();

  // A live node id, completed from the cluster; drain is destructive: it asks, "n" declines.
  t.Mark();
  t.Type("drain \t");
  ASSERT_TRUE(t.WaitFor("drain " + node + " ")) << t.Since();
  t.Type("\n");
  ASSERT_TRUE(t.WaitFor("[y/N]")) << t.Since();
  t.Type("n\n");
  EXPECT_TRUE(t.WaitFor("Not done.")) << t.Since();
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();

  // A live view: redrawn until a key, then the prompt again.
  t.Mark();
  t.Type("watch --interval 0.5 status\n");
  ASSERT_TRUE(t.WaitFor("any key: back to the prompt")) << t.Since();
  ASSERT_TRUE(t.WaitFor("ALIVE")) << t.Since();
  t.Mark();
  t.Type("q");
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();

  // top's filter on a node type, the type completed from the node's label; a key leaves it.
  t.Mark();
  t.Type("top --filter node_type=cpu\t");
  ASSERT_TRUE(t.WaitFor("top --filter node_type=cpu-small ")) << t.Since();
  t.Type("\n");
  ASSERT_TRUE(t.WaitFor("onprem/cpu-small")) << t.Since();
  t.Mark();
  t.Type("q");
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();

  // logs --follow runs until Ctrl-C, which returns to the prompt, not out of the shell.
  t.Mark();
  t.Type("logs " + job.Hex().substr(0, 5) + "\t");
  ASSERT_TRUE(t.WaitFor("logs " + job.Hex() + " ")) << t.Since();
  t.Type("--follow\n");
  ASSERT_TRUE(t.WaitFor("hello from the pretend job")) << t.Since();
  t.Mark();
  t.Type("\x03");
  ASSERT_TRUE(t.WaitForInOrder({"^C", "cumulus> "})) << t.Since();
  t.Mark();
  t.Type("status\n");
  EXPECT_TRUE(t.WaitFor("ALIVE")) << t.Since();
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();

  // Ctrl-C at the prompt drops the line; Ctrl-D leaves.
  t.Mark();
  t.Type("list nod\x03");
  // The shell prints ^C once it dropped the line, then a new prompt: Ctrl-D waits for both.
  ASSERT_TRUE(t.WaitForInOrder({"^C", "cumulus> "})) << t.Since();
  t.Type("\x04");
  int status = t.Exit();
  EXPECT_TRUE(WIFEXITED(status)) << status << "\n" << t.Since();
}

// Ctrl-C typed with the keys before it, at the very first prompt, many times over: the line is
// dropped and a Ctrl-D after it ends the shell. libedit draws the prompt before it switches the
// terminal to its editing mode; keys typed in between were taken in line mode, and a Ctrl-D there
// became an end-of-file mark that the switch hid: under load, most runs of this test left the
// shell waiting for ever. No cluster needed: the shell starts when the head does not answer.
TEST_F(ShellTest, CtrlCAtTheFirstPromptDropsTheLineEveryTime) {
  const std::string token = dir_.path() + "/some-token";
  std::ofstream(token) << std::string(64, 'x');
  for (int i = 0; i < 20; ++i) {
    Terminal t({"--address", "127.0.0.1:1", "--token-file", token}, History());
    ASSERT_TRUE(t.started());
    ASSERT_TRUE(t.WaitFor("cumulus> ")) << t.Raw();
    t.Mark();
    t.Type("list nod\x03");
    ASSERT_TRUE(t.WaitForInOrder({"^C", "cumulus> "})) << "start " << i << ": " << t.Since();
    t.Type("\x04");
    int status = t.Exit(10s);
    ASSERT_TRUE(WIFEXITED(status)) << "start " << i << ": " << status << "\n" << t.Since();
  }
}

// Letters beyond ASCII typed at the prompt reach the command whole (the test's environment has
// no locale: the shell reads UTF-8 then). No cluster needed.
TEST_F(ShellTest, ATerminalTakesNonAsciiLettersWhole) {
  const std::string token = dir_.path() + "/some-token";
  std::ofstream(token) << std::string(64, 'x');
  Terminal t({"--address", "127.0.0.1:1", "--token-file", token}, History());
  ASSERT_TRUE(t.started());
  ASSERT_TRUE(t.WaitFor("cumulus> ")) << t.Raw();
  t.Mark();
  t.Type("h\xc3\xa9llo caf\xc3\xa9\n");
  EXPECT_TRUE(t.WaitFor("unknown command 'h\xc3\xa9llo'")) << t.Since();
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();
  // Tab offers only what runs: no 'history' (the shell has no such command).
  t.Mark();
  t.Type("hist\t\n");
  EXPECT_TRUE(t.WaitFor("unknown command 'hist'")) << t.Since();
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();
  t.Type("exit\n");
  EXPECT_TRUE(WIFEXITED(t.Exit()));
}

TEST_F(ShellTest, ReadOnlyRefusesAndHistorySurvivesARestart) {
  auto head = StartHead({"--resources", "CPU=1"});
  {
    Terminal t(
        [&] {
          auto v = Auth();
          v.push_back("--read-only");
          return v;
        }(),
        History());
    ASSERT_TRUE(t.started());
    ASSERT_TRUE(t.WaitFor("cumulus> ")) << t.Raw();
    t.Mark();
    t.Type("cancel 12345678\n");
    ASSERT_TRUE(t.WaitFor("read-only")) << t.Since();
    EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();
    EXPECT_EQ(t.Since().find("[y/N]"), std::string::npos) << t.Since();
    t.Mark();
    t.Type("stop trial exp/t0001\n");
    ASSERT_TRUE(t.WaitFor("read-only")) << t.Since();
    EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();
    EXPECT_EQ(t.Since().find("[y/N]"), std::string::npos) << t.Since();
    t.Mark();
    t.Type("list nodes\n");
    EXPECT_TRUE(t.WaitFor("ALIVE")) << t.Since();
    EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();
    t.Type("exit\n");
    EXPECT_TRUE(WIFEXITED(t.Exit()));
  }
  std::ifstream file(History());
  std::stringstream kept;
  kept << file.rdbuf();
  EXPECT_NE(kept.str().find("nodes"), std::string::npos) << kept.str();

  // A new shell: the previous line is one Ctrl-P away; a destructive command asks, "y" runs it.
  Terminal t(Auth(), History());
  ASSERT_TRUE(t.started());
  ASSERT_TRUE(t.WaitFor("cumulus> ")) << t.Raw();
  t.Mark();
  t.Type("\x10");
  ASSERT_TRUE(t.WaitFor("list nodes")) << t.Since();
  t.Type("\n");
  EXPECT_TRUE(t.WaitFor("ALIVE")) << t.Since();
  t.Mark();
  t.Type("cancel 12345678\n");
  ASSERT_TRUE(t.WaitFor("[y/N]")) << t.Since();
  t.Type("y\n");
  EXPECT_TRUE(t.WaitFor("no job 12345678")) << t.Since();
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();
  // Stopping a trial (a sub-form of stop with a row of its own, completed with Tab) asks too;
  // "n" does nothing.
  t.Mark();
  t.Type("stop tr\t");
  ASSERT_TRUE(t.WaitFor("stop trial ")) << t.Since();
  t.Type("exp/t0001\n");
  ASSERT_TRUE(t.WaitFor("Run 'stop trial exp/t0001'? [y/N]")) << t.Since();
  t.Type("n\n");
  EXPECT_TRUE(t.WaitFor("Not done.")) << t.Since();
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();
  t.Type("quit\n");
  EXPECT_TRUE(WIFEXITED(t.Exit()));
}

// A running job's function called, its anonymous actor's id completed and described, and its
// named actor completed by name and killed, from the shell on a terminal (tests/call_driver.cc
// holds the job, the actor "counter" and an anonymous one).
TEST_F(ShellTest, ATerminalCallsAJobsFunctionAndKillsItsActor) {
  head_store_memory_ = "256M";  // the driver's program is shipped through the store
  auto head = StartHead({"--resources", "CPU=2"});
  auto driver = StartDriver("call_driver", {}, CoreSocket(HeadNodeId()));
  auto ready = driver->WaitForLine("READY", 60s);
  ASSERT_TRUE(ready) << driver->ReadAll(1s);
  std::string job = Field(*ready, "job");
  Terminal t(Auth(), History());
  ASSERT_TRUE(t.started());
  ASSERT_TRUE(t.WaitFor("cumulus> ")) << t.Raw();
  t.Mark();
  t.Type("call " + job + " Square 7\n");
  EXPECT_TRUE(t.WaitFor("49")) << t.Since();
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();
  // The anonymous actor's id completed from the nodes (`list actors`), then described.
  std::string phoenix = Field(*ready, "phoenix");
  ASSERT_FALSE(phoenix.empty()) << *ready;
  t.Mark();
  t.Type("describe actor " + phoenix.substr(0, 10) + "\t");
  // (A Tab waits 0.6 s for a fetch: a slow first one is given another Tab.)
  for (int tab = 0; tab < 3 && !t.WaitFor("describe actor " + phoenix + " ", 3s); ++tab) {
    t.Type("\t");
  }
  ASSERT_TRUE(t.WaitFor("describe actor " + phoenix + " ")) << t.Since();
  t.Type("\n");
  EXPECT_TRUE(t.WaitFor("state:    ALIVE")) << t.Since();
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();
  // A named actor is described by its name, as kill and call take it.
  t.Mark();
  t.Type("describe actor counter\n");
  EXPECT_TRUE(t.WaitFor("state:    ALIVE")) << t.Since();
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();
  t.Mark();
  t.Type("kill cou\t");
  ASSERT_TRUE(t.WaitFor("kill counter ")) << t.Since();
  t.Type("\n");
  ASSERT_TRUE(t.WaitFor("[y/N]")) << t.Since();
  t.Type("y\n");
  EXPECT_TRUE(t.WaitFor("killed actor 'counter'")) << t.Since();
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();
  t.Mark();
  t.Type("call counter Increment 1\n");
  EXPECT_TRUE(t.WaitFor("cumulus: ")) << t.Since();
  EXPECT_TRUE(t.WaitFor("cumulus> ")) << t.Since();

  // Ctrl-C stops a call that waits for its answer (run in the shell's own process): the prompt
  // comes back long before Sleep 60 would answer.
  t.Mark();
  t.Type("call " + job + " Sleep 60\n");
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::string out;
        Cli({"list", "tasks", "--filter", "state=RUNNING", "--address", address_, "--token-file",
             token_file_},
            &out);
        return out.find("Sleep") != std::string::npos;
      },
      20s));
  t.Type("\x03");
  EXPECT_TRUE(t.WaitForInOrder({"stopped before it answered", "cumulus> "}, 10s)) << t.Since();
  // And drain --wait: the node stays DRAINING (the driver is attached), Ctrl-C ends the wait.
  t.Mark();
  t.Type("drain " + HeadNodeId() + " --wait\n");
  ASSERT_TRUE(t.WaitFor("[y/N]")) << t.Since();
  t.Type("y\n");
  ASSERT_TRUE(t.WaitFor("Draining node")) << t.Since();
  t.Type("\x03");
  EXPECT_TRUE(t.WaitForInOrder({"Stopped waiting", "cumulus> "}, 10s)) << t.Since();
  t.Type("exit\n");
  EXPECT_TRUE(WIFEXITED(t.Exit()));
  driver->CloseStdin();
  EXPECT_TRUE(driver->Wait(30s));
}

// Typed at a terminal with the output kept in a file (`cumulus shell > session.log`): a
// destructive command still asks (on stderr, the terminal), and Ctrl-C between commands does not
// end the shell.
TEST_F(ShellTest, OutputToAFileStillAsksAndSurvivesCtrlC) {
  auto head = StartHead({"--resources", "CPU=1"});
  const std::string log = dir_.path() + "/session.log";
  auto logged = [&] {
    std::ifstream f(log);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  Terminal t(Auth(), History(), log);
  ASSERT_TRUE(t.started());
  t.Type("cancel 12345678\n");
  ASSERT_TRUE(t.WaitFor("Run 'cancel 12345678'? [y/N]")) << t.Raw();
  t.Type("n\n");
  ASSERT_TRUE(WaitUntil([&] { return logged().find("Not done.") != std::string::npos; }, 10s))
      << logged() << t.Raw();
  EXPECT_EQ(t.Raw().find("no job 12345678"), std::string::npos) << t.Raw();
  t.Type("\x03");
  t.Type("status\n");
  EXPECT_TRUE(WaitUntil([&] { return logged().find("ALIVE") != std::string::npos; }, 10s))
      << logged() << t.Raw();
  t.Type("exit\n");
  int status = t.Exit();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status << "\n" << t.Raw();

  // stderr to the file as well (`cumulus shell &> session.log`): the question is asked on the
  // terminal the answer is read from, not written into the file where no one sees it.
  Terminal both(Auth(), History(), log, /*stderr_too=*/true);
  ASSERT_TRUE(both.started());
  both.Type("cancel 12345678\n");
  ASSERT_TRUE(both.WaitFor("Run 'cancel 12345678'? [y/N]")) << both.Raw() << logged();
  both.Type("n\n");
  ASSERT_TRUE(WaitUntil([&] { return logged().find("Not done.") != std::string::npos; }, 10s))
      << logged() << both.Raw();
  EXPECT_EQ(logged().find("[y/N]"), std::string::npos) << logged();
  both.Type("exit\n");
  status = both.Exit();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status << "\n" << both.Raw();
}

TEST_F(ShellTest, ALostHeadIsOneLineAndTheNextCommandSaysItReconnected) {
  auto head = StartHead({"--no-node"});
  int port = std::atoi(address_.substr(address_.rfind(':') + 1).c_str());
  Terminal t(Auth(), History());
  ASSERT_TRUE(t.started());
  ASSERT_TRUE(t.WaitFor("cumulus> ")) << t.Raw();
  head.reset();  // killed
  t.Mark();
  t.Type("status\n");
  ASSERT_TRUE(t.WaitFor("cumulus: ")) << t.Since();
  ASSERT_TRUE(t.WaitFor("cumulus> ")) << t.Since();
  EXPECT_EQ(Count(t.Since(), "cumulus: "), 1) << t.Since();  // one line
  head = StartHead({"--no-node"}, port);
  t.Mark();
  t.Type("status\n");
  EXPECT_TRUE(t.WaitFor("reconnected to the head at")) << t.Since();
  EXPECT_TRUE(t.WaitFor("alive node")) << t.Since();
  t.Type("exit\n");
  EXPECT_TRUE(WIFEXITED(t.Exit()));
}

TEST_F(ShellTest, APipeRunsAScriptPlainlyAndExitsWithTheLastFailure) {
  auto head = StartHead({"--resources", "CPU=1"});
  std::string out;
  int rc = Script(
      "# a script\n"
      "status\n"
      "frobnicate now\n"
      "cumulus list nodes --json\n"
      "list 'nodes\n"
      "watch --interval 1 status\n"
      "jobs\n",
      Auth(), &out);
  // The last failure was the bad quoting (2); the commands after it succeeded.
  EXPECT_EQ(rc, 2) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;       // plain: no escape codes
  EXPECT_EQ(out.find("cumulus> "), std::string::npos) << out;  // no prompt
  EXPECT_GE(Count(out, "ALIVE"), 2) << out;                    // status, and watch once
  EXPECT_NE(out.find("\"node_id\""), std::string::npos) << out;
  EXPECT_EQ(Count(out, "frobnicate"), 1) << out;
  EXPECT_NE(out.find("cumulus: unknown command 'frobnicate'"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "ends inside a quote"), 1) << out;
  EXPECT_NE(out.find("ENTRYPOINT"), std::string::npos) << out;  // jobs ran after the failures

  // Nothing is asked in a pipe: a destructive command runs (and fails here: no such job); with
  // --read-only it is refused in one line.
  rc = Script("cancel 12345678\nstatus\n", Auth(), &out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_EQ(out.find("[y/N]"), std::string::npos) << out;
  EXPECT_NE(out.find("no job 12345678"), std::string::npos) << out;
  auto read_only = Auth();
  read_only.push_back("--read-only");
  rc = Script("drain abc\n", read_only, &out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  EXPECT_NE(out.find("read-only"), std::string::npos) << out;
  rc = Script("stop trial exp/t0001\n", read_only, &out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  EXPECT_NE(out.find("read-only"), std::string::npos) << out;
  // What starts servers is refused too (each line would fail at once without --read-only:
  // a bad flag, a missing file); reading a store's stats is not.
  rc = Script("start --no-such-flag\nup /nonexistent/cluster.yaml\nobject-store serve --nope\n",
              read_only, &out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_EQ(Count(out, "\n"), 3) << out;
  EXPECT_EQ(Count(out, "is read-only"), 3) << out;
  rc = Script("object-store stats --socket /nonexistent/store.sock\n", read_only, &out);
  EXPECT_NE(rc, 0) << out;
  EXPECT_EQ(out.find("read-only"), std::string::npos) << out;
  // `stop trial` reaches the shell's head (its address passed on), never stops the cluster.
  rc = Script("stop trial nope/t0001\nstop trial nope\n", Auth(), &out);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("no experiment named 'nope'"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "\n"), 2) << out;
  EXPECT_EQ(Script("status\n", Auth(), &out), 0) << out;

  // `top --help` shows top's own flags beside the live view's.
  EXPECT_EQ(Script("top --help\n", Auth(), &out), 0) << out;
  EXPECT_NE(out.find("--interval"), std::string::npos) << out;
  EXPECT_NE(out.find("--sort"), std::string::npos) << out;

  // No failure: exit status 0.
  EXPECT_EQ(Script("status\nexit\nfrobnicate\n", Auth(), &out), 0) << out;
}

}  // namespace
}  // namespace cumulus
