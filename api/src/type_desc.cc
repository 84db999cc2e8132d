// Field names of CUMULUS_SERIALIZE structs for their type descriptors
// (cumulus/internal/type_desc.h).
#include "cumulus/internal/type_desc.h"

namespace cumulus {
namespace internal {

std::vector<std::string> SplitFieldNames(std::string_view list) {
  std::vector<std::string> names;
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
      s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) {
      s.remove_suffix(1);
    }
    if (s.substr(0, 6) == "this->") s.remove_prefix(6);
    return std::string(s);
  };
  if (trim(list).empty()) return names;
  // Commas inside brackets belong to one field's expression (`std::get<0>(t)`, `a[f(1, 2)]`).
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    char c = list[i];
    if (c == '(' || c == '[' || c == '{' || c == '<') ++depth;
    if ((c == ')' || c == ']' || c == '}' || c == '>') && depth > 0) --depth;
    if (c == ',' && depth == 0) {
      names.push_back(trim(list.substr(start, i - start)));
      start = i + 1;
    }
  }
  names.push_back(trim(list.substr(start)));
  return names;
}

}  // namespace internal
}  // namespace cumulus
