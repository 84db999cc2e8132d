#include "bench/burst/trace.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

namespace cumulus::burst {

namespace {

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == ',')
      out.emplace_back();
    else if (c != '\r')
      out.back() += c;
  }
  return out;
}

// A CSV file read row by row, with cells found by column name and errors as FILE:LINE:COLUMN.
class Csv {
 public:
  static Result<Csv> Open(const std::string& path, const std::vector<std::string>& required) {
    Csv c;
    c.path_ = path;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      return Status::InvalidArgument(path + ":0:0: is a directory: give a CSV file");
    c.in_.open(path);
    if (!c.in_) {
      return Status::InvalidArgument(path + ":0:0: cannot open the file (does it exist?)");
    }
    std::string header;
    if (!std::getline(c.in_, header)) return Status::InvalidArgument(path + ":1:1: empty file");
    c.line_no_ = 1;
    std::vector<std::string> names = SplitCsv(header);
    for (size_t i = 0; i < names.size(); ++i) c.index_[names[i]] = i;
    for (const std::string& r : required) {
      if (!c.index_.count(r)) {
        return Status::InvalidArgument(path + ":1:1: missing column '" + r + "' in the header");
      }
    }
    return c;
  }

  // False at the end of the file; blank lines are skipped.
  bool Next() {
    std::string line;
    while (std::getline(in_, line)) {
      ++line_no_;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      row_ = SplitCsv(line);
      return true;
    }
    return false;
  }

  Result<std::string> Text(const std::string& column) const {
    size_t i = index_.at(column);
    if (i >= row_.size()) {
      return Status::InvalidArgument(Where(i) + ": the row has no cell for column '" + column +
                                     "' (" + std::to_string(row_.size()) + " cells)");
    }
    return row_[i];
  }

  // An integer cell in [min, max]; `empty_ok`: an empty cell is -1.
  Result<int64_t> Integer(const std::string& column, int64_t min, int64_t max,
                          bool empty_ok = false) const {
    CUMULUS_ASSIGN_OR_RETURN(std::string text, Text(column));
    if (text.empty() && empty_ok) return -1;
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || v < min || v > max) {
      return Status::InvalidArgument(Where(index_.at(column)) + ": column '" + column +
                                     "' holds '" + text + "', not a whole number from " +
                                     std::to_string(min) + " to " + std::to_string(max));
    }
    return static_cast<int64_t>(v);
  }

  std::string Where(size_t column_index) const {
    return path_ + ":" + std::to_string(line_no_) + ":" + std::to_string(column_index + 1);
  }
  size_t line_no() const { return line_no_; }

 private:
  std::string path_;
  std::ifstream in_;
  size_t line_no_ = 0;
  std::map<std::string, size_t> index_;
  std::vector<std::string> row_;
};

constexpr int64_t kMaxTime = int64_t{1} << 40;  // seconds: ~35,000 years
constexpr int64_t kMaxAmount = int64_t{1} << 32;

}  // namespace

std::string ModelLabel(const std::string& model) {
  std::string out = model;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  }
  return out.substr(0, 128);
}

Result<std::vector<Pod>> ReadPods(const std::string& path) {
  CUMULUS_ASSIGN_OR_RETURN(
      Csv csv, Csv::Open(path, {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli",
                                "gpu_spec", "creation_time", "deletion_time", "scheduled_time"}));
  std::vector<Pod> pods;
  while (csv.Next()) {
    Pod p;
    CUMULUS_ASSIGN_OR_RETURN(p.name, csv.Text("name"));
    CUMULUS_ASSIGN_OR_RETURN(p.need.cpu, csv.Integer("cpu_milli", 0, kMaxAmount));
    CUMULUS_ASSIGN_OR_RETURN(p.need.mem, csv.Integer("memory_mib", 0, kMaxAmount));
    CUMULUS_ASSIGN_OR_RETURN(int64_t num_gpu, csv.Integer("num_gpu", 0, 1 << 16));
    CUMULUS_ASSIGN_OR_RETURN(int64_t gpu_milli, csv.Integer("gpu_milli", 0, 1000));
    p.need.gpu = num_gpu > 1 ? num_gpu * 1000 : num_gpu == 1 ? (gpu_milli ? gpu_milli : 1000) : 0;
    CUMULUS_ASSIGN_OR_RETURN(std::string spec, csv.Text("gpu_spec"));
    size_t start = 0;
    while (!spec.empty() && start <= spec.size()) {
      size_t bar = spec.find('|', start);
      if (bar == std::string::npos) bar = spec.size();
      if (bar > start) p.models.push_back(ModelLabel(spec.substr(start, bar - start)));
      start = bar + 1;
    }
    CUMULUS_ASSIGN_OR_RETURN(p.arrival, csv.Integer("creation_time", 0, kMaxTime));
    CUMULUS_ASSIGN_OR_RETURN(int64_t deleted, csv.Integer("deletion_time", 0, kMaxTime, true));
    CUMULUS_ASSIGN_OR_RETURN(int64_t scheduled, csv.Integer("scheduled_time", 0, kMaxTime, true));
    // Without a deletion time the pod runs to the end of the trace (set below).
    int64_t began = scheduled >= 0 ? scheduled : p.arrival;
    p.duration = deleted >= 0 ? std::max<int64_t>(1, deleted - began) : -1;
    pods.push_back(std::move(p));
  }
  if (pods.empty()) return Status::InvalidArgument(path + ":2:1: no pods after the header");
  int64_t end = 0;
  for (const Pod& p : pods) end = std::max(end, p.arrival + std::max<int64_t>(p.duration, 0));
  for (Pod& p : pods) {
    if (p.duration < 0) p.duration = std::max<int64_t>(1, end - p.arrival);
  }
  std::stable_sort(pods.begin(), pods.end(),
                   [](const Pod& a, const Pod& b) { return a.arrival < b.arrival; });
  return pods;
}

Result<std::vector<TraceNode>> ReadNodes(const std::string& path) {
  CUMULUS_ASSIGN_OR_RETURN(Csv csv,
                           Csv::Open(path, {"sn", "cpu_milli", "memory_mib", "gpu", "model"}));
  std::vector<TraceNode> nodes;
  while (csv.Next()) {
    TraceNode n;
    CUMULUS_ASSIGN_OR_RETURN(n.name, csv.Text("sn"));
    CUMULUS_ASSIGN_OR_RETURN(n.total.cpu, csv.Integer("cpu_milli", 0, kMaxAmount));
    CUMULUS_ASSIGN_OR_RETURN(n.total.mem, csv.Integer("memory_mib", 0, kMaxAmount));
    CUMULUS_ASSIGN_OR_RETURN(int64_t gpus, csv.Integer("gpu", 0, 1 << 16));
    n.total.gpu = gpus * 1000;
    CUMULUS_ASSIGN_OR_RETURN(std::string model, csv.Text("model"));
    n.model = gpus > 0 ? ModelLabel(model) : "";
    nodes.push_back(std::move(n));
  }
  if (nodes.empty()) return Status::InvalidArgument(path + ":2:1: no nodes after the header");
  return nodes;
}

}  // namespace cumulus::burst
