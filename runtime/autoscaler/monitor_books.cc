#include "runtime/autoscaler/monitor_books.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace cumulus {

namespace {
std::string ThisHost() {
  char h[256] = {0};
  if (gethostname(h, sizeof(h) - 1) != 0) return "";
  return h;
}
std::string OwnerField(const std::string& record, const std::string& key) {
  std::istringstream in(record);
  std::string word;
  while (in >> word) {
    if (word.rfind(key + "=", 0) == 0) return word.substr(key.size() + 1);
  }
  return "";
}
}  // namespace

std::string ProcessStart(int pid) {
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return "";
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  std::string stat(buf, n);
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and ')', so count from the last ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  for (int k = 3; k <= 22 && rest >> field; ++k) {
    if (k == 22) return field;  // starttime, in clock ticks since boot
  }
  return "";
}

std::string OwnerRecord(int pid, int64_t round_ms, int64_t seen_micros) {
  std::string start = ProcessStart(pid);
  return "pid=" + std::to_string(pid) + " host=" + ThisHost() +
         " round_ms=" + std::to_string(round_ms) + " seen=" + std::to_string(seen_micros) +
         (start.empty() ? "" : " start=" + start);
}

int OwnerPid(const std::string& record) { return std::atoi(OwnerField(record, "pid").c_str()); }

bool OwnerAlive(const std::string& record, int64_t now_micros) {
  int pid = OwnerPid(record);
  if (pid <= 0) return false;
  if (OwnerField(record, "host") == ThisHost()) {
    if (kill(pid, 0) != 0 && errno != EPERM) return false;
    // The pid may since have gone to another process: the same pid started at another time.
    std::string start = OwnerField(record, "start");  // records from before it have none
    std::string now = start.empty() ? "" : ProcessStart(pid);
    return now.empty() || now == start;
  }
  int64_t round_ms = std::atoll(OwnerField(record, "round_ms").c_str());
  int64_t seen = std::atoll(OwnerField(record, "seen").c_str());
  return now_micros - seen < (3 * round_ms + 10000) * 1000;
}

double MonitorBooks::TotalSpend() const {
  double sum = 0;
  for (auto& [name, t] : types) sum += t.spend;
  return sum;
}

void MonitorBooks::Accrue(int64_t now_micros, const std::map<std::string, double>& prices) {
  for (auto& [id, in] : instances) {
    auto price = prices.find(in.type);
    if (price == prices.end()) continue;
    int64_t from = std::max(spend_until_micros, in.launched_micros);
    if (now_micros <= from) continue;
    types[in.type].spend += price->second * static_cast<double>(now_micros - from) / 3.6e9;
  }
  spend_until_micros = std::max(spend_until_micros, now_micros);
}

void TypeBooks::CountFailure(int count, int64_t launch_micros, int64_t now_micros,
                             const std::string& error) {
  failed_launches += count;
  history.last_error = error;
  if (launch_micros != 0 && launch_micros == last_failed_launch) return;
  last_failed_launch = launch_micros;
  history.failures_in_a_row += 1;
  history.last_failure = now_micros;
}

std::string EncodeBooks(const MonitorBooks& books) {
  std::ostringstream out;
  out.precision(17);
  out << "until " << books.spend_until_micros << "\n";
  for (auto& [id, in] : books.instances) {
    out << "instance " << in.id << " " << in.type << " " << in.provider << " " << in.launched_micros
        << " " << (in.draining ? 1 : 0) << " " << (in.registered ? 1 : 0) << "\n";
  }
  for (auto& [name, t] : books.types) {
    std::string error = t.history.last_error;
    std::replace(error.begin(), error.end(), '\n', ' ');
    out << "type " << name << " " << t.spend << " " << t.failed_launches << " "
        << t.history.failures_in_a_row << " " << t.history.last_failure << " " << error << "\n";
    if (t.last_failed_launch != 0)
      out << "failedlaunch " << name << " " << t.last_failed_launch << "\n";
  }
  return out.str();
}

Result<MonitorBooks> DecodeBooks(const std::string& text) {
  MonitorBooks books;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    bool ok = false;
    if (kind == "until") {
      ok = static_cast<bool>(fields >> books.spend_until_micros);
    } else if (kind == "instance") {
      LaunchedInstance i;
      int draining = 0;
      ok = static_cast<bool>(fields >> i.id >> i.type >> i.provider >> i.launched_micros >>
                             draining);
      i.draining = draining != 0;
      int registered = 0;  // optional: books written before it was kept say 0
      if (ok && fields >> registered) i.registered = registered != 0;
      if (ok) books.instances[i.id] = i;
    } else if (kind == "type") {
      std::string name;
      TypeBooks t;
      ok = static_cast<bool>(fields >> name >> t.spend >> t.failed_launches >>
                             t.history.failures_in_a_row >> t.history.last_failure);
      if (ok) {
        std::getline(fields, t.history.last_error);
        if (!t.history.last_error.empty() && t.history.last_error[0] == ' ')
          t.history.last_error.erase(0, 1);
        books.types[name] = t;
      }
    } else if (kind == "failedlaunch") {  // optional: books written before it have none
      std::string name;
      int64_t at = 0;
      ok = static_cast<bool>(fields >> name >> at);
      if (ok) books.types[name].last_failed_launch = at;
    }
    if (!ok) {
      return Status::InvalidArgument("the autoscaler's books in the control store, line " +
                                     std::to_string(n) + ": cannot read '" + line + "'");
    }
  }
  return books;
}

}  // namespace cumulus
