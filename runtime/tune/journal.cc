#include "runtime/tune/journal.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>

#include "cumulus/tune.h"
#include "runtime/core/record_codec.h"
#include "runtime/proto/tune.capnp.h"
#include "scheduler/tune/trial_scheduler.h"

namespace cumulus::tune {

using record_codec::Bytes;
using record_codec::Read;
using record_codec::SetTexts;
using record_codec::Text;
using record_codec::Texts;

namespace {

constexpr size_t kChunkBytes = size_t{4} << 20;

template <typename Builder>
void SetNamed(Builder list, const std::map<std::string, double>& values) {
  unsigned i = 0;
  for (auto& [k, v] : values) {
    list[i].setName(k);
    list[i].setValue(v);
    ++i;
  }
}

template <typename Reader>
std::map<std::string, double> Named(Reader list) {
  std::map<std::string, double> out;
  for (auto nv : list) out[Text(nv.getName())] = nv.getValue();
  return out;
}

std::string EntryKey(const std::string& name, uint64_t sequence) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "/%012llu", static_cast<unsigned long long>(sequence));
  return name + buf;
}

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<ExperimentSpec> ReadSpec(std::string_view bytes);

std::chrono::microseconds TimeOfRuns(const std::vector<JournalEntry>& entries) {
  std::chrono::microseconds total{0};
  std::optional<int64_t> began;  // the current run's kRun entry
  int64_t last = 0;              // the current run's latest entry
  auto close = [&] {
    if (began && last > *began) total += std::chrono::microseconds(last - *began);
  };
  for (const auto& e : entries) {
    if (e.kind == JournalEntry::Kind::kRun) {
      close();
      began = e.micros;
      last = e.micros;
    }
    last = std::max(last, e.micros);
  }
  close();
  return total;
}

std::string JournalEntryKey(const std::string& name, uint64_t sequence) {
  return EntryKey(name, sequence);
}

Status CheckExperimentName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 100;
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_' || c == '.');
  }
  if (ok) return Status::OK();
  return Status::InvalidArgument("experiment name '" + std::string(name) +
                                 "' must be 1 to 100 letters, digits, '-', '_' or '.'");
}

std::string EncodeSpec(const ExperimentSpec& s) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<proto::ExperimentSpec>();
  b.setName(s.name);
  b.setTrainable(s.trainable);
  b.setMetric(s.metric);
  b.setMaximize(s.maximize);
  b.setIsFunction(s.is_function);
  b.setNumSamples(s.num_samples);
  b.setSearcher(s.searcher);
  b.setSeed(s.seed);
  b.setScheduler(s.scheduler);
  b.setGracePeriod(s.grace_period);
  b.setReductionFactor(s.reduction_factor);
  b.setBrackets(s.brackets);
  b.setMedianGracePeriod(s.median_grace_period);
  b.setMedianMinSamples(s.median_min_samples);
  b.setPbtInterval(s.pbt_interval);
  b.setPbtQuantile(s.pbt_quantile);
  b.setPbtResampleProbability(s.pbt_resample_probability);
  SetTexts(b.initPbtMutations(static_cast<unsigned>(s.pbt_mutations.size())), s.pbt_mutations);
  b.setBoundMinFinished(s.bound_min_finished);
  b.setBudgetFraction(s.budget_fraction);
  b.setBudgetMinPrefix(s.budget_min_prefix);
  b.setBudgetReductionFactor(s.budget_reduction_factor);
  b.setBudgetPromotionShare(s.budget_promotion_share);
  b.setBudgetScore(s.budget_score);
  b.setBudgetScoreWindow(s.budget_score_window);
  b.setBudgetEager(s.budget_eager);
  b.setMaxIterations(s.max_iterations);
  SetNamed(b.initStop(static_cast<unsigned>(s.stop.size())), s.stop);
  b.setTimeBudgetSeconds(s.time_budget_seconds);
  b.setMaxConcurrentTrials(s.max_concurrent_trials);
  SetNamed(b.initResources(static_cast<unsigned>(s.resources.size())), s.resources);
  b.setGangSize(s.gang_size);
  b.setGangStrategy(s.gang_strategy);
  b.setLabelSelector(s.label_selector);
  b.setCheckpointEvery(s.checkpoint_every);
  b.setMaxFailures(s.max_failures);
  b.setPendingTimeoutSeconds(s.pending_timeout_seconds);
  b.setMaxPendingTrials(s.max_pending_trials);
  b.setCreatedMicros(s.created_micros);
  SetTexts(b.initParams(static_cast<unsigned>(s.params.size())), s.params);
  return Bytes(m);
}

Result<ExperimentSpec> DecodeSpec(std::string_view bytes) {
  auto spec = ReadSpec(bytes);
  if (!spec.ok()) return spec;
  // What the controller relies on, checked again: the record comes from the head's store.
  const ExperimentSpec& s = *spec;
  if (s.gang_size < 1 || s.gang_size > 1024 || s.max_iterations < 1 || s.num_samples < 1 ||
      s.checkpoint_every < 0 || s.max_failures < 0 || s.max_concurrent_trials < 0 ||
      s.max_pending_trials < 0 || s.time_budget_seconds < 0 || s.pending_timeout_seconds < 0 ||
      s.metric.empty()) {
    return Status::InvalidArgument("tuning experiment '" + s.name +
                                   "': its stored spec has values out of range");
  }
  return spec;
}

Result<ExperimentSpec> ReadSpec(std::string_view bytes) {
  return Read<proto::ExperimentSpec>(bytes, "tuning experiment", [](auto b) {
    ExperimentSpec s;
    s.name = Text(b.getName());
    s.trainable = Text(b.getTrainable());
    s.metric = Text(b.getMetric());
    s.maximize = b.getMaximize();
    s.is_function = b.getIsFunction();
    s.num_samples = b.getNumSamples();
    s.searcher = Text(b.getSearcher());
    s.seed = b.getSeed();
    s.scheduler = Text(b.getScheduler());
    s.grace_period = b.getGracePeriod();
    s.reduction_factor = b.getReductionFactor();
    s.brackets = b.getBrackets();
    s.median_grace_period = b.getMedianGracePeriod();
    s.median_min_samples = b.getMedianMinSamples();
    s.pbt_interval = b.getPbtInterval();
    s.pbt_quantile = b.getPbtQuantile();
    s.pbt_resample_probability = b.getPbtResampleProbability();
    s.pbt_mutations = Texts(b.getPbtMutations());
    s.bound_min_finished = b.getBoundMinFinished();
    s.budget_fraction = b.getBudgetFraction();
    s.budget_min_prefix = b.getBudgetMinPrefix();
    s.budget_reduction_factor = b.getBudgetReductionFactor();
    s.budget_promotion_share = b.getBudgetPromotionShare();
    s.budget_score = Text(b.getBudgetScore());
    s.budget_score_window = b.getBudgetScoreWindow();
    s.budget_eager = b.getBudgetEager();
    s.max_iterations = b.getMaxIterations();
    s.stop = Named(b.getStop());
    s.time_budget_seconds = b.getTimeBudgetSeconds();
    s.max_concurrent_trials = b.getMaxConcurrentTrials();
    s.resources = Named(b.getResources());
    s.gang_size = b.getGangSize();
    s.gang_strategy = b.getGangStrategy();
    s.label_selector = Text(b.getLabelSelector());
    s.checkpoint_every = b.getCheckpointEvery();
    s.max_failures = b.getMaxFailures();
    s.pending_timeout_seconds = b.getPendingTimeoutSeconds();
    s.max_pending_trials = b.getMaxPendingTrials();
    s.created_micros = b.getCreatedMicros();
    s.params = Texts(b.getParams());
    return s;
  });
}

std::string EncodeEntry(const JournalEntry& e) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<proto::JournalEntry>();
  b.setMicros(e.micros);
  b.setKind(static_cast<uint8_t>(e.kind));
  b.setTrial(e.trial);
  b.setConfig(e.config);
  b.setIteration(e.iteration);
  SetNamed(b.initMetrics(static_cast<unsigned>(e.metrics.size())), e.metrics);
  b.setSeconds(e.seconds);
  b.setNode(e.node);
  b.setAction(e.action);
  b.setReason(e.reason);
  b.setExploitFrom(e.exploit_from);
  b.setCanStartNew(e.can_start_new);
  b.setResume(e.resume);
  auto stops = b.initStops(static_cast<unsigned>(e.stops.size()));
  auto reasons = b.initStopReasons(static_cast<unsigned>(e.stops.size()));
  for (unsigned i = 0; i < e.stops.size(); ++i) {
    stops.set(i, e.stops[i].first);
    reasons.set(i, e.stops[i].second);
  }
  b.setCheckpointKey(e.checkpoint_key);
  b.setCheckpointChunks(e.checkpoint_chunks);
  b.setCheckpointBytes(e.checkpoint_bytes);
  b.setState(e.state);
  b.setJob(e.job);
  return Bytes(m);
}

Result<JournalEntry> DecodeEntry(std::string_view bytes) {
  auto e = Read<proto::JournalEntry>(bytes, "journal entry", [](auto b) {
    JournalEntry e;
    e.micros = b.getMicros();
    e.kind = static_cast<JournalEntry::Kind>(b.getKind());
    e.trial = b.getTrial();
    e.config = Text(b.getConfig());
    e.iteration = b.getIteration();
    e.metrics = Named(b.getMetrics());
    e.seconds = b.getSeconds();
    e.node = Text(b.getNode());
    e.action = b.getAction();
    e.reason = Text(b.getReason());
    e.exploit_from = b.getExploitFrom();
    e.can_start_new = b.getCanStartNew();
    e.resume = b.getResume();
    auto stops = b.getStops();
    auto reasons = b.getStopReasons();
    for (unsigned i = 0; i < stops.size(); ++i) {
      e.stops.emplace_back(stops[i], i < reasons.size() ? Text(reasons[i]) : std::string());
    }
    e.checkpoint_key = Text(b.getCheckpointKey());
    e.checkpoint_chunks = b.getCheckpointChunks();
    e.checkpoint_bytes = b.getCheckpointBytes();
    e.state = b.getState();
    e.job = Text(b.getJob());
    return e;
  });
  if (!e.ok()) return e;
  if (e->state > static_cast<uint8_t>(TrialState::kFailed)) {
    return Status::InvalidArgument("journal entry with unknown trial state " +
                                   std::to_string(e->state));
  }
  if (e->action > static_cast<uint8_t>(Action::kExploit) && e->action != kActionFinished &&
      e->action != kActionBudgetStop) {
    return Status::InvalidArgument("journal entry with unknown action " +
                                   std::to_string(e->action));
  }
  if (e->checkpoint_bytes > uint64_t{e->checkpoint_chunks} * kChunkBytes) {
    return Status::InvalidArgument("journal entry: a checkpoint of " +
                                   std::to_string(e->checkpoint_bytes) + " bytes in " +
                                   std::to_string(e->checkpoint_chunks) + " chunks");
  }
  auto k = static_cast<uint8_t>(e->kind);
  if (k < static_cast<uint8_t>(JournalEntry::Kind::kRun) ||
      k > static_cast<uint8_t>(JournalEntry::Kind::kExperimentEnded)) {
    return Status::InvalidArgument("journal entry of unknown kind " + std::to_string(k));
  }
  return e;
}

Result<std::unique_ptr<Journal>> Journal::Create(std::unique_ptr<ControlClient> head,
                                                 const ExperimentSpec& spec) {
  CUMULUS_RETURN_IF_ERROR(CheckExperimentName(spec.name));
  CUMULUS_ASSIGN_OR_RETURN(bool existed,
                           head->KvPut(kExperimentsNamespace, spec.name, EncodeSpec(spec), false));
  if (existed) {
    return Status::AlreadyExists("the cluster has an experiment named '" + spec.name +
                                 "' already: continue it with Tuner::Restore, or choose another "
                                 "name (see 'cumulus trials')");
  }
  return std::unique_ptr<Journal>(new Journal(std::move(head), spec.name, 1));
}

Result<Journal::Loaded> Journal::Load(ControlClient& head, const std::string& name) {
  CUMULUS_RETURN_IF_ERROR(CheckExperimentName(name));
  auto raw = head.KvGet(kExperimentsNamespace, name);
  if (!raw.ok()) {
    if (raw.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("the cluster has no experiment named '" + name +
                              "' (list them with 'cumulus trials')");
    }
    return raw.status();
  }
  Loaded out;
  CUMULUS_ASSIGN_OR_RETURN(out.spec, DecodeSpec(*raw));
  std::string after;
  uint64_t expect = 1;
  while (true) {
    CUMULUS_ASSIGN_OR_RETURN(auto page, head.KvList(kJournalNamespace, name + "/", after));
    for (auto& [key, value] : page.entries) {
      after = key;
      if (key != EntryKey(name, expect)) {
        return Status::InvalidArgument("experiment '" + name + "': journal entry " +
                                       std::to_string(expect) + " is missing (found key " + key +
                                       ")");
      }
      auto e = DecodeEntry(value);
      if (!e.ok()) {
        return Status::InvalidArgument("experiment '" + name + "', journal key " + key + ": " +
                                       e.status().message());
      }
      out.entries.push_back(std::move(*e));
      ++expect;
    }
    if (!page.more || page.entries.empty()) break;
  }
  return out;
}

std::unique_ptr<Journal> Journal::Continue(std::unique_ptr<ControlClient> head, std::string name,
                                           uint64_t next_sequence) {
  return std::unique_ptr<Journal>(new Journal(std::move(head), std::move(name), next_sequence));
}

Status Journal::Append(JournalEntry entry) {
  entry.micros = NowMicros();
  auto existed = head_->KvPut(kJournalNamespace, EntryKey(name_, next_), EncodeEntry(entry), false);
  if (!existed.ok()) {
    return Status(existed.status().code(), "experiment '" + name_ + "': writing journal entry " +
                                               std::to_string(next_) + ": " +
                                               existed.status().message());
  }
  if (*existed) {
    return Status::AlreadyExists("experiment '" + name_ + "' is being run by another driver too " +
                                 "(journal entry " + std::to_string(next_) +
                                 " was written by it): this one stops");
  }
  ++next_;
  return Status::OK();
}

Status Journal::PutCheckpoint(uint64_t trial, int64_t iteration, const std::string& bytes,
                              JournalEntry* entry, const std::string& tag) {
  std::string key = name_ + "/" + std::to_string(trial) + "/" + std::to_string(iteration) +
                    (tag.empty() ? "" : "-" + tag);
  uint32_t chunks = static_cast<uint32_t>((bytes.size() + kChunkBytes - 1) / kChunkBytes);
  if (chunks == 0) chunks = 1;
  for (uint32_t c = 0; c < chunks; ++c) {
    size_t at = size_t{c} * kChunkBytes;
    auto put = head_->KvPut(kCheckpointsNamespace, key + "/" + std::to_string(c),
                            bytes.substr(at, std::min(kChunkBytes, bytes.size() - at)));
    if (!put.ok()) {
      return Status(put.status().code(),
                    "storing the checkpoint of trial " + std::to_string(trial) + " at iteration " +
                        std::to_string(iteration) + ": " + put.status().message());
    }
  }
  entry->checkpoint_key = key;
  entry->checkpoint_chunks = chunks;
  entry->checkpoint_bytes = bytes.size();
  return Status::OK();
}

Result<std::string> Journal::GetCheckpoint(ControlClient& head, const JournalEntry& checkpoint) {
  std::string out;
  out.reserve(checkpoint.checkpoint_bytes);
  for (uint32_t c = 0; c < checkpoint.checkpoint_chunks; ++c) {
    auto part =
        head.KvGet(kCheckpointsNamespace, checkpoint.checkpoint_key + "/" + std::to_string(c));
    if (!part.ok()) {
      return Status(part.status().code(),
                    "checkpoint " + checkpoint.checkpoint_key + ": " + part.status().message());
    }
    out += *part;
  }
  if (out.size() != checkpoint.checkpoint_bytes) {
    return Status::Internal("checkpoint " + checkpoint.checkpoint_key + " has " +
                            std::to_string(out.size()) + " bytes, the journal says " +
                            std::to_string(checkpoint.checkpoint_bytes));
  }
  return out;
}

Status Journal::DeleteCheckpoint(const JournalEntry& checkpoint) {
  for (uint32_t c = 0; c < checkpoint.checkpoint_chunks; ++c) {
    CUMULUS_RETURN_IF_ERROR(
        head_->KvDelete(kCheckpointsNamespace, checkpoint.checkpoint_key + "/" + std::to_string(c))
            .status());
  }
  return Status::OK();
}

}  // namespace cumulus::tune
