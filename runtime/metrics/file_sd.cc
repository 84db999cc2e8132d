#include "runtime/metrics/file_sd.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "runtime/autoscaler/cluster_config.h"
#include "runtime/base/logging.h"

namespace cumulus::metrics {

namespace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

std::string RenderFileSd(const std::vector<NodeRecord>& nodes, const std::string& head_target) {
  std::map<std::string, std::set<std::string>> by_type;
  std::set<std::string> listed;
  for (auto& n : nodes) {
    if (n.state != NodeState::kAlive || n.metrics_address.empty()) continue;
    if (!listed.insert(n.metrics_address).second) continue;  // one group per target
    auto type = n.labels.find(kNodeTypeLabel);
    by_type[type == n.labels.end() ? "static" : type->second].insert(n.metrics_address);
  }
  if (!head_target.empty() && !listed.count(head_target)) by_type["head"].insert(head_target);
  std::string out = "[";
  bool first_group = true;
  for (auto& [type, targets] : by_type) {
    out += first_group ? "\n  " : ",\n  ";
    first_group = false;
    out += "{\"targets\": [";
    bool first = true;
    for (auto& t : targets) {
      if (!first) out += ", ";
      first = false;
      out += JsonString(t);
    }
    out += "], \"labels\": {\"node_type\": " + JsonString(type) + "}}";
  }
  return out + (first_group ? "]\n" : "\n]\n");
}

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return Status::InvalidArgument("cannot write " + tmp +
                                     " (does its directory exist and is it writable?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::InvalidArgument("cannot rename " + tmp + " to " + path);
  }
  return Status();
}

Result<std::unique_ptr<FileSdWriter>> FileSdWriter::Start(FileSdWriterOptions options) {
  if (options.path.empty()) return Status::InvalidArgument("metrics SD file: a path is required");
  std::unique_ptr<FileSdWriter> w(new FileSdWriter());
  w->options_ = std::move(options);
  w->written_ = RenderFileSd(w->options_.nodes(), w->options_.head_target);
  CUMULUS_RETURN_IF_ERROR(WriteFileAtomically(w->options_.path, w->written_)
                              .WithContext("--metrics-sd-file " + w->options_.path));
  w->thread_ = std::thread([p = w.get()] { p->Run(); });
  return w;
}

FileSdWriter::~FileSdWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FileSdWriter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, options_.interval, [this] { return stop_; })) {
    lock.unlock();
    std::string now = RenderFileSd(options_.nodes(), options_.head_target);
    if (now != written_) {
      Status st = WriteFileAtomically(options_.path, now);
      if (st.ok()) {
        written_ = std::move(now);
      } else {
        CUMULUS_LOG(WARN) << "metrics SD file: " << st;  // tried again next time
      }
    }
    lock.lock();
  }
}

}  // namespace cumulus::metrics
