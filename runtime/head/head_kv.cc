// The head's key-value store: put, get, delete, list and wait, in the control store's key-value
// table (key: namespace, NUL, key), and answering the waits a put satisfies.
#include <capnp/message.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "runtime/head/head_loop.h"

namespace cumulus {

namespace {

std::string KvKey(const std::string& ns, const std::string& key) { return ns + '\0' + key; }

}  // namespace

void HeadServer::Loop::HandleKvPut(Conn& c, uint64_t request_id, proto::KvPut::Reader put) {
  std::string key = KvKey(put.getNamespace(), put.getKey());
  auto existing = store_->Get(ControlTable::kKeyValue, key);
  if (!existing.ok()) return SendError(c, request_id, existing.status(), false);
  bool existed = existing->has_value();
  if (!existed || put.getOverwrite()) {
    auto v = put.getValue();
    std::string value(reinterpret_cast<const char*>(v.begin()), v.size());
    Status st = store_->Put(ControlTable::kKeyValue, key, value);
    if (!st.ok()) return SendError(c, request_id, st, false);
    WakeWaiters(key, value);
  }
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<proto::ControlReply>();
  reply.setRequestId(request_id);
  reply.setExisted(existed);
  Send(c, message);
}

void HeadServer::Loop::HandleKvGetDelete(Conn& c, uint64_t request_id, bool is_delete,
                                         proto::KvKey::Reader k) {
  std::string key = KvKey(k.getNamespace(), k.getKey());
  auto existing = store_->Get(ControlTable::kKeyValue, key);
  if (!existing.ok()) return SendError(c, request_id, existing.status(), false);
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<proto::ControlReply>();
  reply.setRequestId(request_id);
  if (is_delete) {
    if (existing->has_value()) {
      Status st = store_->Delete(ControlTable::kKeyValue, key);
      if (!st.ok()) return SendError(c, request_id, st, false);
    }
    reply.setExisted(existing->has_value());
  } else {
    if (!existing->has_value()) {
      return SendError(
          c, request_id,
          Status::NotFound("key '" + std::string(k.getKey().cStr()) + "' not found in namespace '" +
                           std::string(k.getNamespace().cStr()) + "'"),
          false);
    }
    reply.setValue(capnp::Data::Reader(reinterpret_cast<const uint8_t*>((*existing)->data()),
                                       (*existing)->size()));
  }
  Send(c, message);
}

void HeadServer::Loop::HandleKvList(Conn& c, uint64_t request_id, proto::KvList::Reader l) {
  constexpr uint32_t kMaxEntries = 10000;
  constexpr size_t kMaxBytes = 8u << 20;  // well under a frame
  std::string ns_prefix = KvKey(l.getNamespace(), "");
  std::string prefix = ns_prefix + std::string(l.getPrefix());
  std::string after = l.getStartAfter();
  std::string from = after.empty() ? prefix : std::max(prefix, ns_prefix + after);
  uint32_t limit = std::min<uint32_t>(l.getLimit() == 0 ? kMaxEntries : l.getLimit(), kMaxEntries);
  bool keys_only = l.getKeysOnly();
  std::vector<std::pair<std::string, std::string>> found;
  size_t bytes = 0;
  bool more = false;
  Status st = store_->ScanFrom(
      ControlTable::kKeyValue, from, [&](const std::string& key, const std::string& value) {
        if (key.compare(0, prefix.size(), prefix) != 0) return false;
        std::string k = key.substr(ns_prefix.size());
        if (!after.empty() && k <= after) return true;
        if (found.size() >= limit || bytes > kMaxBytes) {
          more = true;
          return false;
        }
        bytes += k.size() + (keys_only ? 0 : value.size());
        found.emplace_back(std::move(k), keys_only ? std::string() : value);
        return true;
      });
  if (!st.ok()) return SendError(c, request_id, st, false);
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<proto::ControlReply>();
  reply.setRequestId(request_id);
  auto e = reply.initEntries();
  e.setMore(more);
  auto list = e.initEntries(static_cast<unsigned>(found.size()));
  for (unsigned i = 0; i < found.size(); ++i) {
    list[i].setKey(found[i].first);
    list[i].setValue(capnp::Data::Reader(reinterpret_cast<const uint8_t*>(found[i].second.data()),
                                         found[i].second.size()));
  }
  Send(c, message);
}

void HeadServer::Loop::HandleKvWait(Conn& c, uint64_t request_id, proto::KvWait::Reader w) {
  std::string key = KvKey(w.getNamespace(), w.getKey());
  auto existing = store_->Get(ControlTable::kKeyValue, key);
  if (!existing.ok()) return SendError(c, request_id, existing.status(), false);
  if (existing->has_value()) return SendValue(c, request_id, **existing);
  waiters_.emplace(key,
                   Waiter{c.id, request_id, key,
                          SystemClock::Get().Now() + std::chrono::milliseconds(w.getTimeoutMs())});
}

void HeadServer::Loop::SendValue(Conn& c, uint64_t request_id, const std::string& value) {
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<proto::ControlReply>();
  reply.setRequestId(request_id);
  reply.setValue(capnp::Data::Reader(reinterpret_cast<const uint8_t*>(value.data()), value.size()));
  Send(c, message);
}

// Answers the waits for `key` (found by key: a put costs what waits on it, not every wait).
void HeadServer::Loop::WakeWaiters(const std::string& key, const std::string& value) {
  auto [first, last] = waiters_.equal_range(key);
  for (auto it = first; it != last; ++it) {
    auto conn = conns_.find(it->second.conn);
    if (conn != conns_.end()) SendValue(conn->second, it->second.request_id, value);
  }
  waiters_.erase(first, last);
}

}  // namespace cumulus
