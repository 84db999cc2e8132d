#include "runtime/metrics/file_sd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// `what` and errno's text, with the kind a caller can act on: a missing directory is NotFound,
// a full disk ResourceExhausted, a refused write (permissions, read-only) InvalidArgument.
Status ErrnoStatus(int err, const std::string& what) {
  std::string msg = what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return Status::NotFound(msg);
    case ENOSPC:
    case EDQUOT:
      return Status::ResourceExhausted(msg);
    case EACCES:
    case EPERM:
    case EROFS:
    case EISDIR:
      return Status::InvalidArgument(msg);
    default:
      return Status::Internal(msg);
  }
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
  // mkostemp creates the temporary with O_EXCL under an unpredictable name, so a symlink planted
  // beside `path` is never followed and two writers never share a temporary; O_CLOEXEC keeps it
  // out of processes forked meanwhile (workers).
  std::string tmp = path + ".XXXXXX";
  int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot create a temporary file beside " + path);
  auto fail = [&](const std::string& what) {
    Status st = ErrnoStatus(errno, what);
    if (fd >= 0) close(fd);
    unlink(tmp.c_str());
    return st;
  };
  if (fchmod(fd, 0644) != 0) return fail("cannot set the mode of " + tmp);
  for (size_t done = 0; done < content.size();) {
    ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot write " + tmp);
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) return fail("cannot flush " + tmp);
  int closed = close(fd);
  fd = -1;
  if (closed != 0) return fail("cannot close " + tmp);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return fail("cannot rename " + tmp + " to " + path);
  return Status();
}

Result<std::unique_ptr<FileSdWriter>> FileSdWriter::Start(FileSdWriterOptions options) {
  if (options.path.empty()) return Status::InvalidArgument("metrics SD file: a path is required");
  std::unique_ptr<FileSdWriter> w(new FileSdWriter());
  w->options_ = std::move(options);
  w->written_ = RenderFileSd(w->options_.nodes(), w->options_.head_target);
  CUMULUS_RETURN_IF_ERROR(WriteFileAtomically(w->options_.path, w->written_));
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
