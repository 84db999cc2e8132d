#include "workers/task_spec.h"

#include <limits>
#include <type_traits>

#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include "cumulus/api.h"
#include "runtime/core/messages.h"
#include "runtime/net/frame.h"

namespace cumulus {
namespace {

// Only the runtime makes references: a program cannot forge one from an id it made up.
static_assert(!std::is_constructible_v<ObjectRef<int>, ObjectId>);
static_assert(
    std::is_same_v<decltype(std::declval<PlacementGroup>().id()), const PlacementGroupId&>);

// Builds the spec of a task with `options` and `args`; objects are found in `where`.
Result<std::string> Build(const internal::CallOptions& options,
                          const std::vector<internal::ArgData>& args = {},
                          const std::map<ObjectId, ArgumentLocation>& where = {}) {
  TaskSpecInput in;
  in.job = JobId::FromRandom();
  in.id = TaskId::ForNormalTask(in.job);
  in.function = "F";
  in.args = &args;
  in.options = &options;
  return BuildTaskSpec(in, [&](const ObjectId& id) { return where.at(id); });
}

// The frame as a node reads it.
class ParsedSpec {
 public:
  explicit ParsedSpec(const std::string& frame)
      : words_(kj::heapArray<capnp::word>((frame.size() - kFrameHeaderBytes) / 8)) {
    std::memcpy(words_.begin(), frame.data() + kFrameHeaderBytes, words_.size() * 8);
    reader_ = std::make_unique<capnp::FlatArrayMessageReader>(words_);
  }
  proto::TaskSpec::Reader spec() { return reader_->getRoot<proto::CoreMessage>().getSubmitTask(); }

 private:
  kj::Array<capnp::word> words_;
  std::unique_ptr<capnp::FlatArrayMessageReader> reader_;
};

TEST(TaskSpecTest, PlacementOptionsReachTheNode) {
  internal::CallOptions o;
  o.resources = {{"CPU", 2}, {"GPU", 0.5}, {"zero", 0}};
  o.label_selector = "site=onprem,gpu!=T4";
  o.strategy = Strategy::kNodeAffinity;
  o.affinity_node = NodeId::FromRandom();
  o.affinity_soft = true;
  auto frame = Build(o);
  ASSERT_TRUE(frame.ok()) << frame.status();
  ParsedSpec parsed(*frame);
  TaskRequirements r = RequirementsOf(parsed.spec());
  EXPECT_EQ(r.placement.demand.ToString(), "CPU=2,GPU=0.5") << "zero amounts are not asked for";
  EXPECT_EQ(r.placement.labels.ToString(), "site=onprem,gpu!=T4");
  EXPECT_EQ(r.placement.strategy, PlacementStrategy::kNodeAffinity);
  EXPECT_EQ(r.placement.affinity_node, o.affinity_node);
  EXPECT_TRUE(r.placement.affinity_soft);
}

TEST(TaskSpecTest, SetLabelTermsReachTheNode) {
  internal::CallOptions o;
  o.label_selector = "site=cloud,gpu_model in (A100,H100),zone notin (b)";
  auto frame = Build(o);
  ASSERT_TRUE(frame.ok()) << frame.status();
  ParsedSpec parsed(*frame);
  TaskRequirements r = RequirementsOf(parsed.spec());
  EXPECT_EQ(r.placement.labels.ToString(), "site=cloud,gpu_model in (A100,H100),zone notin (b)");
  EXPECT_TRUE(r.placement.labels.Matches(*ParseLabels("site=cloud,gpu_model=H100,zone=a")));
  EXPECT_FALSE(r.placement.labels.Matches(*ParseLabels("site=cloud,gpu_model=T4,zone=a")));
}

TEST(TaskSpecTest, ObjectArgumentsGoInlineOrByLocation) {
  JobId job = JobId::FromRandom();
  ObjectId small = ObjectId::FromTaskReturn(TaskId::ForNormalTask(job), 1);
  ObjectId large = ObjectId::FromTaskReturn(TaskId::ForNormalTask(job), 1);
  std::map<ObjectId, ArgumentLocation> where;
  where[small].inline_value = std::make_shared<std::string>("tiny");
  where[large].node = NodeId::FromRandom();
  where[large].transfer_address = "127.0.0.1:7000";
  where[large].size = 1 << 20;
  std::vector<internal::ArgData> args(3);
  args[0].value = "by value";
  args[1].is_ref = true;
  args[1].ref = small;
  args[2].is_ref = true;
  args[2].ref = large;
  auto frame = Build({}, args, where);
  ASSERT_TRUE(frame.ok()) << frame.status();
  ParsedSpec parsed(*frame);
  proto::TaskSpec::Reader spec = parsed.spec();
  ASSERT_EQ(spec.getArgs().size(), 3u);
  EXPECT_TRUE(spec.getArgs()[0].isInline());
  EXPECT_TRUE(spec.getArgs()[1].isInline()) << "a small object travels inline";
  ASSERT_FALSE(spec.getArgs()[2].isInline());
  EXPECT_EQ(IdFrom<ObjectId>(spec.getArgs()[2].getObjectRef()), large);
  EXPECT_EQ(std::string(spec.getArgs()[2].getLocation().getTransferAddress()), "127.0.0.1:7000");
  EXPECT_EQ(spec.getArgs()[2].getLocation().getSize(), 1u << 20);
}

TEST(TaskSpecTest, BadRequestsAreRefusedSayingWhatIsWrong) {
  internal::CallOptions negative;
  negative.resources = {{"CPU", -1}};
  auto r = Build(negative);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "F: resource CPU must be a number from 0 to 9e+14, got -1");

  // Amounts that cannot be represented are refused, not rounded to nothing (a GPU task would then
  // run on a node without one).
  for (double absurd : {std::numeric_limits<double>::infinity(),
                        std::numeric_limits<double>::quiet_NaN(), 1e30, 9.3e14, 1e-9}) {
    internal::CallOptions o;
    o.resources = {{"GPU", absurd}};
    r = Build(o);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << absurd;
    EXPECT_NE(r.status().message().find("resource GPU"), std::string::npos) << r.status();
  }

  internal::CallOptions gpus;
  gpus.resources = {{"GPU", 1.5}};
  r = Build(gpus);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("whole number"), std::string::npos) << r.status();

  internal::CallOptions affinity;
  affinity.strategy = Strategy::kNodeAffinity;
  EXPECT_EQ(Build(affinity).status().code(), StatusCode::kInvalidArgument) << "no node named";

  internal::CallOptions labels;
  labels.label_selector = "=oops";
  EXPECT_FALSE(Build(labels).ok());

  internal::CallOptions group;
  group.placement_group = PlacementGroupId::FromRandom();
  group.bundle_index = -1;
  r = Build(group);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("give an index from 0"), std::string::npos) << r.status();

  // Retries and restarts: -1 is forever; below it is a mistake, not another way to say forever.
  internal::CallOptions retries;
  TaskSpecInput in;
  in.job = JobId::FromRandom();
  in.id = TaskId::ForNormalTask(in.job);
  in.function = "F";
  std::vector<internal::ArgData> none;
  in.args = &none;
  in.options = &retries;
  auto locate = [](const ObjectId&) { return ArgumentLocation(); };
  in.max_retries = -1;
  EXPECT_TRUE(BuildTaskSpec(in, locate).ok());
  in.max_retries = -2;
  r = BuildTaskSpec(in, locate);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "F: SetMaxRetries must be a whole number from -1 to 2147483647, got -2");
  in.max_retries = 3;
  retries.max_restarts = -5;
  r = BuildTaskSpec(in, locate);
  EXPECT_EQ(r.status().message(),
            "F: SetMaxRestarts must be a whole number from -1 to 2147483647, got -5");
}

}  // namespace
}  // namespace cumulus
