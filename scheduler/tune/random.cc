#include "scheduler/tune/random.h"

#include <cmath>
#include <sstream>

namespace cumulus::tune {

uint64_t Rng::Below(uint64_t n) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  for (;;) {
    uint64_t v = eng_();
    if (v < limit) return v % n;
  }
}

double Rng::Normal() {
  double u1 = Uniform01();
  double u2 = Uniform01();
  if (u1 < 1e-300) u1 = 1e-300;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

std::string Rng::Save() const {
  std::ostringstream os;
  os << eng_;
  return os.str();
}

Status Rng::Restore(std::string_view state) {
  std::istringstream is{std::string(state)};
  std::mt19937_64 e;
  is >> e;
  if (is.fail()) return Status::InvalidArgument("saved random-number state is malformed");
  eng_ = e;
  return Status::OK();
}

void PutField(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
}

bool TakeField(std::string_view& in, std::string_view* field) {
  size_t colon = in.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 19) return false;
  uint64_t n = 0;
  for (size_t i = 0; i < colon; ++i) {
    if (in[i] < '0' || in[i] > '9') return false;
    n = n * 10 + static_cast<uint64_t>(in[i] - '0');
  }
  if (n > in.size() - colon - 1) return false;
  *field = in.substr(colon + 1, n);
  in.remove_prefix(colon + 1 + n);
  return true;
}

bool TakeCount(std::string_view& in, uint64_t* n) {
  std::string_view f;
  if (!TakeField(in, &f) || f.empty() || f.size() > 19) return false;
  *n = 0;
  for (char ch : f) {
    if (ch < '0' || ch > '9') return false;
    *n = *n * 10 + static_cast<uint64_t>(ch - '0');
  }
  return true;
}

}  // namespace cumulus::tune
