// Shared by the fuzz targets (tests/fuzz, docs/fuzzing.md).
//
// Every target also has a seed mode: `fuzz_X --make-seeds=DIR` writes a few valid inputs of its
// kind into DIR and exits (scripts/fuzz.sh --make-seeds refreshes tests/fuzz/corpus with it).
#pragma once

#include <capnp/dynamic.h>
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/net/frame.h"

namespace cumulus::fuzz {

// The flat bytes of a Cap'n Proto message.
inline std::string MessageBytes(capnp::MessageBuilder& m) {
  auto words = capnp::messageToFlatArray(m);
  return std::string(words.asChars().begin(), words.asChars().size());
}

// Input bytes as aligned words; trailing bytes that make no whole word are dropped (the
// runtime's framing refuses them before any decoder sees them).
inline kj::Array<capnp::word> WordsOf(const uint8_t* data, size_t size) {
  auto words = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
  if (words.size() > 0) std::memcpy(words.begin(), data, words.size() * sizeof(capnp::word));
  return words;
}

// Reads every field of every set union member, recursively, the way a handler that looks at
// everything would: each text and data byte, each list element. Throws kj::Exception on malformed
// pointers, as the generated getters do.
inline uint64_t Walk(capnp::DynamicValue::Reader v);
inline uint64_t WalkStruct(capnp::DynamicStruct::Reader s) {
  uint64_t sum = 0;
  for (auto field : s.getSchema().getNonUnionFields()) sum += Walk(s.get(field));
  KJ_IF_MAYBE (field, s.which()) {
    sum += Walk(s.get(*field));
  }
  return sum;
}
inline uint64_t Walk(capnp::DynamicValue::Reader v) {
  uint64_t sum = 0;
  switch (v.getType()) {
    case capnp::DynamicValue::BOOL:
      return v.as<bool>() ? 1 : 0;
    case capnp::DynamicValue::INT:
      return static_cast<uint64_t>(v.as<int64_t>());
    case capnp::DynamicValue::UINT:
      return v.as<uint64_t>();
    case capnp::DynamicValue::FLOAT:
      return static_cast<uint64_t>(v.as<double>() == 0.0);
    case capnp::DynamicValue::TEXT: {
      auto t = v.as<capnp::Text>();
      for (char c : t) sum += static_cast<uint8_t>(c);
      return sum + std::strlen(t.cStr());
    }
    case capnp::DynamicValue::DATA:
      for (uint8_t b : v.as<capnp::Data>()) sum += b;
      return sum;
    case capnp::DynamicValue::LIST:
      for (auto e : v.as<capnp::DynamicList>()) sum += Walk(e);
      return sum;
    case capnp::DynamicValue::ENUM:
      return v.as<capnp::DynamicEnum>().getRaw();
    case capnp::DynamicValue::STRUCT:
      return WalkStruct(v.as<capnp::DynamicStruct>());
    default:
      return 0;
  }
}

// Seed mode: handles `--make-seeds=DIR` (writes the seeds `make` returns, then exits).
inline void MaybeMakeSeeds(int* argc, char*** argv, std::vector<std::string> (*make)()) {
  for (int i = 1; i < *argc; ++i) {
    std::string_view a = (*argv)[i];
    if (a.rfind("--make-seeds=", 0) != 0) continue;
    std::string dir(a.substr(13));
    auto seeds = make();
    for (size_t k = 0; k < seeds.size(); ++k) {
      std::string path = dir + "/seed-" + std::to_string(k);
      std::ofstream(path, std::ios::binary) << seeds[k];
    }
    std::printf("wrote %zu seeds into %s\n", seeds.size(), dir.c_str());
    std::exit(0);
  }
}

// Sends `bytes` on `fd` as one stream (a peer that closes early is fine), then half-closes.
inline void SendAllThenShutdown(int fd, std::string_view bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
}

// Reads what the server answers until it closes the connection. A server that neither answers
// nor closes within `ms` is a hang: abort, so that libFuzzer keeps the input.
inline size_t DrainUntilClosed(int fd, int ms = 5000) {
  size_t total = 0;
  char buf[65536];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, ms);
    if (r == 0) {
      std::fprintf(stderr, "fuzz: the server neither answered nor closed within %d ms\n", ms);
      std::abort();
    }
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return total;
    total += static_cast<size_t>(n);
  }
}

// A frame of `m`, as the runtime writes it.
inline std::string Frame(capnp::MessageBuilder& m) { return EncodeFrame(m); }

}  // namespace cumulus::fuzz
