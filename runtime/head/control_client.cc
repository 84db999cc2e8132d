#include "runtime/head/control_client.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <unistd.h>

#include <functional>

#include "runtime/base/numeric.h"
#include "runtime/head/node_codec.h"
#include "runtime/proto/control.capnp.h"

namespace cumulus {

// One request and its reply. REQUIRES: the client's mutex is held.
class ControlClient::Call {
 public:
  explicit Call(ControlClient* c, Duration timeout) : c_(c), timeout_(timeout) {
    request_ = message_.initRoot<proto::ControlRequest>();
    request_.setRequestId(c->next_request_++);
  }
  proto::ControlRequest::Builder request() { return request_; }

  Status Run(const std::function<Status(proto::ControlReply::Reader)>& on_reply) {
    TimePoint deadline = SystemClock::Get().Now() + timeout_;
    std::string where = "the head at " + c_->head_.ToString();
    if (c_->broken_) {
      return Status::Unavailable("the connection to " + where +
                                 " broke in an earlier call; reconnect");
    }
    Status sent = WriteFrame(c_->fd_, message_, deadline);
    if (!sent.ok()) {
      c_->broken_ = true;  // part of a frame may be on the wire: nothing more can follow it
      return sent.WithContext(where);
    }
    while (true) {
      auto words = ReadFrame(c_->fd_, c_->decoder_, deadline);
      if (!words.ok()) {
        c_->broken_ = true;
        return words.status().WithContext(where);
      }
      try {
        capnp::ReaderOptions limits;
        limits.traversalLimitInWords = words->size() + 1024;
        capnp::FlatArrayMessageReader reader(*words, limits);
        auto reply = reader.getRoot<proto::ControlReply>();
        if (reply.getRequestId() != request_.getRequestId() && reply.getRequestId() != 0) {
          continue;  // a late reply to an earlier request that timed out
        }
        if (reply.getCode() != 0) {
          return Status(static_cast<StatusCode>(reply.getCode()), reply.getMessage().cStr());
        }
        return on_reply ? on_reply(reply) : Status();
      } catch (const kj::Exception& e) {
        return Status::Internal("malformed reply from " + where + ": " + e.getDescription().cStr());
      }
    }
  }

 private:
  ControlClient* c_;
  Duration timeout_;
  capnp::MallocMessageBuilder message_;
  proto::ControlRequest::Builder request_{nullptr};
};

Result<std::unique_ptr<ControlClient>> ControlClient::Connect(const HostPort& head,
                                                              const std::string& token,
                                                              const ControlClientOptions& options) {
  auto fd = ConnectTcp(head, options.connect_timeout);
  if (!fd.ok()) {
    return Status(
        fd.status().code(),
        "cannot reach the head: " + fd.status().message() +
            " (is it running? start one with 'cumulus start --head' or 'cumulus up FILE')");
  }
  std::unique_ptr<ControlClient> client(new ControlClient(*fd, head, options));
  std::lock_guard<std::mutex> lock(client->mu_);
  Call call(client.get(), options.connect_timeout);
  auto hello = call.request().initHello();
  hello.setToken(token);
  hello.setRole(options.role);
  hello.setProtocolVersion(proto::PROTOCOL_VERSION);
  CUMULUS_RETURN_IF_ERROR(call.Run(nullptr));
  return client;
}

ControlClient::~ControlClient() { close(fd_); }

Result<Duration> ControlClient::RegisterNode(const NodeRecord& node) {
  std::lock_guard<std::mutex> lock(mu_);
  Call call(this, options_.request_timeout);
  EncodeNode(node, call.request().initRegisterNode());
  Duration interval{};
  CUMULUS_RETURN_IF_ERROR(call.Run([&](proto::ControlReply::Reader reply) {
    // As `cumulus start --heartbeat-interval-ms` takes it: a head saying 0 (a busy loop) or days
    // (declared dead between two heartbeats) is refused.
    uint32_t ms = reply.getRegistered().getHeartbeatIntervalMs();
    CUMULUS_RETURN_IF_ERROR(
        CheckInteger("the head's heartbeat interval", ms, {1, 3'600'000, "milliseconds"}));
    interval = std::chrono::milliseconds(ms);
    return Status();
  }));
  return interval;
}

Result<bool> ControlClient::Heartbeat(const NodeId& id, const ResourceSet& available,
                                      const DemandList& pending_demand, ViewCursor* view,
                                      bool* view_changed, const std::string& drain_note,
                                      uint32_t work) {
  if (view_changed) *view_changed = false;
  std::lock_guard<std::mutex> lock(mu_);
  Call call(this, options_.request_timeout);
  auto hb = call.request().initHeartbeat();
  hb.setNodeId(capnp::Data::Reader(id.data(), NodeId::kSize));
  auto list = hb.initResourcesAvailable(static_cast<unsigned>(available.units().size()));
  unsigned i = 0;
  for (auto& [name, units] : available.units()) {
    list[i].setName(name);
    list[i].setAmount(static_cast<double>(units) / ResourceSet::kUnit);
    ++i;
  }
  EncodeDemand(pending_demand, hb.initPendingDemand(static_cast<unsigned>(pending_demand.size())));
  hb.setDrainNote(drain_note);
  hb.setWork(work);
  if (view) {
    hb.setWantView(true);
    hb.setViewEpoch(view->epoch);
    hb.setViewVersion(view->version);
  }
  bool known = false;
  CUMULUS_RETURN_IF_ERROR(call.Run([&](proto::ControlReply::Reader reply) {
    auto ack = reply.getHeartbeatAck();
    known = ack.getKnown();
    if (!view || !ack.hasView()) return Status();
    auto delta = ack.getView();
    auto nodes = delta.getNodes();  // once: each read of a list counts against the limit
    if (delta.getFull()) view->nodes.clear();
    bool unreadable = false;
    for (auto n : nodes) {
      auto node = DecodeNode(n);
      if (node.ok()) {
        view->nodes[node->id] = std::move(*node);
      } else {
        unreadable = true;
      }
    }
    bool changed = delta.getFull() || nodes.size() > 0;
    view->epoch = delta.getEpoch();
    // A record it could not read: ask for the whole cluster next time rather than miss it.
    view->version = unreadable ? 0 : delta.getVersion();
    if (view_changed) *view_changed = changed;
    return Status();
  }));
  return known;
}

Result<ClusterView> ControlClient::GetClusterStatus() {
  std::lock_guard<std::mutex> lock(mu_);
  Call call(this, options_.request_timeout);
  call.request().setClusterStatus();
  ClusterView view;
  CUMULUS_RETURN_IF_ERROR(call.Run([&](proto::ControlReply::Reader reply) -> Status {
    auto s = reply.getStatus();
    view.cluster_id = s.getClusterId();
    view.head_started_micros = s.getHeadStartedMicros();
    view.heartbeats_received = s.getHeartbeatsReceived();
    view.kv_waiters = s.getKvWaiters();
    view.view_version = s.getViewVersion();
    for (auto n : s.getNodes()) {
      auto node = DecodeNode(n);
      if (node.ok()) view.nodes.push_back(std::move(*node));
    }
    return Status();
  }));
  return view;
}

namespace {
template <typename B>
void SetKey(B b, const std::string& ns, const std::string& key) {
  b.setNamespace(ns);
  b.setKey(key);
}
std::string ValueOf(proto::ControlReply::Reader reply) {
  auto v = reply.getValue();
  return std::string(reinterpret_cast<const char*>(v.begin()), v.size());
}
}  // namespace

Result<bool> ControlClient::KvPut(const std::string& ns, const std::string& key,
                                  const std::string& value, bool overwrite) {
  std::lock_guard<std::mutex> lock(mu_);
  Call call(this, options_.request_timeout);
  auto put = call.request().initKvPut();
  SetKey(put, ns, key);
  put.setValue(capnp::Data::Reader(reinterpret_cast<const uint8_t*>(value.data()), value.size()));
  put.setOverwrite(overwrite);
  bool existed = false;
  CUMULUS_RETURN_IF_ERROR(call.Run([&](proto::ControlReply::Reader reply) {
    existed = reply.getExisted();
    return Status();
  }));
  return existed;
}

Result<std::string> ControlClient::KvGet(const std::string& ns, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  Call call(this, options_.request_timeout);
  SetKey(call.request().initKvGet(), ns, key);
  std::string value;
  CUMULUS_RETURN_IF_ERROR(call.Run([&](proto::ControlReply::Reader reply) {
    value = ValueOf(reply);
    return Status();
  }));
  return value;
}

Status ControlClient::DrainNode(const NodeId& id, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  Call call(this, options_.request_timeout);
  auto d = call.request().initDrainNode();
  d.setNodeId(capnp::Data::Reader(id.data(), NodeId::kSize));
  d.setReason(reason);
  return call.Run([](proto::ControlReply::Reader) { return Status(); });
}

Status ControlClient::Leave(const NodeId& id, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  Call call(this, options_.request_timeout);
  auto l = call.request().initLeaving();
  l.setNodeId(capnp::Data::Reader(id.data(), NodeId::kSize));
  l.setReason(reason);
  return call.Run([](proto::ControlReply::Reader) { return Status(); });
}

Result<bool> ControlClient::KvDelete(const std::string& ns, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  Call call(this, options_.request_timeout);
  SetKey(call.request().initKvDelete(), ns, key);
  bool existed = false;
  CUMULUS_RETURN_IF_ERROR(call.Run([&](proto::ControlReply::Reader reply) {
    existed = reply.getExisted();
    return Status();
  }));
  return existed;
}

Result<ControlClient::KvPage> ControlClient::KvList(const std::string& ns,
                                                    const std::string& prefix,
                                                    const std::string& start_after, uint32_t limit,
                                                    bool keys_only) {
  std::lock_guard<std::mutex> lock(mu_);
  Call call(this, options_.request_timeout);
  auto l = call.request().initKvList();
  l.setNamespace(ns);
  l.setPrefix(prefix);
  l.setStartAfter(start_after);
  l.setLimit(limit);
  l.setKeysOnly(keys_only);
  KvPage page;
  CUMULUS_RETURN_IF_ERROR(call.Run([&](proto::ControlReply::Reader reply) {
    if (!reply.isEntries()) return Status::Internal("the head answered kvList without entries");
    auto e = reply.getEntries();
    page.more = e.getMore();
    for (auto entry : e.getEntries()) {
      auto v = entry.getValue();
      page.entries.emplace_back(entry.getKey(),
                                std::string(reinterpret_cast<const char*>(v.begin()), v.size()));
    }
    return Status();
  }));
  return page;
}

Result<std::string> ControlClient::KvWait(const std::string& ns, const std::string& key,
                                          Duration timeout) {
  // The wire holds 0 to 2^32 - 1 ms (49 days): a timeout beyond is that long, a negative one 0,
  // never a wrapped value.
  auto ms = SaturatingCast<uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
  std::lock_guard<std::mutex> lock(mu_);
  Call call(this, std::chrono::milliseconds(ms) + std::chrono::seconds(5));
  auto w = call.request().initKvWait();
  SetKey(w, ns, key);
  w.setTimeoutMs(ms);
  std::string value;
  CUMULUS_RETURN_IF_ERROR(call.Run([&](proto::ControlReply::Reader reply) {
    value = ValueOf(reply);
    return Status();
  }));
  return value;
}

}  // namespace cumulus
