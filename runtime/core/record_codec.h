// Helpers for records kept as Cap'n Proto structs (records.cc, runtime/tune/journal.cc): a
// message as bytes, and bytes read back as a message with the work bounded by their size.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/array.h>

#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cumulus/status.h"

namespace cumulus::record_codec {

template <typename Builder>
void SetTexts(Builder list_init, const std::vector<std::string>& values) {
  for (unsigned i = 0; i < values.size(); ++i) list_init.set(i, values[i]);
}

template <typename Reader>
std::vector<std::string> Texts(Reader list) {
  std::vector<std::string> out;
  out.reserve(list.size());
  for (auto t : list) out.emplace_back(t.cStr(), t.size());
  return out;
}

inline std::string Text(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

inline std::string Bytes(capnp::MessageBuilder& message) {
  auto words = capnp::messageToFlatArray(message);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

// Reads a record whose root is `Root` from `bytes` (copied to aligned words) and converts it with
// `read`; InvalidArgument naming `what` if the bytes are not one.
template <typename Root, typename F>
auto Read(std::string_view bytes, const char* what, F read)
    -> Result<decltype(read(std::declval<typename Root::Reader>()))> {
  if (bytes.empty() || bytes.size() % sizeof(capnp::word) != 0) {
    return Status::InvalidArgument(std::string("not a ") + what + " record (" +
                                   std::to_string(bytes.size()) + " bytes)");
  }
  auto words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  try {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = words.size() + 64;  // work bounded by the bytes
    capnp::FlatArrayMessageReader reader(words, options);
    return read(reader.getRoot<Root>());
  } catch (const kj::Exception& e) {
    return Status::InvalidArgument(std::string("not a ") + what +
                                   " record: " + e.getDescription().cStr());
  }
}

}  // namespace cumulus::record_codec
