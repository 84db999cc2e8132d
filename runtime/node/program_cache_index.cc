#include "runtime/node/program_cache_index.h"

#include <algorithm>

namespace cumulus {

void ProgramCacheIndex::Add(const std::string& hash, uint64_t size, TimePoint now) {
  Entry& e = entries_[hash];
  bytes_ = bytes_ - e.size + size;
  e.size = size;
  e.last_used = std::max(e.last_used, now);
}

void ProgramCacheIndex::Touch(const std::string& hash, TimePoint now) {
  auto it = entries_.find(hash);
  if (it != entries_.end()) it->second.last_used = std::max(it->second.last_used, now);
}

void ProgramCacheIndex::Remove(const std::string& hash) {
  auto it = entries_.find(hash);
  if (it == entries_.end()) return;
  bytes_ -= it->second.size;
  entries_.erase(it);
}

std::vector<std::string> ProgramCacheIndex::Evict(
    uint64_t incoming, const std::function<bool(const std::string& hash)>& in_use) {
  std::vector<std::string> victims;
  if (bytes_ + incoming <= max_bytes_) return victims;
  std::vector<std::pair<TimePoint, std::string>> by_age;
  for (auto& [hash, e] : entries_) by_age.emplace_back(e.last_used, hash);
  std::sort(by_age.begin(), by_age.end());
  for (auto& [used, hash] : by_age) {
    if (bytes_ + incoming <= max_bytes_) break;
    if (in_use(hash)) continue;
    Remove(hash);
    victims.push_back(hash);
  }
  return victims;
}

}  // namespace cumulus
