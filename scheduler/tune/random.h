// Rng: the tuner's one source of randomness. Seeded, and its whole state saved and restored as
// text, so a restored searcher or scheduler continues the same sequence. The numbers it draws are
// the same on every platform (no std:: distributions, whose output is implementation-defined).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "cumulus/status.h"

namespace cumulus::tune {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : eng_(seed) {}
  uint64_t Next() { return eng_(); }
  // In [0, 1), 53 random bits.
  double Uniform01() { return static_cast<double>(eng_() >> 11) * 0x1.0p-53; }
  // In [0, n); n > 0. Unbiased (rejection).
  uint64_t Below(uint64_t n);
  // Standard normal (Box-Muller).
  double Normal();

  std::string Save() const;
  Status Restore(std::string_view state);

 private:
  std::mt19937_64 eng_;
};

// Length-prefixed fields ("5:hello") for the saved states of searchers and schedulers.
void PutField(std::string& out, std::string_view field);
// Takes one field off the front of `in`; false if `in` does not start with one.
bool TakeField(std::string_view& in, std::string_view* field);
// Takes one field holding a decimal count (1 to 19 digits); false if there is none.
bool TakeCount(std::string_view& in, uint64_t* n);

}  // namespace cumulus::tune
