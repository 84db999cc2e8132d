// What the test drivers (core_driver, fault_driver) share: one line per check, read by their
// gtest halves with ClusterTest::ExpectChecks, and their --key=value arguments.
//   CHECK <name> ok
//   CHECK <name> FAIL <why>
#pragma once

#include <cstdio>
#include <map>
#include <string>

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

}  // namespace driver
