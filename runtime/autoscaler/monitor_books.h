// MonitorBooks: what the autoscaler's monitor must not forget when it (or the head) restarts, kept
// in the head's control store (KV namespace "autoscaler", key "books") so that a restarted monitor
// neither launches duplicates nor forgets what was spent or which types are backed off:
//   - the instances it launched and has not seen end (provider, type, when, draining or not),
//   - the money spent so far, per type, and until when it was counted,
//   - each type's launch history (failures in a row, the last error) and failed launches in all.
// A plain value with a line-based text encoding (one record per line, fields separated by
// spaces, the error text last); Decode of text Encode wrote gives the same books back. Fields
// are only ever added at the end of a line, optional on reading: books an older monitor wrote
// read back (an instance line without `registered` reads as not registered), and an older
// monitor reads newer books (it ignores what follows the fields it knows).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "cumulus/status.h"
#include "scheduler/autoscale/snapshot.h"

namespace cumulus {

inline constexpr const char* kAutoscalerNamespace = "autoscaler";
inline constexpr const char* kBooksKey = "books";               // MonitorBooks, encoded
inline constexpr const char* kStatusTextKey = "status.txt";     // for `cumulus status`
inline constexpr const char* kStatusJsonKey = "status.json";    // for `cumulus status --json`
inline constexpr const char* kClusterFileKey = "cluster_file";  // the path `cumulus up` was given
inline constexpr const char* kClusterTextKey = "cluster_text";  // that file's text, as up read it
inline constexpr const char* kCommandKey = "command";           // "down": the monitor stops
inline constexpr const char* kDrainPrefix = "drain/";           // drain/NODE_HEX: drain that node
inline constexpr const char* kOwnerKey = "owner";  // which process runs the monitor: OwnerRecord

struct LaunchedInstance {
  std::string id;        // the provider's instance id
  std::string type;      // node type name
  std::string provider;  // provider name
  int64_t launched_micros = 0;
  bool draining = false;  // the policy (or `cumulus drain`) drained it: terminated once idle
  // Its node was seen ALIVE (registered with its cumulus.instance_id): from then on it is never
  // a launch, and its end (the node died, or the provider lists it ended) is no launch failure.
  bool registered = false;
};

struct TypeBooks {
  double spend = 0;         // money spent on this type's nodes so far
  int failed_launches = 0;  // in all (shown by `cumulus status`)
  autoscale::LaunchHistory history;
  // The launch (its asked-for time, as the instances' launched_micros) whose failure was last
  // counted in history.failures_in_a_row; 0: none, or a failure not tied to one launch.
  int64_t last_failed_launch = 0;

  // `count` nodes of the launch asked for at `launch_micros` failed (0: not tied to one launch)
  // with `error`, at `now_micros`. One launch is one failure in a row, however many of its nodes
  // fail and however they are found (the call's error, each instance timing out or listed as
  // failed): counted per node, a launch of 5 that never came up raised the backoff 5 times.
  // A later node of a launch already counted adds to failed_launches and updates the error, and
  // leaves the backoff where it was.
  void CountFailure(int count, int64_t launch_micros, int64_t now_micros, const std::string& error);
};

struct MonitorBooks {
  std::map<std::string, LaunchedInstance> instances;  // by instance id; live ones only
  std::map<std::string, TypeBooks> types;             // by type name
  int64_t spend_until_micros = 0;                     // spend is counted up to this wall-clock time

  double TotalSpend() const;
  // Adds price x time to each type's spend for its instances from spend_until (or their launch)
  // to `now_micros`, and moves spend_until there. `price_per_hour` by type name.
  void Accrue(int64_t now_micros, const std::map<std::string, double>& price_per_hour);
};

// One monitor per cluster: two would each launch for the same demand (twice the nodes, past a
// type's max and the budget). `cumulus up` claims kOwnerKey before it starts one, and the monitor
// refreshes it every round: "pid=P host=H round_ms=R seen=WALL_MICROS start=TICKS".
std::string OwnerRecord(int pid, int64_t round_ms, int64_t seen_micros);
// Whether the record names a monitor that still runs: on this host, its process is alive and
// started when the record says (a dead monitor's pid given to another process is not it);
// elsewhere, it refreshed the record within 3 rounds + 10 s of `now_micros`.
bool OwnerAlive(const std::string& record, int64_t now_micros);
// The record's pid (0 if it has none).
int OwnerPid(const std::string& record);
// Process `pid`'s start time (/proc/PID/stat's starttime, clock ticks since boot); "" if unknown.
std::string ProcessStart(int pid);

std::string EncodeBooks(const MonitorBooks& books);
// InvalidArgument naming the line if `text` is not what EncodeBooks writes.
Result<MonitorBooks> DecodeBooks(const std::string& text);

}  // namespace cumulus
