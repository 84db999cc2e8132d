// `cumulus timeline` against real processes: a head and nodes on loopback, jobs of tasks and actor
// calls (timeline_driver), the trace fetched from the nodes, parsed and checked the way Perfetto
// reads it: every run on a worker with its phases in order and nested, its scheduling before it,
// runs of one worker one after another, only the job asked for; a small ring drops its oldest
// events and says how many; a node that does not answer is one line and the rest is written.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cluster_fixture.h"
#include "json_value.h"

namespace cumulus {
namespace {

constexpr double kSchedulingTidBase = 1e9;  // runtime/cli/chrome_trace.h

struct Span {
  std::string name, cat, phase, task, job;
  double pid = 0, tid = 0, ts = 0, dur = 0, attempt = 0;
  double end() const { return ts + dur; }
};

struct Trace {
  bool parsed = false;
  std::string error;
  testjson::Value root;
  std::vector<Span> spans;
  std::set<std::pair<double, double>> named_threads;
  std::set<double> named_processes;
  int Count(const std::string& phase, const std::string& cat) const {
    int n = 0;
    for (auto& s : spans) n += s.phase == phase && s.cat == cat;
    return n;
  }
};

Trace ReadTrace(const std::string& path) {
  Trace t;
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  std::string body = text.str();
  testjson::Parser parser(body);
  auto root = parser.Parse();
  if (!root) {
    t.error = parser.error();
    return t;
  }
  t.root = *root;
  const testjson::Value& events = t.root["traceEvents"];
  if (events.type != testjson::Value::kArray) {
    t.error = "no traceEvents array";
    return t;
  }
  for (const testjson::Value& e : events.a) {
    const std::string ph = e["ph"].s;
    if (ph == "M") {
      if (e["name"].s == "process_name") t.named_processes.insert(e["pid"].n);
      if (e["name"].s == "thread_name") t.named_threads.insert({e["pid"].n, e["tid"].n});
      continue;
    }
    if (ph != "X") {
      t.error = "an event of phase '" + ph + "'";
      return t;
    }
    for (const char* key : {"name", "cat", "ts", "dur", "pid", "tid", "args"}) {
      if (!e.Has(key)) {
        t.error = std::string("an X event without ") + key;
        return t;
      }
    }
    const testjson::Value& args = e["args"];
    for (const char* key : {"task_id", "job", "attempt", "phase"}) {
      if (!args.Has(key)) {
        t.error = std::string("an X event without args.") + key;
        return t;
      }
    }
    Span s{e["name"].s, e["cat"].s, args["phase"].s, args["task_id"].s, args["job"].s,
           e["pid"].n,  e["tid"].n, e["ts"].n,       e["dur"].n,        args["attempt"].n};
    if (s.dur < 0 || s.name.empty()) {
      t.error = "a negative duration or an empty name";
      return t;
    }
    t.spans.push_back(s);
  }
  t.parsed = true;
  return t;
}

// Perfetto's rule for complete events on one thread: any two are disjoint or one holds the other.
void ExpectProperlyNested(const Trace& t) {
  std::map<std::pair<double, double>, std::vector<const Span*>> by_thread;
  for (auto& s : t.spans) by_thread[{s.pid, s.tid}].push_back(&s);
  for (auto& [thread, spans] : by_thread) {
    std::sort(spans.begin(), spans.end(), [](const Span* a, const Span* b) {
      return a->ts != b->ts ? a->ts < b->ts : a->dur > b->dur;
    });
    std::vector<const Span*> open;
    for (const Span* s : spans) {
      while (!open.empty() && open.back()->end() <= s->ts) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(s->end(), open.back()->end())
            << s->phase << " of " << s->task << " overlaps " << open.back()->phase << " of "
            << open.back()->task << " on tid " << thread.second;
      }
      open.push_back(s);
    }
  }
}

class TimelineTest : public ClusterTest {
 protected:
  // The driver's program goes through the object store (a debug build is tens of MiB).
  TimelineTest() {
    head_store_memory_ = "256M";
    node_store_memory_ = "256M";
  }

  // Runs `cumulus timeline ARGS -o FILE`; returns its exit status, its output and the trace.
  int Timeline(const std::vector<std::string>& args, std::string* out, Trace* trace) {
    std::string file = dir_.path() + "/trace.json";
    std::remove(file.c_str());
    std::vector<std::string> argv = {"timeline"};
    argv.insert(argv.end(), args.begin(), args.end());
    for (const std::string& a : {std::string("-o"), file, std::string("--address"), address_,
                                 std::string("--token-file"), token_file_}) {
      argv.push_back(a);
    }
    int rc = Cli(argv, out);
    if (trace) *trace = ReadTrace(file);
    return rc;
  }

  std::string StartJob(std::unique_ptr<Subprocess>& driver, const std::string& socket,
                       std::vector<std::string> args) {
    driver = StartDriver("timeline_driver", std::move(args), socket);
    auto job = driver->WaitForLine("JOB ", 60s);
    if (!job) {
      std::string rest = driver->ReadAll(5s);
      auto st = driver->Wait(5s);
      ADD_FAILURE() << "the driver did not start (exit " << (st ? *st : -1) << "): " << rest;
      return "";
    }
    EXPECT_TRUE(driver->WaitForLine("RAN", 60s)) << "the driver's work did not end";
    return job->substr(4);
  }

  // Lets the driver end; its checks (printed before "RAN") are counted in its last line.
  static void Finish(std::unique_ptr<Subprocess>& driver) {
    driver->CloseStdin();
    std::string out = driver->ReadAll(60s);
    driver->Wait(30s);
    EXPECT_NE(out.find("DONE failures=0"), std::string::npos) << out;
  }
};

TEST_F(TimelineTest, TasksAndActorCallsHaveTheirPhasesPerWorker) {
  auto head = StartHead({});
  std::string n1;
  auto node = StartNode("n1", {"--resources", "CPU=2"}, &n1);
  std::string socket = CoreSocket(n1);
  std::unique_ptr<Subprocess> d1, d2;
  const std::string job1 = StartJob(d1, socket, {"--tasks=40", "--calls=30"});
  const std::string job2 = StartJob(d2, socket, {"--tasks=10"});
  ASSERT_FALSE(job1.empty());
  ASSERT_FALSE(job2.empty());

  // Workers ship their events in batches: wait until all of job 1's are there.
  // 41 tasks (40 Square, 1 Sum), the actor's constructor, 30 calls: 72 runs.
  Trace t;
  std::string out;
  bool complete = WaitUntil(
      [&] {
        if (Timeline({job1}, &out, &t) != 0 || !t.parsed) return false;
        return t.Count("run", "task") == 41 && t.Count("run", "actor_creation") == 1 &&
               t.Count("run", "actor_call") == 30 && t.Count("scheduling", "scheduling") == 72;
      },
      30s);
  ASSERT_TRUE(t.parsed) << t.error << "\n" << out;
  ASSERT_TRUE(complete) << "runs: task " << t.Count("run", "task") << ", actor_call "
                        << t.Count("run", "actor_call") << ", scheduling "
                        << t.Count("scheduling", "scheduling") << "\n"
                        << out;
  EXPECT_NE(out.find("Wrote 72 run(s)"), std::string::npos) << out;

  // Only job 1's; each task once, with its phases in order on one worker.
  std::map<std::string, std::map<std::string, const Span*>> by_task;
  for (auto& s : t.spans) {
    EXPECT_EQ(s.job, job1) << s.name;
    EXPECT_EQ(s.attempt, 0) << s.name;
    EXPECT_TRUE(t.named_processes.count(s.pid)) << "pid " << s.pid << " has no process_name";
    EXPECT_TRUE(t.named_threads.count({s.pid, s.tid})) << "tid " << s.tid << " has no name";
    EXPECT_EQ(by_task[s.task].count(s.phase), 0u) << s.phase << " twice for " << s.task;
    by_task[s.task][s.phase] = &s;
  }
  EXPECT_EQ(by_task.size(), 72u);
  std::map<std::pair<double, double>, std::vector<const Span*>> runs_by_worker;
  for (auto& [task, phases] : by_task) {
    for (const char* p : {"scheduling", "run", "argument fetch", "execution", "result store"}) {
      ASSERT_TRUE(phases.count(p)) << task << " has no " << p;
    }
    const Span& sched = *phases["scheduling"];
    const Span& run = *phases["run"];
    const Span& fetch = *phases["argument fetch"];
    const Span& exec = *phases["execution"];
    const Span& store = *phases["result store"];
    EXPECT_GE(sched.tid, kSchedulingTidBase);
    EXPECT_EQ(sched.pid, run.pid);
    EXPECT_LT(run.tid, kSchedulingTidBase);
    for (const Span* s : {&fetch, &exec, &store}) {
      EXPECT_EQ(s->pid, run.pid);
      EXPECT_EQ(s->tid, run.tid);
    }
    EXPECT_EQ(sched.end(), run.ts) << task;
    EXPECT_EQ(fetch.ts, run.ts);
    EXPECT_LE(fetch.end(), exec.ts);
    EXPECT_LE(exec.end(), store.ts);
    EXPECT_EQ(store.end(), run.end());
    EXPECT_TRUE(run.name == "Square" || run.name == "Sum" || run.name == "CreateCounter" ||
                run.name.find("Add") != std::string::npos)
        << run.name;
    runs_by_worker[{run.pid, run.tid}].push_back(&run);
  }
  // One run at a time on a worker.
  for (auto& [worker, runs] : runs_by_worker) {
    std::sort(runs.begin(), runs.end(), [](const Span* a, const Span* b) { return a->ts < b->ts; });
    for (size_t i = 1; i < runs.size(); ++i) EXPECT_LE(runs[i - 1]->end(), runs[i]->ts);
  }
  ExpectProperlyNested(t);

  // Without a job: both jobs.
  ASSERT_EQ(Timeline({}, &out, &t), 0) << out;
  ASSERT_TRUE(t.parsed) << t.error;
  std::set<std::string> jobs;
  for (auto& s : t.spans) jobs.insert(s.job);
  EXPECT_TRUE(jobs.count(job1) && jobs.count(job2)) << out;
  ExpectProperlyNested(t);

  Finish(d1);
  Finish(d2);
}

TEST_F(TimelineTest, TheRingDropsItsOldestEventsAndSaysHowMany) {
  auto head = StartHead({"--no-node"});
  setenv("CUMULUS_TIMELINE_EVENTS", "16", 1);
  std::string n1;
  auto node = StartNode("n1", {"--resources", "CPU=1"}, &n1);
  unsetenv("CUMULUS_TIMELINE_EVENTS");
  std::unique_ptr<Subprocess> d;
  const std::string job = StartJob(d, CoreSocket(n1), {"--tasks=30"});
  // 31 tasks: 31 runs and 31 scheduling events; the ring keeps 16.
  Trace t;
  std::string out;
  bool all_in = WaitUntil(
      [&] {
        if (Timeline({job}, &out, &t) != 0 || !t.parsed) return false;
        return t.root["otherData"]["dropped_events"].n == 62 - 16;
      },
      30s);
  ASSERT_TRUE(t.parsed) << t.error;
  EXPECT_TRUE(all_in) << "dropped: " << t.root["otherData"]["dropped_events"].n << "\n" << out;
  EXPECT_EQ(t.root["otherData"]["nodes"].a.size(), 1u);
  EXPECT_EQ(t.root["otherData"]["nodes"].a[0]["ring_events"].n, 16);
  EXPECT_NE(out.find("dropped its 46 oldest events"), std::string::npos) << out;
  // What is left is the newest: the last task (Sum) ran after every Square.
  int runs = t.Count("run", "task");
  EXPECT_LE(runs, 16);
  EXPECT_GE(runs, 1);
  bool has_last = false;
  for (auto& s : t.spans) has_last |= s.phase == "run" && s.name == "Sum";
  EXPECT_TRUE(has_last) << out;
  ExpectProperlyNested(t);
  Finish(d);
}

TEST_F(TimelineTest, BadArgumentsAndASilentNodeAreOneLine) {
  auto head = StartHead({});
  std::string n1, n2;
  auto node = StartNode("n1", {}, &n1);
  setenv("CUMULUS_TIMELINE", "0", 1);
  auto off = StartNode("n2", {}, &n2);
  unsetenv("CUMULUS_TIMELINE");
  std::string out;

  EXPECT_EQ(Cli({"timeline", "--address", address_, "--token-file", token_file_}, &out), 2);
  EXPECT_NE(out.find("timeline needs -o FILE"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  EXPECT_EQ(Timeline({"not-a-job"}, &out, nullptr), 2);
  EXPECT_NE(out.find("'not-a-job' is not a job id"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  EXPECT_EQ(Timeline({"0000abcd"}, &out, nullptr), 1);
  EXPECT_NE(out.find("no job 0000abcd"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  EXPECT_EQ(Cli({"timeline", "--help"}, &out), 0);
  EXPECT_NE(out.find("CUMULUS_TIMELINE_EVENTS"), std::string::npos) << out;
  // -o DIR: one line, and no DIR.tmp left behind; -o -: the trace on stdout, no file "-".
  const std::string dir = dir_.path() + "/traces";
  ASSERT_TRUE(std::filesystem::create_directory(dir));
  EXPECT_EQ(Cli({"timeline", "-o", dir, "--address", address_, "--token-file", token_file_}, &out),
            2);
  EXPECT_NE(out.find("is a directory"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  EXPECT_FALSE(std::filesystem::exists(dir + ".tmp"));
  {
    Subprocess p({"/bin/sh", "-c",
                  "cd '" + dir_.path() + "' && exec '" + kCumulus + "' timeline -o - --address " +
                      address_ + " --token-file '" + token_file_ + "' 2>/dev/null"});
    std::string trace = p.ReadAll(30s);
    auto st = p.Wait(10s);
    ASSERT_TRUE(st && WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << trace;
    EXPECT_EQ(trace.rfind("{", 0), 0u) << trace.substr(0, 200);  // JSON, nothing before it
    EXPECT_NE(trace.find("\"traceEvents\""), std::string::npos) << trace.substr(0, 200);
    EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/-"));
  }
  {
    // -o - into a full disk: a failure, said in one line, not "Wrote ... to stdout".
    Subprocess p({"/bin/sh", "-c",
                  "exec '" + kCumulus + "' timeline -o - --address " + address_ +
                      " --token-file '" + token_file_ + "' 2>&1 >/dev/full"});
    std::string said = p.ReadAll(30s);
    auto st = p.Wait(10s);
    ASSERT_TRUE(st && WIFEXITED(*st)) << said;
    EXPECT_EQ(WEXITSTATUS(*st), 1) << said;
    EXPECT_NE(said.find("cannot write the trace to stdout"), std::string::npos) << said;
    EXPECT_EQ(said.find("Wrote"), std::string::npos) << said;
    EXPECT_EQ(Count(said, "cannot write"), 1) << said;  // (beside the note on the node above)
  }

  // A node that does not answer (stopped): one line naming it, the others still written.
  node->Kill(SIGSTOP);
  Trace t;
  EXPECT_EQ(Timeline({"--timeout", "1"}, &out, &t), 0) << out;
  node->Kill(SIGCONT);
  EXPECT_EQ(Count(out, "did not answer"), 1) << out;
  EXPECT_NE(out.find("node " + n1), std::string::npos) << out;
  EXPECT_NE(out.find("node " + n2 + " keeps no timeline"), std::string::npos) << out;
  ASSERT_TRUE(t.parsed) << t.error;
  EXPECT_EQ(t.root["otherData"]["nodes"].a.size(), 2u);  // the head's node and n2
  EXPECT_EQ(t.named_processes.size(), 2u);
}

}  // namespace
}  // namespace cumulus
