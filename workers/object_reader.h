// Reading an object in a driver or worker: from this node's store, pulled first from the node
// that holds it if that is another. A copy that is gone (its node died, or it was evicted; or it
// was in this node's store, and that store is gone) is ObjectLost, so that its owner may rebuild it
// from lineage; other failures (this store is full) keep their own code.
#pragma once

#include <string>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/object_store/store_client.h"

namespace cumulus {

// Object `id`, read from `store` (this node's, `here`); pulled from `from` (host:port of the
// holding node's object channel, authenticated with `token`) first if `pull`. Waits up to 3 s for a
// copy of the object that another thread or process of this node is still writing to be sealed.
Result<ObjectBuffer> ReadObject(StoreClient& store, const std::string& token, const NodeId& here,
                                const ObjectId& id, bool pull, const std::string& from);

}  // namespace cumulus
