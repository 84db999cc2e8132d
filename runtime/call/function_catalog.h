// The function catalog of a job: each remote function's and actor method's name and parameter and
// result types (type descriptors), as its driver publishes it for `cumulus call`.
//
// Where: the head's key-value store, namespace kFunctionsNamespace, key the job's hex id, written
// once when the driver starts (workers/init.cc) and kept as long as the job's record (a detached
// actor outlives its job and is still called through it). Why there: the catalog is needed before
// anything runs (to write the arguments), whether or not the job has workers, and every `cumulus`
// command already reads the head; a driver or worker would need a new listening endpoint.
// Bounded: at most kMaxCatalogBytes (entries past the bound are left out and counted).
//
// The document is JSON (readable by any binary, whatever compiler built the job):
//   {"functions":[{"name":"Square","class":"","params":["int64"],"param_fingerprints":[N],
//                  "result":"int64","result_fingerprint":N}, ...],"omitted":0}
// `class` is the actor class (its typeid name, as in the `actors` records) for methods, empty for
// functions. Actor factories are not listed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cumulus/status.h"
#include "runtime/call/type_node.h"

namespace cumulus {

constexpr const char* kFunctionsNamespace = "job_functions";
constexpr size_t kMaxCatalogBytes = 256 * 1024;

struct CatalogEntry {
  std::string name;        // "Square", "Counter::Increment"
  std::string class_name;  // methods: the actor's class (typeid name); functions: empty
  std::vector<TypeNode> params;
  std::vector<uint64_t> param_fingerprints;
  TypeNode result;
  uint64_t result_fingerprint = 0;

  bool is_method() const { return !class_name.empty(); }
  // "Square(int64) -> int64"
  std::string Signature() const;
};

struct FunctionCatalog {
  std::vector<CatalogEntry> functions;  // by name
  size_t omitted = 0;                   // left out to keep the document under its bound
};

// The catalog of this program's registry (CUMULUS_REMOTE), as published.
std::string EncodeThisProgramsCatalog(size_t max_bytes = kMaxCatalogBytes);
// InvalidArgument if `json` is not a catalog.
Result<FunctionCatalog> DecodeCatalog(std::string_view json);

}  // namespace cumulus
