#include "workers/object_reader.h"

#include <chrono>

#include "runtime/net/tcp.h"
#include "runtime/transfer/object_transfer.h"

namespace cumulus {

namespace {
// How long a read waits for a copy that another thread or process is still writing here.
constexpr Duration kWaitForSeal = std::chrono::seconds(3);
}  // namespace

Result<ObjectBuffer> ReadObject(StoreClient& store, const std::string& token, const NodeId& here,
                                const ObjectId& id, bool pull, const std::string& from) {
  if (pull) {
    auto have = store.Contains(id);
    if (!have.ok()) return have.status();
    if (!*have) {
      CUMULUS_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(from));
      Status st = PullObject(hp, token, id, PullInto(store));
      if (!st.ok() && st.code() != StatusCode::kAlreadyExists) {
        // Not there, or its node cannot be reached: the copy is lost (its owner may rebuild
        // it). Other errors (this store is full) are not a loss.
        bool lost = st.code() == StatusCode::kNotFound || st.code() == StatusCode::kUnavailable;
        return Status(lost ? StatusCode::kObjectLost : st.code(),
                      "cannot fetch object " + id.Hex() + " from " + from + ": " + st.message());
      }
    }
  }
  // Another thread or process of this node may be pulling it: the store answers once it is sealed.
  auto got = store.Get(id, kWaitForSeal);
  if (!got.ok() && got.status().code() == StatusCode::kNotFound) {
    return Status::ObjectLost("object " + id.Hex() + " is no longer in the store of node " +
                              here.Hex());
  }
  // The only copy was in this node's store, and the store is gone (its node died).
  if (!got.ok() && !pull && store.broken()) {
    return Status::ObjectLost("object " + id.Hex() + " was in the store of node " + here.Hex() +
                              ", which is gone (" + got.status().message() + ")");
  }
  return got;
}

}  // namespace cumulus
