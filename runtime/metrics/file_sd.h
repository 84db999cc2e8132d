// Prometheus service discovery through a file (file_sd_configs): the head lists the metrics
// endpoints its alive nodes published when they registered (NodeRecord::metrics_address), grouped
// by node type, as
//   [{"targets": ["127.0.0.1:9101", ...], "labels": {"node_type": "cpu-cloud"}}, ...]
// Nodes the autoscaler did not launch are under node_type "static"; the head's own endpoint,
// unless a node (its own) publishes the same address, under node_type "head".
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/head/membership.h"

namespace cumulus::metrics {

// The file's JSON for `nodes` (only alive ones with an address count) and `head_target` (""
// for none). Groups and targets are sorted, so equal inputs give equal bytes.
std::string RenderFileSd(const std::vector<NodeRecord>& nodes, const std::string& head_target);

// Writes `content` to `path` atomically: a temporary file beside it (mkstemp, O_EXCL, so no
// planted symlink is followed), mode 0644, written fully and fsync'd, then renamed over `path`, so
// a reader sees the old file or the new one, never a part. On any failure the temporary is
// removed and the error names the file and errno's text: NotFound for a missing directory,
// InvalidArgument for one that cannot be written, ResourceExhausted for a full disk.
Status WriteFileAtomically(const std::string& path, const std::string& content);

struct FileSdWriterOptions {
  std::string path;         // required: the file Prometheus reads
  std::string head_target;  // the head's own endpoint, "" for none
  // The nodes as the head published them (HeadServer::PublishedNodes, at most a second old).
  std::function<std::vector<NodeRecord>()> nodes;
  Duration interval = std::chrono::milliseconds(500);  // how often it looks for a change
};

// Keeps `path` up to date on a thread of its own: written at Start, then rewritten whenever the
// list changes (a node joined, left or died). The file is left in place at the end (Prometheus
// keeps its last targets; a restarted head rewrites it).
class FileSdWriter {
 public:
  // An error naming the path if the first write fails (NotFound for a directory that does not
  // exist; see WriteFileAtomically).
  static Result<std::unique_ptr<FileSdWriter>> Start(FileSdWriterOptions options);
  ~FileSdWriter();  // stops the thread

 private:
  FileSdWriter() = default;
  void Run();

  FileSdWriterOptions options_;
  std::string written_;  // what the file holds now (the thread's)
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace cumulus::metrics
