// `cumulus call` against real processes: a head (with its node), a second node, and a driver
// (call_driver) that registers functions and a named actor and stays up. The command runs them
// as real tasks of the job and real calls of the actor, and prints the results as JSON; what it
// refuses, it refuses in one line.
#include <gtest/gtest.h>

#include <signal.h>

#include <functional>

#include "cluster_fixture.h"
#include "runtime/call/function_catalog.h"
#include "runtime/core/caller_connection.h"
#include "runtime/core/messages.h"
#include "runtime/head/node_codec.h"
#include "runtime/node/state_rows.h"

namespace cumulus {
namespace {

class CallTest : public ClusterTest {
 protected:
  // The driver's program is shipped through the stores.
  CallTest() {
    head_store_memory_ = "256M";
    node_store_memory_ = "256M";
  }

  // `cumulus call ARGS... --address A --token-file F`; stdout and stderr together in *out.
  int Call(std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), "call");
    std::vector<std::string> flags = {"--address", address_, "--token-file", token_file_};
    // Flags go before a "--" (after it everything is an argument).
    auto dash = std::find(args.begin(), args.end(), "--");
    args.insert(dash, flags.begin(), flags.end());
    return Cli(args, out);
  }
  // The output is one line of stderr saying `what`, and the exit status `code`.
  void ExpectOneLineError(std::vector<std::string> args, int code, const std::string& what) {
    std::string out;
    EXPECT_EQ(Call(args, &out), code) << out;
    EXPECT_EQ(Count(out, "\n"), 1) << out;
    EXPECT_EQ(out.rfind("cumulus: ", 0), 0u) << out;
    EXPECT_NE(out.find(what), std::string::npos) << "expected '" << what << "' in: " << out;
  }
  // The driver's READY line (nullopt if it ended or said nothing for 60 s); what it printed
  // before goes to `before`.
  static std::optional<std::string> WaitForReady(Subprocess& driver, std::string* before) {
    while (auto line = driver.WaitForLine("", 60s)) {
      if (line->rfind("READY", 0) == 0) return line;
      *before += *line + "\n";
    }
    return std::nullopt;
  }
  // How many objects the head's own node and the node that printed `node_ready` hold together.
  std::function<int()> StoredOnBothNodes(pid_t head_pid, const std::string& node_ready) {
    std::vector<std::string> stores = {
        dir_.path() + "/head/node-" + std::to_string(head_pid) + "/store.sock",
        Field(node_ready, "store_socket")};
    return [this, stores] {
      int n = 0;
      for (auto& s : stores) n += std::max(0, StoredObjects(s));
      return n;
    };
  }
};

TEST_F(CallTest, CallsFunctionsAndActorMethodsOfARunningJob) {
  auto head = StartHead({"--resources", "CPU=2"});
  std::string node_id, node_ready;
  auto node = StartNode("node1", {"--resources", "CPU=2"}, &node_id, &node_ready);
  // Objects in both stores (a stored result must be freed once the command has read it).
  auto stored = StoredOnBothNodes(head->pid(), node_ready);
  std::string before;  // what the driver printed first (shown if it never gets ready)
  auto driver = StartDriver("call_driver", {}, CoreSocket(node_id));
  std::optional<std::string> ready = WaitForReady(*driver, &before);
  ASSERT_TRUE(ready) << before;
  std::string job = Field(*ready, "job");
  ASSERT_EQ(job.size(), 8u) << *ready;
  auto client = Client();
  ASSERT_TRUE(client);
  ASSERT_TRUE(
      WaitUntil([&] { return client->KvGet(kActorsNamespace, "counter/address").ok(); }, 30s));
  std::string out;

  // A function of the job, run as a task of the job.
  EXPECT_EQ(Call({job, "Square", "7"}, &out), 0) << out;
  EXPECT_EQ(out, "49\n");
  EXPECT_EQ(Call({job.substr(0, 6), "Square", "--", "-3"}, &out), 0) << out;  // by prefix
  EXPECT_EQ(out, "9\n");
  // A struct by its field names, a struct back.
  EXPECT_EQ(Call({job, "Train", R"({"epochs": 3, "lr": 0.5, "tags": ["fast"]})"}, &out), 0) << out;
  EXPECT_EQ(out, "{\"name\":\"trained:fast\",\"score\":1.5}\n");
  EXPECT_EQ(Call({job, "Nothing"}, &out), 0) << out;
  EXPECT_EQ(out, "null\n");
  // A result over the inline limit is read from the store that holds it, then freed there.
  int objects = stored();
  EXPECT_EQ(Call({job, "Bytes", "200000"}, &out), 0) << out.substr(0, 300);
  EXPECT_EQ(out.size(), 2 + 2 * 200000u) << out.substr(0, 300);
  EXPECT_EQ(out.substr(0, 6), "[7,7,7");
  EXPECT_TRUE(WaitUntil([&] { return stored() == objects; }, 10s))
      << objects << " objects before, " << stored() << " after";

  // The named actor's method, twice: its state goes on.
  EXPECT_EQ(Call({"counter", "Increment", "1"}, &out), 0) << out;
  EXPECT_EQ(out, "1\n");
  EXPECT_EQ(Call({"counter", "Counter::Increment", "1"}, &out), 0) << out;
  EXPECT_EQ(out, "2\n");
  // By a prefix of the actor's id.
  auto record = client->KvGet(kActorsNamespace, "counter");
  ASSERT_TRUE(record.ok());
  auto actor = DecodeRecord<ActorNameRecord>(*record);
  ASSERT_TRUE(actor.ok());
  EXPECT_EQ(Call({actor->actor_id.substr(0, 10), "Read"}, &out), 0) << out;
  EXPECT_EQ(out, "2\n");
  // A method's large result too (freed through the node of the actor's worker).
  EXPECT_EQ(Call({"counter", "Blob", "150000"}, &out), 0) << out.substr(0, 300);
  EXPECT_EQ(out.size(), 2 + 2 * 150000u) << out.substr(0, 300);
  EXPECT_TRUE(WaitUntil([&] { return stored() == objects; }, 10s))
      << objects << " objects before, " << stored() << " after";

  // Listings with the types.
  EXPECT_EQ(Call({job}, &out), 0) << out;
  EXPECT_NE(out.find("Square(int64) -> int64"), std::string::npos) << out;
  EXPECT_NE(out.find("Train(Config{lr: float64, epochs: int32, tags: vector<string>}) -> "
                     "Summary{name: string, score: float64}"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("Increment"), std::string::npos) << out;  // methods are the actor's
  EXPECT_EQ(Call({"counter"}, &out), 0) << out;
  EXPECT_NE(out.find("Counter::Increment(int32) -> int32"), std::string::npos) << out;

  // What it refuses: one line each.
  ExpectOneLineError({job, "Square", "[7"}, 2, "args[0]: bad JSON at column 3");
  ExpectOneLineError({job, "Square", "\"7\""}, 2, "args[0]: expected int64, got a string");
  ExpectOneLineError({job, "Square", "7", "8"}, 2, "takes 1 argument, got 2");
  ExpectOneLineError({job, "Train", R"({"lr": "x", "epochs": 3, "tags": []})"}, 2,
                     "args[0].lr: expected float64, got a string");
  ExpectOneLineError({"counter", "Increment", "4294967296"}, 2,
                     "4294967296 is out of range for int32");
  ExpectOneLineError({job, "Cube", "2"}, 2, "has no function Cube (its functions: ");
  ExpectOneLineError({job, "Counter::Increment", "1"}, 2, "is an actor method");
  ExpectOneLineError({"counter", "Decrement", "1"}, 2, "has no method Decrement");
  ExpectOneLineError({job, "UseHandle", "1"}, 2, "UseHandle cannot be called with JSON");
  ExpectOneLineError({job, "UseHandle", "1"}, 2, "no JSON form");
  ExpectOneLineError({job, "Fail", "\"no\""}, 1, "refused: no");
  ExpectOneLineError({"nobody", "Read"}, 1, "no job and no actor 'nobody'");
  // A task past its timeout is cancelled (its worker killed); the job's next call runs.
  ExpectOneLineError({job, "Sleep", "60", "--timeout", "1"}, 1,
                     "Sleep did not finish within the timeout (it was cancelled)");
  EXPECT_EQ(Call({job, "Square", "5"}, &out), 0) << out;
  EXPECT_EQ(out, "25\n");

  // `cumulus kill`: the actor's worker exits (it has no restarts); a job is not an actor.
  auto kill = [&](const std::string& what, std::string* o) {
    return Cli({"kill", what, "--address", address_, "--token-file", token_file_}, o);
  };
  EXPECT_EQ(kill(job, &out), 2) << out;
  EXPECT_NE(out.find("is a job, not an actor"), std::string::npos) << out;
  EXPECT_EQ(kill("counter", &out), 0) << out;
  EXPECT_NE(out.find("killed actor 'counter'"), std::string::npos) << out;
  EXPECT_NE(Call({"counter", "Increment", "1"}, &out), 0) << out;
  EXPECT_EQ(kill("counter", &out), 1) << out;
  EXPECT_NE(out.find("cannot be reached"), std::string::npos) << out;

  // After the job ends, its functions cannot be called.
  driver->CloseStdin();
  ASSERT_TRUE(driver->Wait(30s));
  ASSERT_TRUE(WaitUntil([&] { return client->KvGet(kJobEndsNamespace, job).ok(); }, 30s));
  ExpectOneLineError({job, "Square", "7"}, 1, "has finished");
}

// An actor without a name, by its id: called and killed; `describe actor` tells its restart (its
// worker SIGKILLed: it may restart once) with the cause, and its death by `cumulus kill`.
TEST_F(CallTest, AnActorByItsIdCalledDescribedRestartedAndKilledByUser) {
  auto head = StartHead({"--resources", "CPU=2"});
  std::string before;
  auto driver = StartDriver("call_driver", {}, CoreSocket(HeadNodeId()));
  std::optional<std::string> ready = WaitForReady(*driver, &before);
  ASSERT_TRUE(ready) << before;
  std::string job = Field(*ready, "job"), actor = Field(*ready, "phoenix");
  ASSERT_EQ(actor.size(), 2 * ActorId::kSize) << *ready;
  std::string out;
  auto cli = [&](std::vector<std::string> args, std::string* o) {
    args.insert(args.end(), {"--address", address_, "--token-file", token_file_});
    return Cli(args, o);
  };

  // Called by (a prefix of) its id, as `list workers` shows it.
  ASSERT_EQ(cli({"list", "workers", "--filter", "actor=" + actor, "--json"}, &out), 0) << out;
  EXPECT_NE(out.find(actor), std::string::npos) << out;
  EXPECT_EQ(Call({actor.substr(0, 16), "Increment", "2"}, &out), 0) << out;
  EXPECT_EQ(out, "7\n");
  ExpectOneLineError({"ffffffffffffffff", "Read"}, 1, "no job and no actor 'ffffffffffffffff'");
  ASSERT_EQ(cli({"describe", "actor", actor.substr(0, 12)}, &out), 0) << out;
  EXPECT_NE(out.find("state:    ALIVE"), std::string::npos) << out;
  EXPECT_NE(out.find("restarts: 0 (max_restarts 1)"), std::string::npos) << out;

  // Its worker killed: its owner restarts it (fresh state), and describe says why.
  ASSERT_EQ(cli({"describe", "actor", actor, "--json"}, &out), 0) << out;
  auto pid_of = [&](const std::string& json) {
    size_t at = json.find("\"pid\":\"");
    return at == std::string::npos ? std::string()
                                   : json.substr(at + 7, json.find('"', at + 7) - at - 7);
  };
  std::string first_pid = pid_of(out);
  ASSERT_GT(std::atoi(first_pid.c_str()), 0) << out;
  kill(std::atoi(first_pid.c_str()), SIGKILL);
  EXPECT_TRUE(WaitUntil(
      [&] {
        cli({"describe", "actor", actor}, &out);
        return out.find("state:    ALIVE") != std::string::npos &&
               out.find("restarts: 1 (max_restarts 1)") != std::string::npos;
      },
      20s))
      << out;
  EXPECT_NE(out.find("    1. node " + HeadNodeId().substr(0, 8) + ", worker pid " + first_pid +
                     ": its worker crashed: killed by signal 9"),
            std::string::npos)
      << out;
  EXPECT_TRUE(WaitUntil(
      [&] {
        return Call({actor, "Read"}, &out) == 0 && out == "5\n";
      },
      20s))
      << out;
  // `list actors` shows it once, its new life alive (its node recalls the old one's end too).
  ASSERT_EQ(cli({"list", "actors", "--filter", "actor=" + actor.substr(0, 12), "--json"}, &out), 0)
      << out;
  EXPECT_EQ(Count(out, "\"actor\":"), 1) << out;
  EXPECT_NE(out.find("\"restarts\":\"1\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"state\":\"ALIVE\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"restart_cause\":"), std::string::npos) << out;
  // Its old life's end is not a second row: a state filter does not find the actor there, and no
  // page claims more rows than there are.
  ASSERT_EQ(cli({"list", "actors", "--filter", "actor=" + actor.substr(0, 12), "--filter",
                 "state=RESTARTING"},
                &out),
            0)
      << out;
  EXPECT_EQ(out.find(actor.substr(0, 12)), std::string::npos) << out;
  ASSERT_EQ(
      cli({"list", "actors", "--filter", "actor=" + actor.substr(0, 12), "--limit", "1"}, &out), 0)
      << out;
  EXPECT_EQ(out.find("next page"), std::string::npos) << out;

  // Killed by the user, by its id: dead for good (no restarts left), and describe says so.
  EXPECT_EQ(cli({"kill", actor.substr(0, 16)}, &out), 0) << out;
  EXPECT_TRUE(WaitUntil(
      [&] {
        cli({"describe", "actor", actor}, &out);
        return out.find("state:    DEAD") != std::string::npos;
      },
      20s))
      << out;
  EXPECT_NE(out.find("restarts: 1 (max_restarts 1)"), std::string::npos) << out;
  EXPECT_NE(out.find("killed by signal 9"), std::string::npos) << out;
  EXPECT_NE(out.find("  death:    killed by user (cumulus kill)"), std::string::npos) << out;
  EXPECT_NE(Call({actor, "Read"}, &out), 0) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  driver->CloseStdin();
  EXPECT_TRUE(driver->Wait(30s));
}

// An actor restarted on another node: the node it left still recalls that life's end, which says
// RESTARTING; a listing filtered on state or node must not show it so (the actor is ALIVE on the
// other node), and without filters it is one row, the live one.
TEST_F(CallTest, AnActorRestartedOnAnotherNodeIsListedByItsNewLifeUnderEveryFilter) {
  auto head = StartHead({"--resources", "CPU=2,slot=1"});
  const std::string a = HeadNodeId();
  std::string b, b_ready, before, out;
  auto node = StartNode("b", {"--resources", "CPU=2,slot=1"}, &b, &b_ready);
  auto driver = StartDriver("call_driver", {"--wanderer-home=" + a}, CoreSocket(a));
  std::optional<std::string> ready = WaitForReady(*driver, &before);
  ASSERT_TRUE(ready) << before;
  std::string actor = Field(*ready, "wanderer");
  ASSERT_EQ(actor.size(), 2 * ActorId::kSize) << *ready;
  auto cli = [&](std::vector<std::string> args, std::string* o) {
    args.insert(args.end(), {"--address", address_, "--token-file", token_file_});
    return Cli(args, o);
  };
  // The task that needs A's slot waits there behind the actor.
  ASSERT_TRUE(WaitUntil(
      [&] {
        cli({"list", "tasks", "--filter", "node=" + a, "--filter", "state=QUEUED"}, &out);
        return out.find("Sleep") != std::string::npos;
      },
      20s))
      << out;
  ASSERT_EQ(cli({"describe", "actor", actor, "--json"}, &out), 0) << out;
  ASSERT_NE(out.find("\"node\":\"" + a), std::string::npos) << out;
  size_t at = out.find("\"pid\":\"");
  ASSERT_NE(at, std::string::npos) << out;
  int pid = std::atoi(out.c_str() + at + 7);
  ASSERT_GT(pid, 0) << out;
  kill(pid, SIGKILL);
  ASSERT_TRUE(WaitUntil(
      [&] {
        cli({"list", "actors", "--filter", "actor=" + actor, "--json"}, &out);
        return out.find("\"state\":\"ALIVE\"") != std::string::npos &&
               out.find("\"restarts\":\"1\"") != std::string::npos;
      },
      30s))
      << out;
  EXPECT_EQ(Count(out, "\"actor\":"), 1) << out;
  ASSERT_NE(out.find("\"node\":\"" + b), std::string::npos) << "it restarted on A: " << out;
  // A still recalls life 0's end (RESTARTING, as far as A knows).
  ASSERT_EQ(cli({"describe", "actor", actor}, &out), 0) << out;
  EXPECT_NE(out.find("    1. node " + a.substr(0, 8) + ", worker pid " + std::to_string(pid)),
            std::string::npos)
      << out;
  // Under a filter the stale end does not stand for the actor.
  ASSERT_EQ(cli({"list", "actors", "--filter", "state=RESTARTING", "--json"}, &out), 0) << out;
  EXPECT_EQ(out.find(actor), std::string::npos) << out;
  ASSERT_EQ(cli({"list", "actors", "--filter", "node=" + a, "--json"}, &out), 0) << out;
  EXPECT_EQ(out.find(actor), std::string::npos) << out;
  ASSERT_EQ(
      cli({"list", "actors", "--filter", "node=" + b, "--filter", "state=ALIVE", "--json"}, &out),
      0)
      << out;
  EXPECT_NE(out.find(actor), std::string::npos) << out;
  driver->CloseStdin();
  EXPECT_TRUE(driver->Wait(30s));
}

// `cumulus list actors`: every actor, the anonymous one too, asked of the nodes with the head's
// names joined; filtered on state before the cap, paged, and a killed one shown DEAD with why.
TEST_F(CallTest, ListActorsShowsEveryActorByStateWithItsName) {
  auto head = StartHead({"--resources", "CPU=2"});
  std::string before;
  auto driver = StartDriver("call_driver", {}, CoreSocket(HeadNodeId()));
  std::optional<std::string> ready = WaitForReady(*driver, &before);
  ASSERT_TRUE(ready) << before;
  std::string job = Field(*ready, "job"), phoenix = Field(*ready, "phoenix");
  ASSERT_EQ(phoenix.size(), 2 * ActorId::kSize) << *ready;
  std::string out;
  auto list = [&](std::vector<std::string> args, std::string* o) {
    args.insert(args.begin(), {"list", "actors"});
    args.insert(args.end(), {"--address", address_, "--token-file", token_file_});
    return Cli(args, o);
  };
  // The JSON object of the row whose actor is `id` ("" when none).
  auto row_of = [](const std::string& json, const std::string& id) {
    size_t at = json.find("\"actor\":\"" + id);
    if (at == std::string::npos) return std::string();
    size_t from = json.rfind('{', at), to = json.find('}', at);
    return json.substr(from, to - from + 1);
  };

  ASSERT_EQ(list({"--filter", "state=ALIVE", "--json"}, &out), 0) << out;
  std::string anonymous = row_of(out, phoenix);
  EXPECT_NE(anonymous.find("\"name\":\"\""), std::string::npos) << out;
  EXPECT_NE(anonymous.find("\"job\":\"" + job + "\""), std::string::npos) << out;
  EXPECT_NE(anonymous.find("\"node\":\"" + HeadNodeId()), std::string::npos) << out;
  EXPECT_NE(anonymous.find("\"max_restarts\":\"1\""), std::string::npos) << out;
  EXPECT_EQ(Count(out, "\"state\":\"ALIVE\""), 2) << out;
  ASSERT_EQ(list({"--filter", "name=counter", "--json"}, &out), 0) << out;
  EXPECT_EQ(Count(out, "\"actor\":"), 1) << out;
  size_t at = out.find("\"actor\":\"");
  ASSERT_NE(at, std::string::npos) << out;
  std::string counter = out.substr(at + 9, 2 * ActorId::kSize);
  EXPECT_NE(counter, phoenix);
  EXPECT_NE(row_of(out, counter).find("\"state\":\"ALIVE\""), std::string::npos) << out;
  // Paged: one row, then the other after it.
  ASSERT_EQ(list({"--limit", "1"}, &out), 0) << out;
  const std::string& first = std::min(counter, phoenix);
  EXPECT_NE(out.find("(1 of 2 shown; next page: --after " + first + ")"), std::string::npos) << out;
  ASSERT_EQ(list({"--after", first, "--json"}, &out), 0) << out;
  EXPECT_EQ(Count(out, "\"actor\":"), 1) << out;
  EXPECT_NE(row_of(out, std::max(counter, phoenix)), "") << out;
  EXPECT_EQ(list({"--filter", "state=SLEEPING"}, &out), 2) << out;
  EXPECT_NE(out.find("no row can be in state 'SLEEPING'"), std::string::npos) << out;

  // Killed by the user (it has no restarts): DEAD, with why, and no longer among the alive.
  ASSERT_EQ(Cli({"kill", "counter", "--address", address_, "--token-file", token_file_}, &out), 0)
      << out;
  EXPECT_TRUE(WaitUntil(
      [&] {
        list({"--filter", "state=DEAD", "--json"}, &out);
        return !row_of(out, counter).empty();
      },
      10s))
      << out;
  std::string dead = row_of(out, counter);
  EXPECT_NE(dead.find("\"death\":\"killed by user (cumulus kill)\""), std::string::npos) << out;
  EXPECT_EQ(row_of(out, phoenix), "") << out;
  ASSERT_EQ(list({"--filter", "state=ALIVE", "--json"}, &out), 0) << out;
  EXPECT_EQ(row_of(out, counter), "") << out;
  EXPECT_NE(row_of(out, phoenix), "") << out;
  ASSERT_EQ(list({}, &out), 0) << out;
  EXPECT_NE(out.find("DEAD"), std::string::npos) << out;
  EXPECT_NE(out.find(phoenix.substr(0, 12)), std::string::npos) << out;
  driver->CloseStdin();
  EXPECT_TRUE(driver->Wait(30s));
}

// A caller (what `cumulus call` is to a node) may free only the stored results of its own tasks;
// one that leaves (killed mid-call) leaves nothing behind: its unfinished task is cancelled and
// the results it did not free are freed. A wrong token is refused with a line that says so, by
// the node and by an actor's worker.
TEST_F(CallTest, ACallerFreesOnlyItsOwnResultsAndLeavesNothingBehind) {
  auto head = StartHead({"--resources", "CPU=2"});
  std::string node_id, node_ready;
  auto node = StartNode("node1", {"--resources", "CPU=2"}, &node_id, &node_ready);
  auto stored = StoredOnBothNodes(head->pid(), node_ready);
  std::string before;  // what the driver printed first (shown if it never gets ready)
  auto driver = StartDriver("call_driver", {}, CoreSocket(node_id));
  std::optional<std::string> ready = WaitForReady(*driver, &before);
  ASSERT_TRUE(ready) << before;
  std::string job = Field(*ready, "job");
  auto job_id = JobId::FromHex(job);
  ASSERT_TRUE(job_id.ok()) << *ready;
  ClusterView v = View();
  const NodeRecord* n = Find(v, node_id);
  ASSERT_NE(n, nullptr);
  auto at = ParseHostPort(n->core_address);
  ASSERT_TRUE(at.ok());
  auto deadline = [] { return SystemClock::Get().Now() + 20s; };
  // Bytes(200000) as a task of the job: its result is stored on the node that ran it.
  auto submit_bytes = [&](CallerConnection& c) {
    TaskId task = TaskId::ForNormalTask(*job_id);
    capnp::MallocMessageBuilder message;
    auto spec = message.initRoot<proto::CoreMessage>().initSubmitTask();
    spec.setTaskId(DataOf(task));
    spec.setJobId(DataOf(*job_id));
    spec.setFunctionName("Bytes");
    spec.setNumReturns(1);
    std::string arg = Serialize<uint32_t>(200000);
    spec.initArgs(1)[0].setInline(
        capnp::Data::Reader(reinterpret_cast<const uint8_t*>(arg.data()), arg.size()));
    ResourceSet demand;
    demand.Set("CPU", 1);
    EncodeResources(demand, spec.initResources(static_cast<unsigned>(demand.units().size())));
    EXPECT_TRUE(c.Send(message, deadline()).ok());
    return task;
  };
  auto free_frame = [](const std::string& entry) {
    capnp::MallocMessageBuilder message;
    message.initRoot<proto::CoreMessage>().initFreeObjects(1).set(
        0, capnp::Data::Reader(reinterpret_cast<const uint8_t*>(entry.data()), entry.size()));
    return EncodeFrame(message);
  };
  int objects = stored();

  // A caller's task the node fails itself (no node has its resource): answered, and the node
  // keeps nothing of it for the caller, which is still connected.
  {
    auto c = CallerConnection::Open(*at, token_, deadline());
    ASSERT_TRUE(c.ok()) << c.status();
    TaskId task = TaskId::ForNormalTask(*job_id);
    capnp::MallocMessageBuilder message;
    auto spec = message.initRoot<proto::CoreMessage>().initSubmitTask();
    spec.setTaskId(DataOf(task));
    spec.setJobId(DataOf(*job_id));
    spec.setFunctionName("Nothing");
    spec.setNumReturns(1);
    ResourceSet demand;
    demand.Set("unobtainium", 1);
    EncodeResources(demand, spec.initResources(static_cast<unsigned>(demand.units().size())));
    ASSERT_TRUE(c->Send(message, deadline()).ok());
    capnp::MallocMessageBuilder query;
    EncodeStateQuery({"node", {}, "", 1, false},
                     query.initRoot<proto::CoreMessage>().initStateQuery());
    bool failed = false;
    std::string caller_tasks;
    while (caller_tasks.empty()) {
      auto words = c->Next(deadline());
      ASSERT_TRUE(words.ok()) << words.status();
      capnp::FlatArrayMessageReader reader(*words, CoreReaderOptions(words->size() * 8));
      auto msg = reader.getRoot<proto::CoreMessage>();
      if (msg.isTaskResult() && IdFrom<TaskId>(msg.getTaskResult().getTaskId()) == task) {
        EXPECT_EQ(msg.getTaskResult().getCode(), static_cast<uint16_t>(StatusCode::kInfeasible))
            << msg.getTaskResult().getMessage().cStr();
        failed = true;
        ASSERT_TRUE(c->Send(query, deadline()).ok());  // asked once it was answered
      } else if (msg.isStateReply()) {
        auto rows = DecodeStateRows(msg.getStateReply());
        ASSERT_EQ(rows.size(), 1u);
        caller_tasks = rows[0]["caller_tasks"];
      }
    }
    EXPECT_TRUE(failed);
    EXPECT_EQ(caller_tasks, "0") << "the node still holds the failed task for its caller";
  }

  // Caller A reads a stored result and does not free it.
  std::string entry;
  {
    auto a = CallerConnection::Open(*at, token_, deadline());
    ASSERT_TRUE(a.ok()) << a.status();
    TaskId task = submit_bytes(*a);
    while (entry.empty()) {
      auto words = a->Next(deadline());
      ASSERT_TRUE(words.ok()) << words.status();
      capnp::FlatArrayMessageReader reader(*words, CoreReaderOptions(words->size() * 8));
      auto msg = reader.getRoot<proto::CoreMessage>();
      if (!msg.isTaskResult() || IdFrom<TaskId>(msg.getTaskResult().getTaskId()) != task) continue;
      ASSERT_EQ(msg.getTaskResult().getCode(), 0) << msg.getTaskResult().getMessage().cStr();
      auto entries = StoredReturnEntries(msg.getTaskResult());
      ASSERT_EQ(entries.size(), 1u);
      entry = entries[0];
    }
    EXPECT_EQ(stored(), objects + 1);
    // Caller B may not free it: refused in a reply, and it stays.
    auto b = CallerConnection::Open(*at, token_, deadline());
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_TRUE(b->SendEncoded(free_frame(entry)).ok());
    auto refused = b->Next(deadline());
    ASSERT_FALSE(refused.ok()) << "someone else's object was freed without a word";
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << refused.status();
    EXPECT_NE(refused.status().message().find(
                  "refused to free 1 object(s) (" +
                  ObjectId::FromBinary(std::string_view(entry.data(), ObjectId::kSize)).Hex() +
                  "): a caller may free only the stored results of the tasks it submitted"),
              std::string::npos)
        << refused.status();
    EXPECT_EQ(stored(), objects + 1);
  }
  // A left without freeing: the node freed it.
  EXPECT_TRUE(WaitUntil([&] { return stored() == objects; }, 10s))
      << objects << " objects before, " << stored() << " after";

  // `cumulus call` killed while its task runs: the task is cancelled (else it would run 60 s).
  auto sleeping = [&] {
    std::string out;
    if (Cli({"list", "tasks", "--filter", "function=Sleep", "--json", "--address", address_,
             "--token-file", token_file_},
            &out) != 0) {
      return -1;
    }
    // (Ended ones are kept by the node as FAILED or FINISHED: not counted.)
    return Count(out, "\"function\":\"Sleep\"") - Count(out, "\"state\":\"FAILED\"") -
           Count(out, "\"state\":\"FINISHED\"");
  };
  Subprocess call(
      {kCumulus, "call", job, "Sleep", "60", "--address", address_, "--token-file", token_file_},
      /*merge_stderr=*/true);
  ASSERT_TRUE(WaitUntil([&] { return sleeping() == 1; }, 20s)) << sleeping();
  call.Kill(SIGKILL);
  EXPECT_TRUE(WaitUntil([&] { return sleeping() == 0; }, 15s))
      << "the task of a caller that left still runs";
  std::string out;
  EXPECT_EQ(Call({job, "Square", "6"}, &out), 0) << out;  // the job goes on
  EXPECT_EQ(out, "36\n");

  // A wrong token: the node and the actor's worker say they refused it.
  // With a request right behind the hello (in the same write, as `cumulus call` sends them):
  // the refusal must still come before the connection closes.
  auto refused_by = [&](const HostPort& where) -> Status {
    auto c = CallerConnection::Open(where, "not-the-token", deadline());
    if (!c.ok()) return c.status();
    capnp::MallocMessageBuilder request;
    request.initRoot<proto::CoreMessage>().initFreeObjects(0);
    (void)c->Send(request, deadline());  // (the other side may have closed already)
    return c->Next(deadline()).status();
  };
  Status node_said = refused_by(*at);
  EXPECT_EQ(node_said.code(), StatusCode::kUnauthenticated) << node_said;
  EXPECT_EQ(node_said.message(),
            "node " + node_id.substr(0, 8) +
                " refused the cluster token: pass the head's token with --token-file or "
                "CUMULUS_TOKEN");
  auto client = Client();
  ASSERT_TRUE(client);
  ASSERT_TRUE(
      WaitUntil([&] { return client->KvGet(kActorsNamespace, "counter/address").ok(); }, 30s));
  auto actor_at = ParseHostPort(*client->KvGet(kActorsNamespace, "counter/address"));
  ASSERT_TRUE(actor_at.ok());
  Status worker_said = refused_by(*actor_at);
  EXPECT_EQ(worker_said.code(), StatusCode::kUnauthenticated) << worker_said;
  EXPECT_NE(worker_said.message().find("the actor's worker on node "), std::string::npos)
      << worker_said;
  EXPECT_NE(worker_said.message().find(" refused the cluster token: pass the head's token"),
            std::string::npos)
      << worker_said;
  driver->CloseStdin();
  EXPECT_TRUE(driver->Wait(30s));
}

}  // namespace
}  // namespace cumulus
