#include "scheduler/autoscale/snapshot.h"

namespace cumulus::autoscale {

const char* NodeStateName(NodeState s) {
  switch (s) {
    case NodeState::kOnPrem:
      return "on-prem";
    case NodeState::kLaunching:
      return "launching";
    case NodeState::kRunning:
      return "running";
    case NodeState::kDraining:
      return "draining";
  }
  return "?";
}

const char* ReasonName(Reason r) {
  switch (r) {
    case Reason::kLaunching:
      return "launching";
    case Reason::kFitsOnPremNow:
      return "fits on-prem now";
    case Reason::kFitsCloudNow:
      return "fits a running cloud node now";
    case Reason::kBootInProgress:
      return "boot in progress covers it";
    case Reason::kLabelsExcludeCloud:
      return "labels exclude the cloud";
    case Reason::kGpuModelNotAccepted:
      return "GPU model not accepted";
    case Reason::kNoTypeFits:
      return "no type fits";
    case Reason::kTypeMaxReached:
      return "type max reached";
    case Reason::kBackoff:
      return "backoff";
    case Reason::kBudgetPerHour:
      return "budget per hour";
    case Reason::kBudgetTotal:
      return "budget total";
    case Reason::kUpscalingSpeed:
      return "upscaling speed";
    case Reason::kWaitingBriefly:
      return "waiting briefly";
    case Reason::kPinnedToNode:
      return "pinned to a node";
  }
  return "?";
}

}  // namespace cumulus::autoscale
