// HandoffLedger: which of a draining node's objects were handed on, and to which node, so that
// an owner's free that races a handoff round also frees the taker's copy. The owner frees where
// it believes the object lives; until it hears of the move that is the draining node, so:
//   - a free that arrives while a round hands the object on deletes the copy here and is kept in
//     the ledger; when the round ends, the object is not recorded as moved, and the copy the
//     taker took is freed there (End, and Commit for frees while the head records the moves);
//   - a free that arrives after the round (the copy here is gone already) is forwarded to the
//     node the object went to (Freed);
//   - if the head could not record the moves, the copies stay here (tried again next round,
//     maybe to another taker) and the taker's copies are freed: they are no moves (Commit).
//
// Thread-safe: the node's event loop reports frees, the handoff's thread begins and ends rounds.
#pragma once

#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cumulus/ids.h"

namespace cumulus {

class HandoffLedger {
 public:
  // A round starts handing `ids` on.
  void Begin(const std::vector<ObjectId>& ids);
  // The owners freed `ids` on this node (its copies are deleted). Returns those already handed
  // on, each with the node that holds it now, whose copy must be freed there too; those of the
  // round under way are kept for End.
  std::vector<std::pair<ObjectId, NodeId>> Freed(const std::vector<ObjectId>& ids);
  // The taker's part of the round ended; `to` holds `taken` now. Returns those of them that were
  // freed while the round ran (they are not moves: free them at `to`); frees of the others are
  // still kept for Commit.
  std::vector<ObjectId> End(const NodeId& to, const std::vector<ObjectId>& taken);
  // The head recorded the moves of the round (`recorded`) or could not. Returns what is to be
  // freed at the taker: if recorded, those freed since End (the others count as handed on to
  // it); if not, all it took less those End returned (none counts as handed on: the copies here
  // are kept and handed on again later).
  std::vector<ObjectId> Commit(bool recorded);

 private:
  std::mutex mu_;
  std::unordered_set<ObjectId> in_round_;        // the round under way hands these on
  std::unordered_set<ObjectId> freed_in_round_;  // of those, freed meanwhile
  NodeId taker_;                                 // after End: who took in_round_
  std::unordered_map<ObjectId, NodeId> handed_;  // handed on, and to whom
};

}  // namespace cumulus
