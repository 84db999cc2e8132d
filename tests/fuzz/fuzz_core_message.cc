// The core protocol (runtime/proto/core.capnp CoreMessage: node <-> node, node <-> worker and
// driver, caller -> actor): arbitrary bytes read with the ReaderOptions the node's task router
// uses, every field of every union member walked (what any handler may read), and the pure
// decoders the handlers call on it: RequirementsOf (task spec -> placement request),
// CheckTaskSpecNumbers, DecodeResources and DecodeRequestedResources, IdFrom, and
// DecodeRecord<JobRecord> on a jobInfo's record.
#include <capnp/message.h>
#include <capnp/serialize.h>

#include "runtime/core/messages.h"
#include "runtime/head/node_codec.h"
#include "runtime/proto/core.capnp.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

using namespace cumulus;

std::vector<std::string> Seeds() {
  std::vector<std::string> out;
  auto data = [](const char* s) {
    return capnp::Data::Reader(reinterpret_cast<const uint8_t*>(s), std::strlen(s));
  };
  {
    capnp::MallocMessageBuilder m;
    auto h = m.initRoot<proto::CoreMessage>().initHello();
    h.setPid(42);
    h.initPeer().setToken("token");
    out.push_back(fuzz::MessageBytes(m));
  }
  {
    capnp::MallocMessageBuilder m;
    auto s = m.initRoot<proto::CoreMessage>().initSubmitTask();
    s.setTaskId(data("0123456789abcdef01234567"));
    s.setJobId(data("0001"));
    s.setFunctionName("add");
    auto args = s.initArgs(2);
    args[0].setInline(data("12345678"));
    args[1].setObjectRef(data("0123456789abcdef0123456789ab"));
    auto loc = args[1].initLocation();
    loc.setNodeId(data("0123456789abcdef"));
    loc.setTransferAddress("127.0.0.1:1");
    loc.setSize(100);
    auto res = s.initResources(1);
    res[0].setName("CPU");
    res[0].setAmount(1);
    auto lab = s.initLabelSelector(1);
    lab[0].setKey("zone");
    lab[0].setValue("a");
    s.setStrategy(proto::SchedulingStrategy::NODE_AFFINITY);
    s.setAffinityNodeId(data("0123456789abcdef"));
    s.setPlacementGroupId(data("0123456789abcdef"));
    s.setBundleIndex(1);
    out.push_back(fuzz::MessageBytes(m));
  }
  {
    capnp::MallocMessageBuilder m;
    auto r = m.initRoot<proto::CoreMessage>().initTaskResult();
    r.setTaskId(data("0123456789abcdef01234567"));
    auto rets = r.initReturns(2);
    rets[0].setObjectId(data("0123456789abcdef0123456789ab"));
    rets[0].setInline(data("value"));
    rets[1].initStored().setSize(7);
    out.push_back(fuzz::MessageBytes(m));
  }
  {
    capnp::MallocMessageBuilder m;
    auto g = m.initRoot<proto::CoreMessage>().initCreateGroup();
    g.setGroupId(data("0123456789abcdef"));
    auto b = g.initBundles(1);
    b[0].setIndex(0);
    auto res = b[0].initResources(1);
    res[0].setName("GPU");
    res[0].setAmount(2);
    out.push_back(fuzz::MessageBytes(m));
  }
  {
    JobRecord rec;
    rec.binary_object = std::string(56, 'a');
    rec.argv = {"prog", "--flag"};
    std::string bytes = EncodeRecord(rec);
    capnp::MallocMessageBuilder m;
    auto j = m.initRoot<proto::CoreMessage>().initJobInfo();
    j.setJobId(data("0001"));
    j.setRecord(capnp::Data::Reader(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    out.push_back(fuzz::MessageBytes(m));
  }
  {
    capnp::MallocMessageBuilder m;
    auto f = m.initRoot<proto::CoreMessage>().initFreeObjects(2);
    f.set(0, data("0123456789abcdef0123456789ab"));
    out.push_back(fuzz::MessageBytes(m));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  cumulus::fuzz::MaybeMakeSeeds(argc, argv, Seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto words = fuzz::WordsOf(data, size);
  try {
    // As a core frame should be read: TaskRouter::Impl::OnFrame, CoreWorker's OnFrame and the
    // ExecutionQueue still use kMaxCoreFrameBytes / 8 as the traversal limit (docs/fuzzing.md),
    // with which the seed regress-64M-empty-args takes seconds instead of microseconds.
    capnp::FlatArrayMessageReader reader(words, CoreReaderOptions(words.size()));
    auto msg = reader.getRoot<proto::CoreMessage>();
    switch (msg.which()) {
      case proto::CoreMessage::SUBMIT_TASK: {
        auto spec = msg.getSubmitTask();
        TaskRequirements r = RequirementsOf(spec);
        (void)r;
        (void)CheckTaskSpecNumbers(spec);
        (void)IdFrom<TaskId>(spec.getTaskId());
        (void)IdFrom<JobId>(spec.getJobId());
        (void)IdFrom<ActorId>(spec.getActorId());
        break;
      }
      case proto::CoreMessage::TASK_RESULT:
        for (auto ret : msg.getTaskResult().getReturns()) (void)IdFrom<ObjectId>(ret.getObjectId());
        break;
      case proto::CoreMessage::CREATE_GROUP:
      case proto::CoreMessage::RESERVE_BUNDLES: {
        auto g = msg.isCreateGroup() ? msg.getCreateGroup() : msg.getReserveBundles();
        for (auto b : g.getBundles()) {
          (void)DecodeResources(b.getResources());
          (void)DecodeRequestedResources(b.getResources());
        }
        break;
      }
      case proto::CoreMessage::JOB_INFO: {
        auto r = msg.getJobInfo().getRecord();
        (void)DecodeRecord<JobRecord>(
            std::string_view(reinterpret_cast<const char*>(r.begin()), r.size()));
        break;
      }
      default:
        break;
    }
    (void)fuzz::WalkStruct(capnp::toDynamic(msg));
  } catch (const kj::Exception&) {
    // A malformed message: the router closes that connection.
  }
  return 0;
}
