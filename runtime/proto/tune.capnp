@0x8621d82c6f85c0b3;
# A tuning experiment as the head's key-value store keeps it (namespace "tune"; see
# runtime/tune/journal.h): its spec under "<name>/meta", then one JournalEntry per key
# "<name>/j/<sequence>", appended as things happen and never rewritten.
$import "/capnp/c++.capnp".namespace("cumulus::proto");

struct NamedValue {
  name @0 :Text;
  value @1 :Float64;
}

struct ExperimentSpec {
  name @0 :Text;
  trainable @1 :Text;          # the name it was registered under
  metric @2 :Text;
  maximize @3 :Bool;
  numSamples @4 :UInt64;
  searcher @5 :Text;
  seed @6 :UInt64;
  scheduler @7 :Text;
  gracePeriod @8 :Int64;
  reductionFactor @9 :Float64;
  brackets @10 :Int64;
  medianGracePeriod @11 :Int64;
  medianMinSamples @12 :Int64;
  pbtInterval @13 :Int64;
  pbtQuantile @14 :Float64;
  pbtResampleProbability @15 :Float64;
  boundMinFinished @16 :Int64;
  maxIterations @17 :Int64;
  stop @18 :List(NamedValue);
  timeBudgetSeconds @19 :Int64;
  maxConcurrentTrials @20 :Int32;
  resources @21 :List(NamedValue);
  gangSize @22 :Int32;
  gangStrategy @23 :UInt8;
  labelSelector @24 :Text;
  checkpointEvery @25 :Int64;
  maxFailures @26 :Int32;
  pendingTimeoutSeconds @27 :Int64;
  createdMicros @28 :Int64;
  params @29 :List(Text);      # the space's parameter names, in order
  pbtMutations @30 :List(Text);
  isFunction @31 :Bool;
  maxPendingTrials @32 :Int32;  # absent in journals from before it: 0
  # The budget scheduler's settings. Journals from before them read these defaults: the rules
  # those experiments ran with, SchedulerOptions' of the time (scheduler/tune/trial_scheduler.h;
  # experiment_spec_test.cc). Two defaults have changed since, and these stay as they were:
  # budgetMinPrefix (0.10 since 2026-12-07) and budgetScore ("fit" since 2026-12-06).
  budgetFraction @33 :Float64 = 0.24;
  budgetMinPrefix @34 :Float64 = 0.05;
  budgetReductionFactor @35 :Float64 = 2;
  budgetPromotionShare @36 :Float64 = 0.7;
  budgetScore @37 :Text = "last";
  budgetScoreWindow @38 :Float64 = 1;
  # false since 2026-12-07; journals from before it ran the eager rule.
  budgetEager @39 :Bool = true;
}

struct JournalEntry {
  micros @0 :Int64;
  kind @1 :UInt8;             # JournalEntry::Kind in runtime/tune/journal.h
  trial @2 :UInt64;
  config @3 :Text;            # Config::Encode
  iteration @4 :Int64;
  metrics @5 :List(NamedValue);
  seconds @6 :Float64;
  node @7 :Text;
  action @8 :UInt8;
  reason @9 :Text;
  exploitFrom @10 :UInt64;
  canStartNew @11 :Bool;
  resume @12 :Int64;          # -1: none
  stops @13 :List(UInt64);
  stopReasons @14 :List(Text);
  checkpointKey @15 :Text;
  checkpointChunks @16 :UInt32;
  checkpointBytes @17 :UInt64;
  state @18 :UInt8;
  job @19 :Text;
}
