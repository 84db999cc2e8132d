// TrialHost: the actor that runs one trial (one rank of a gang trial) in a worker process. The
// tuner's controller drives it one iteration at a time (Step), so that every decision is applied
// before the next iteration starts. It hosts a class trainable (Setup, Restore, Step, Save) or a
// train function running on a thread of its own whose Report hands each iteration to Step.
//
// The process's stdout and stderr are the trial's: they are copied to the job's output and, in
// chunks every half second, to the head (kTrialLogsNamespace), where `cumulus logs JOB --trial T`
// reads them apart from every other trial's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cumulus/serialization.h"
#include "cumulus/tune.h"

namespace cumulus::tune {

struct TrialSpec {
  std::string experiment;
  std::string trainable;  // the registered name
  bool is_function = false;
  std::string trial_id;  // "t0007"
  std::string config;    // Config::Encode
  int rank = 0, world_size = 1;
  std::string group;  // gang trials: the collective group's name
  int64_t start_iteration = 0;
  bool has_checkpoint = false;
  std::string checkpoint;
  std::string log_key;  // JOB/EXPERIMENT/TRIAL: where its output goes ("" : nowhere but stdout)
  CUMULUS_SERIALIZE(experiment, trainable, is_function, trial_id, config, rank, world_size, group,
                    start_iteration, has_checkpoint, checkpoint, log_key)
};

struct StepResult {
  Metrics metrics;
  bool done = false;  // a train function returned: the trial is complete, `metrics` is empty
  bool has_checkpoint = false;
  std::string checkpoint;
  std::string node;    // hex id of the node it ran on
  double seconds = 0;  // the iteration's wall time
  CUMULUS_SERIALIZE(metrics, done, has_checkpoint, checkpoint, node, seconds)
};

class OutputCapture;  // runtime/tune/output_capture.h

class TrialHost {
 public:
  explicit TrialHost(TrialSpec spec);
  ~TrialHost();
  TrialHost(const TrialHost&) = delete;
  TrialHost& operator=(const TrialHost&) = delete;

  // One iteration (the first call also sets the trainable up and restores its checkpoint). With
  // `checkpoint`, the result carries a checkpoint taken after it (class trainables; a function
  // trainable's result carries the checkpoint it reported, if any). Throws the trainable's error.
  StepResult Step(bool checkpoint);
  // A checkpoint now (class trainables: Save(); functions: the last one reported, or empty).
  std::string Save();
  // The node this trial runs on (hex); answered once the actor is placed and constructed.
  std::string Where();

  class FunctionRunner;

 private:
  void Start();
  TrialSpec spec_;
  TrialInfo info_;
  Config config_;
  bool started_ = false;
  std::unique_ptr<CollectiveGroup> group_;
  std::unique_ptr<Trainable> trainable_;
  std::unique_ptr<FunctionRunner> function_;
  std::unique_ptr<OutputCapture> output_;
};

TrialHost* MakeTrialHost(TrialSpec spec);

// The registered trainables (the program's CUMULUS_TRAINABLE / CUMULUS_TRAIN_FUNCTION lines).
// The name a class or function was registered under; empty if it was not.
std::string TrainableClassName(const char* class_key);
std::string TrainFunctionName(TrainFunction f);

}  // namespace cumulus::tune
