// TempDir: a fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace cumulus {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "cumulus") {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
    char* p = mkdtemp(tmpl.data());
    path_ = p ? p : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }  // empty if creation failed

 private:
  std::string path_;
};

}  // namespace cumulus
