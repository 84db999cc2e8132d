#include "runtime/base/parse.h"

#include <cctype>
#include <string>

namespace cumulus {

Result<uint64_t> ParseBytes(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a size (expected e.g. 1048576, 512M, 4G)");
  };
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    uint64_t next = value * 10 + static_cast<uint64_t>(text[i] - '0');
    if (next / 10 != value) return bad();
    value = next;
    ++i;
  }
  if (i == 0) return bad();
  std::string unit(text.substr(i));
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "IB")
    unit.resize(unit.size() - 2);
  else if (!unit.empty() && unit.back() == 'B')
    unit.pop_back();
  int shift = 0;
  if (unit.empty())
    shift = 0;
  else if (unit == "K")
    shift = 10;
  else if (unit == "M")
    shift = 20;
  else if (unit == "G")
    shift = 30;
  else if (unit == "T")
    shift = 40;
  else
    return bad();
  if (shift && (value >> (64 - shift)) != 0) return bad();
  return value << shift;
}

}  // namespace cumulus
