// The function catalog a driver publishes (function_catalog.h).
#include "runtime/call/function_catalog.h"

#include <charconv>

#include "cumulus/internal/registry.h"
#include "runtime/call/json_value.h"

namespace cumulus {

std::string CatalogEntry::Signature() const {
  std::string out = name + "(";
  for (size_t i = 0; i < params.size(); ++i) out += (i ? ", " : "") + params[i].Display();
  return out + ") -> " + result.Display();
}

std::string EncodeThisProgramsCatalog(size_t max_bytes) {
  const std::string head = "{\"functions\":[";
  std::string entries;
  size_t omitted = 0;
  for (const internal::RemoteFunction* f : internal::RegisteredFunctions()) {
    if (f->construct || !f->invoke || !f->signature) continue;  // factories: not callable
    internal::TypeSignature s = f->signature();
    std::string e = "{\"name\":" + JsonQuoteUtf8(f->name) +
                    ",\"class\":" + JsonQuoteUtf8(f->class_name) + ",\"params\":[";
    for (size_t i = 0; i < s.params.size(); ++i) e += (i ? "," : "") + JsonQuoteUtf8(s.params[i]);
    e += "],\"param_fingerprints\":[";
    for (size_t i = 0; i < s.param_fingerprints.size(); ++i) {
      e += (i ? "," : "") + std::to_string(s.param_fingerprints[i]);
    }
    e += "],\"result\":" + JsonQuoteUtf8(s.result) +
         ",\"result_fingerprint\":" + std::to_string(s.result_fingerprint) + "}";
    // Room for the separator and the tail ("],\"omitted\":N}", at most 40 bytes).
    if (head.size() + entries.size() + e.size() + 1 + 40 > max_bytes) {
      ++omitted;
      continue;
    }
    entries += (entries.empty() ? "" : ",") + e;
  }
  return head + entries + "],\"omitted\":" + std::to_string(omitted) + "}";
}

namespace {

Result<uint64_t> Unsigned(const JsonValue* v, const std::string& what) {
  uint64_t x = 0;
  if (!v || !v->IsIntegerText() ||
      std::from_chars(v->text.data(), v->text.data() + v->text.size(), x).ec != std::errc()) {
    return Status::InvalidArgument("a function catalog's " + what + " is not an unsigned integer");
  }
  return x;
}

Result<std::string> Text(const JsonValue* v, const std::string& what) {
  if (!v || v->kind != JsonValue::kString) {
    return Status::InvalidArgument("a function catalog's " + what + " is not a string");
  }
  return v->text;
}

}  // namespace

Result<FunctionCatalog> DecodeCatalog(std::string_view json) {
  JsonLimits limits;
  limits.max_bytes = 4 * kMaxCatalogBytes;
  CUMULUS_ASSIGN_OR_RETURN(JsonValue doc, ParseJson(json, limits));
  const JsonValue* list = doc.kind == JsonValue::kObject ? doc.Member("functions") : nullptr;
  if (!list || list->kind != JsonValue::kArray) {
    return Status::InvalidArgument("a function catalog has no list of functions");
  }
  FunctionCatalog catalog;
  if (const JsonValue* omitted = doc.Member("omitted")) {
    CUMULUS_ASSIGN_OR_RETURN(catalog.omitted, Unsigned(omitted, "omitted count"));
  }
  for (const JsonValue& f : list->items) {
    if (f.kind != JsonValue::kObject)
      return Status::InvalidArgument("a catalog entry is no object");
    CatalogEntry e;
    CUMULUS_ASSIGN_OR_RETURN(e.name, Text(f.Member("name"), "name"));
    CUMULUS_ASSIGN_OR_RETURN(e.class_name, Text(f.Member("class"), "class"));
    const JsonValue* params = f.Member("params");
    const JsonValue* prints = f.Member("param_fingerprints");
    if (!params || !prints || params->kind != JsonValue::kArray ||
        prints->kind != JsonValue::kArray || params->items.size() != prints->items.size()) {
      return Status::InvalidArgument("catalog entry " + e.name + " has bad parameter lists");
    }
    for (size_t i = 0; i < params->items.size(); ++i) {
      CUMULUS_ASSIGN_OR_RETURN(std::string d, Text(&params->items[i], "parameter type"));
      CUMULUS_ASSIGN_OR_RETURN(TypeNode t, ParseTypeDescriptor(d));
      e.params.push_back(std::move(t));
      CUMULUS_ASSIGN_OR_RETURN(uint64_t fp, Unsigned(&prints->items[i], "fingerprint"));
      e.param_fingerprints.push_back(fp);
    }
    CUMULUS_ASSIGN_OR_RETURN(std::string r, Text(f.Member("result"), "result type"));
    CUMULUS_ASSIGN_OR_RETURN(e.result, ParseTypeDescriptor(r));
    CUMULUS_ASSIGN_OR_RETURN(e.result_fingerprint,
                             Unsigned(f.Member("result_fingerprint"), "fingerprint"));
    catalog.functions.push_back(std::move(e));
  }
  return catalog;
}

}  // namespace cumulus
