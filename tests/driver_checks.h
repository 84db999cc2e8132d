// What the test drivers (core_driver, fault_driver) share: one line per check, read by their
// gtest halves with ClusterTest::ExpectChecks, their --key=value arguments, test data, and what a
// process has mapped.
//   CHECK <name> ok
//   CHECK <name> FAIL <why>
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace driver {

inline int failures = 0;

inline void Check(const std::string& name, bool ok, const std::string& why = "") {
  std::printf("CHECK %s %s%s\n", name.c_str(), ok ? "ok" : "FAIL ", ok ? "" : why.c_str());
  std::fflush(stdout);
  failures += ok ? 0 : 1;
}

inline std::map<std::string, std::string> Args(int argc, char** argv) {
  std::map<std::string, std::string> out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos)
      out[a.substr(2, eq - 2)] = a.substr(eq + 1);
  }
  return out;
}

// `bytes` pseudo-random bytes from `seed` (xorshift): the same on every call, so a driver
// recomputes what it expects back.
inline std::vector<uint8_t> Blob(uint64_t bytes, uint32_t seed) {
  std::vector<uint8_t> out(bytes);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t i = 0; i < bytes; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    out[i] = static_cast<uint8_t>(s);
  }
  return out;
}

// Which of `libs` (file-name prefixes: "librocksdb") this process has mapped
// (/proc/self/maps), ", " between; empty when none.
inline std::string MappedAmong(const std::vector<std::string>& libs) {
  std::string mapped;
  if (FILE* f = std::fopen("/proc/self/maps", "r")) {
    char line[512];
    while (std::fgets(line, sizeof(line), f)) {
      for (const std::string& lib : libs) {
        if (std::strstr(line, lib.c_str()) && mapped.find(lib) == std::string::npos)
          mapped += (mapped.empty() ? "" : ", ") + lib;
      }
    }
    std::fclose(f);
  }
  return mapped;
}

}  // namespace driver
