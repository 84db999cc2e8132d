#include "runtime/cli/chrome_trace.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <queue>
#include <utility>

namespace cumulus {

namespace {

// `s` as a JSON string literal.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// A run and the node's scheduling of it: the same task on the same worker (a task the node
// retried goes to another worker; the attempt the node counts is not the spec's).
struct RunKey {
  TaskId task;
  int32_t worker_pid;
  bool operator<(const RunKey& o) const {
    return task != o.task ? task < o.task : worker_pid < o.worker_pid;
  }
};

class Writer {
 public:
  void Meta(const char* what, int pid, int64_t tid, const std::string& key,
            const std::string& value) {
    Begin();
    out_ += "{\"name\":\"" + std::string(what) + "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid);
    if (tid >= 0) out_ += ",\"tid\":" + std::to_string(tid);
    out_ += ",\"args\":{\"" + key + "\":" + value + "}}";
  }
  // A complete event: [start, end] in microseconds.
  void Complete(const std::string& name, const char* cat, int pid, int64_t tid, int64_t start,
                int64_t end, const TimelineRecord& r, const char* phase) {
    Begin();
    TaskId task = r.Task();
    out_ += "{\"name\":" + Quote(name) + ",\"cat\":\"" + cat +
            "\",\"ph\":\"X\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
            ",\"ts\":" + std::to_string(start) + ",\"dur\":" + std::to_string(end - start) +
            ",\"args\":{\"task_id\":\"" + task.Hex() + "\",\"job\":\"" + task.Job().Hex() +
            "\",\"attempt\":" + std::to_string(r.attempt) + ",\"phase\":\"" + phase +
            "\",\"worker_pid\":" + std::to_string(r.worker_pid);
    if (r.kind == TimelineRecord::kRun) out_ += ",\"status\":" + std::to_string(r.code);
    out_ += "}}";
  }
  void Raw(const std::string& text) { out_ += text; }
  std::string Take() { return std::move(out_); }

 private:
  void Begin() {
    if (!first_) out_ += ",\n";
    first_ = false;
  }
  std::string out_;
  bool first_ = true;
};

const char* Category(const TimelineRecord& r) {
  if (r.flags & TimelineRecord::kActorCreation) return "actor_creation";
  if (r.flags & TimelineRecord::kActorCall) return "actor_call";
  return "task";
}

// Assigns each [start, end] span the first lane free at its start; returns the lanes.
std::vector<int> Lanes(const std::vector<std::pair<int64_t, int64_t>>& spans, int* count) {
  std::vector<size_t> order(spans.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return spans[a] < spans[b]; });
  using Free = std::pair<int64_t, int>;  // (free from, lane)
  std::priority_queue<Free, std::vector<Free>, std::greater<Free>> busy;
  std::vector<int> lane(spans.size());
  *count = 0;
  for (size_t i : order) {
    if (!busy.empty() && busy.top().first <= spans[i].first) {
      lane[i] = busy.top().second;
      busy.pop();
    } else {
      lane[i] = (*count)++;
    }
    busy.push({spans[i].second, lane[i]});
  }
  return lane;
}

}  // namespace

std::string ChromeTrace(const std::vector<NodeTimeline>& given, ChromeTraceSummary* summary) {
  std::vector<const NodeTimeline*> nodes;
  for (const NodeTimeline& n : given) nodes.push_back(&n);
  std::sort(nodes.begin(), nodes.end(),
            [](const NodeTimeline* a, const NodeTimeline* b) { return a->node < b->node; });
  ChromeTraceSummary sum;
  Writer w;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeTimeline& n = *nodes[i];
    int pid = static_cast<int>(i) + 1;
    sum.dropped += n.dropped;
    w.Meta("process_name", pid, -1, "name",
           Quote("node " + n.node.Hex().substr(0, 12) + " (" + n.hostname + ")"));
    w.Meta("process_sort_index", pid, -1, "sort_index", std::to_string(pid));
    std::string labels = n.capacity == 0 ? "timeline off"
                                         : "ring " + std::to_string(n.capacity) + " events, " +
                                               std::to_string(n.dropped) + " dropped";
    w.Meta("process_labels", pid, -1, "labels", Quote(labels));

    // The node's scheduling spans, by task and attempt; the workers' runs.
    std::map<RunKey, const TimelineRecord*> scheduled;
    std::vector<const TimelineRecord*> runs;
    for (const TimelineRecord& r : n.events) {
      if (r.kind == TimelineRecord::kScheduled) {
        scheduled[{r.Task(), r.worker_pid}] = &r;
      } else {
        runs.push_back(&r);
      }
    }
    std::map<int32_t, bool> workers;
    // Scheduling: from arrival at the node (or at the worker) until the run started.
    struct Sched {
      const TimelineRecord* r;
      int64_t start, end;
    };
    std::vector<Sched> sched;
    for (const TimelineRecord* r : runs) {
      workers[r->worker_pid] = true;
      int64_t start = r->t[0];
      auto s = scheduled.find({r->Task(), r->worker_pid});
      if (s != scheduled.end()) {
        start = std::min(start, s->second->t[0]);
        scheduled.erase(s);
      }
      sched.push_back({r, std::min(start, r->t[1]), r->t[1]});
      // The run: its phases follow one another on the worker's thread.
      int64_t t1 = r->t[1], t2 = std::max(t1, r->t[2]), t3 = std::max(t2, r->t[3]),
              t4 = std::max(t3, r->t[4]);
      const char* cat = Category(*r);
      w.Complete(r->function, cat, pid, r->worker_pid, t1, t4, *r, "run");
      w.Complete("argument fetch", cat, pid, r->worker_pid, t1, t2, *r, "argument fetch");
      w.Complete("execution", cat, pid, r->worker_pid, t2, t3, *r, "execution");
      w.Complete("result store", cat, pid, r->worker_pid, t3, t4, *r, "result store");
      ++sum.runs;
    }
    // Handed to a worker whose events are not here (dropped, or lost with the worker).
    for (auto& [key, r] : scheduled) sched.push_back({r, r->t[0], std::max(r->t[0], r->t[1])});
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (auto& s : sched) spans.push_back({s.start, s.end});
    int lanes = 0;
    std::vector<int> lane = Lanes(spans, &lanes);
    for (size_t k = 0; k < sched.size(); ++k) {
      w.Complete(sched[k].r->function, "scheduling", pid, kSchedulingTidBase + lane[k],
                 sched[k].start, sched[k].end, *sched[k].r, "scheduling");
      ++sum.scheduled;
    }
    for (int l = 0; l < lanes; ++l) {
      w.Meta("thread_name", pid, kSchedulingTidBase + l, "name",
             Quote("scheduling " + std::to_string(l)));
      w.Meta("thread_sort_index", pid, kSchedulingTidBase + l, "sort_index", std::to_string(l));
    }
    for (auto& [wpid, unused] : workers) {
      w.Meta("thread_name", pid, wpid, "name", Quote("worker " + std::to_string(wpid)));
      w.Meta("thread_sort_index", pid, wpid, "sort_index", std::to_string(100000 + wpid));
    }
  }
  std::string events = w.Take();
  std::string nodes_json;
  for (const NodeTimeline* n : nodes) {
    if (!nodes_json.empty()) nodes_json += ",";
    nodes_json += "{\"node\":\"" + n->node.Hex() + "\",\"hostname\":" + Quote(n->hostname) +
                  ",\"ring_events\":" + std::to_string(n->capacity) +
                  ",\"dropped_events\":" + std::to_string(n->dropped) + "}";
  }
  if (summary) *summary = sum;
  return "{\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"generator\":\"cumulus timeline\","
         "\"clock\":\"wall microseconds since the epoch, per machine\",\"dropped_events\":" +
         std::to_string(sum.dropped) + ",\"nodes\":[" + nodes_json + "]},\n\"traceEvents\":[\n" +
         events + "\n]}\n";
}

}  // namespace cumulus
