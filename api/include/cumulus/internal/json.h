// JSON text helpers shared by the command line's --json output and the tuner's exports.
#pragma once

#include <string>
#include <string_view>

namespace cumulus {
namespace internal {

// `s` as a JSON string literal, quotes included: " \ and control characters escaped.
std::string JsonQuote(std::string_view s);

}  // namespace internal
}  // namespace cumulus
