#include "runtime/node/object_handoff.h"

#include <algorithm>
#include <cstdio>

#include "runtime/base/logging.h"
#include "runtime/core/messages.h"
#include "runtime/head/control_client.h"
#include "runtime/transfer/object_transfer.h"

namespace cumulus {

namespace {

std::string Objects(size_t n) { return std::to_string(n) + (n == 1 ? " object" : " objects"); }

std::string MiB(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace

ObjectHandoff::~ObjectHandoff() {
  canceller_.Cancel();
  if (thread_.joinable()) thread_.join();
}

std::string ObjectHandoff::Step(const std::vector<NodeRecord>& nodes, size_t objects) {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) return note_;
  if (thread_.joinable()) thread_.join();  // the last round ended
  if (objects == 0) return "";
  if (!note_.empty() && options_.clock->Now() < retry_at_) return note_;
  // Takers: alive nodes that are not draining and have an object channel, in id order (so that
  // a rotation after a failure visits each in turn).
  std::vector<const NodeRecord*> takers;
  for (const NodeRecord& n : nodes) {
    if (n.id != options_.self && n.state == NodeState::kAlive && !n.draining &&
        !n.object_store_address.empty()) {
      takers.push_back(&n);
    }
  }
  if (takers.empty()) {
    note_.clear();
    return "waiting for " + Objects(objects) +
           ": no other alive node that is not draining can take them";
  }
  std::sort(takers.begin(), takers.end(),
            [](const NodeRecord* a, const NodeRecord* b) { return a->id < b->id; });
  NodeRecord to = *takers[next_candidate_ % takers.size()];
  running_ = true;
  note_ = "waiting for " + Objects(objects) + ": handing them to node " + to.id.Hex().substr(0, 8);
  thread_ = std::thread([this, to] { Round(to); });
  return note_;
}

void ObjectHandoff::Round(NodeRecord to) {
  std::vector<ObjectId> ids;
  uint64_t bytes = 0;
  options_.store->ForEachSealed([&](const ObjectStore::Listed& l) {
    ids.push_back(l.id);
    bytes += l.size;
  });
  // "waiting for" first: the autoscaler reads a note so (a node that holds the only copy).
  std::string head = "waiting for " + Objects(ids.size()) + ": handing them (" + MiB(bytes) +
                     ") to node " + to.id.Hex().substr(0, 8);
  {
    std::lock_guard<std::mutex> lock(mu_);
    note_ = head;
  }
  if (options_.ledger) options_.ledger->Begin(ids);
  TimePoint start = options_.clock->Now();
  std::vector<ObjectId> gone;
  Status st;
  size_t taken = 0;  // how many of `ids` the taker has answered for, in order
  auto hp = ParseHostPort(to.object_store_address);
  if (!hp.ok()) {
    st = hp.status();
  } else {
    FetchOptions fetch;
    fetch.canceller = &canceller_;
    st = FetchObjects(
        *hp, options_.token, ids, options_.self_transfer, fetch,
        [&](size_t done) {
          taken = done;
          std::lock_guard<std::mutex> lock(mu_);
          note_ = head + ": " + std::to_string(done) + " done";
        },
        &gone);
  }
  // What the taker holds now counts as moved even when the round failed partway (its store
  // full, the connection lost): recorded and announced below like a whole round, so the copies
  // it took have owners that free them; the rest are tried again.
  std::vector<ObjectId> moved;
  for (size_t i = 0; i < taken && i < ids.size(); ++i) {
    if (std::find(gone.begin(), gone.end(), ids[i]) == gone.end()) moved.push_back(ids[i]);
  }
  // Those whose owners freed them here while the taker took them are no moves: the taker's
  // copies are freed too (a free after this point is kept by the ledger until Commit).
  std::vector<ObjectId> freed =
      options_.ledger ? options_.ledger->End(to.id, moved) : std::vector<ObjectId>();
  if (!freed.empty()) {
    moved.erase(std::remove_if(moved.begin(), moved.end(),
                               [&](const ObjectId& id) {
                                 return std::find(freed.begin(), freed.end(), id) != freed.end();
                               }),
                moved.end());
    if (options_.free_on) options_.free_on(to.id, freed);
    CUMULUS_LOG(INFO) << "node " << options_.self << ": " << Objects(freed.size())
                      << " freed while node " << to.id << " took them; freed there too";
  }
  const Status fetched = st;
  st = Status();
  size_t handed = 0;
  // The head learns each move before this copy goes: an owner whose read here fails finds it.
  if (!moved.empty()) {
    ControlClientOptions o;
    o.role = "node";
    o.request_timeout = std::chrono::seconds(3);
    auto client = ControlClient::Connect(options_.head, options_.token, o);
    st = client.status();
    std::string value = ObjectMoveValue({to.id, to.object_store_address});
    size_t written = 0;
    for (; st.ok() && written < moved.size(); ++written) {
      st = (*client)->KvPut(kObjectMovesNamespace, ObjectMoveKey(moved[written]), value).status();
    }
    if (!st.ok()) {
      // The taker's copies go (below): the records already written (and the one that failed,
      // which the head may have applied) would send readers to copies that are gone. Best
      // effort, stopping at the first failure (a head that does not answer would cost a
      // timeout per record): a record left behind costs a reader one lookup, then it looks
      // elsewhere.
      if (client.ok()) {
        for (size_t i = 0; i < written && i < moved.size(); ++i) {
          if (!(*client)->KvDelete(kObjectMovesNamespace, ObjectMoveKey(moved[i])).ok()) break;
        }
      }
      st = st.WithContext("recording the moves at the head");
    }
  }
  // Frees that came while the head recorded the moves; or, if it could not, all the taker took:
  // the copies here stay and are handed on again (maybe to another taker), so the taker's go.
  std::vector<ObjectId> free_there;
  if (options_.ledger) {
    free_there = options_.ledger->Commit(st.ok());
  } else if (!st.ok()) {
    free_there = moved;
  }
  if (!free_there.empty()) {
    if (options_.free_on) options_.free_on(to.id, free_there);
    moved.erase(std::remove_if(moved.begin(), moved.end(),
                               [&](const ObjectId& id) {
                                 return std::find(free_there.begin(), free_there.end(), id) !=
                                        free_there.end();
                               }),
                moved.end());
  }
  if (st.ok()) {
    if (options_.on_moved && !moved.empty())
      options_.on_moved(to.id, to.object_store_address, moved);
    for (const ObjectId& id : moved) (void)options_.store->Delete(id);
    moved_ += moved.size();
    handed = moved.size();
    double s = std::chrono::duration<double>(options_.clock->Now() - start).count();
    CUMULUS_LOG(INFO) << "node " << options_.self << ": handed " << Objects(moved.size()) << " of "
                      << Objects(ids.size()) << " (" << MiB(bytes) << " in all) to node " << to.id
                      << " in " << s << " s";
  }
  if (st.ok()) st = fetched;
  if (!st.ok() && canceller_.cancelled()) {
    CUMULUS_LOG(WARN) << "node " << options_.self
                      << ": stopping in the middle of handing objects to node " << to.id << "; the "
                      << Objects(ids.size() - handed - freed.size())
                      << " it did not take stay here and go with this node";
  } else if (!st.ok()) {
    CUMULUS_LOG(WARN) << "node " << options_.self << ": handing objects to node " << to.id
                      << " failed: " << st << "; keeping the rest and trying again";
  }
  std::lock_guard<std::mutex> lock(mu_);
  running_ = false;
  if (st.ok()) {
    note_.clear();
    next_candidate_ = 0;
  } else {
    note_ = "waiting for " + Objects(ids.size() - handed - freed.size()) +
            ": handing them to node " + to.id.Hex().substr(0, 8) + " failed (" + st.message() +
            "); trying again";
    retry_at_ = options_.clock->Now() + options_.retry_after;
    ++next_candidate_;
  }
}

}  // namespace cumulus
