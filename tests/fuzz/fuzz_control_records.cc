// The control plane's decoders (runtime/proto/control.capnp, node.capnp): DecodeRecord<T> for
// every record type kept in the head's key-value store (runtime/core/records.h), NodeFromBytes
// (the head's persisted node table), a ControlRequest read with the head's limits and walked with
// the node decoders its handlers call (DecodeNode, DecodeResources, DecodeDemand), and a real
// HeadServer in this process that is sent an authenticated connection's worth of frames.
//
// Input: byte 0 picks the decoder, the rest are its bytes.
#include <capnp/message.h>
#include <capnp/serialize.h>

#include <memory>

#include "runtime/base/logging.h"
#include "runtime/base/temp_dir.h"
#include "runtime/core/records.h"
#include "runtime/head/head_server.h"
#include "runtime/head/node_codec.h"
#include "runtime/net/tcp.h"
#include "runtime/proto/control.capnp.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

using namespace cumulus;

constexpr char kToken[] = "fuzz-token";
enum Mode : uint8_t {
  kJob,
  kJobEnd,
  kSubmission,
  kPackage,
  kNodeState,
  kGroup,
  kActorName,
  kNodeBytes,
  kRequest,
  kHead,
  kModes
};

std::string With(Mode mode, const std::string& bytes) {
  return std::string(1, static_cast<char>(mode)) + bytes;
}

std::string HelloFrame() {
  capnp::MallocMessageBuilder m;
  auto req = m.initRoot<proto::ControlRequest>();
  req.setRequestId(1);
  auto h = req.initHello();
  h.setToken(kToken);
  h.setRole("fuzz");
  h.setProtocolVersion(proto::PROTOCOL_VERSION);
  return EncodeFrame(m);
}

std::vector<std::string> Seeds() {
  std::vector<std::string> out;
  JobRecord job;
  job.binary_object = std::string(56, 'a');
  job.argv = {"prog", "x"};
  out.push_back(With(kJob, EncodeRecord(job)));
  out.push_back(With(kJobEnd, EncodeRecord(JobEnd{5})));
  SubmissionRecord sub;
  sub.name = "s";
  sub.entrypoint = {"run.sh"};
  sub.state = "PENDING";
  out.push_back(With(kSubmission, EncodeRecord(sub)));
  JobPackage pkg;
  pkg.files = {{"a.txt", 0644, "hello"}, {"bin/run", 0755, "#!/bin/sh\n"}};
  out.push_back(With(kPackage, EncodeRecord(pkg)));
  NodeStateReport report;
  report.tasks.push_back({"t", "j", "f", "RUNNING", 1, 0});
  report.objects.push_back({"o", "j", 10, "MEMORY", 1});
  out.push_back(With(kNodeState, EncodeRecord(report)));
  out.push_back(With(kGroup, EncodeRecord(GroupRecord{"job", {"n1", "n2"}})));
  out.push_back(With(kActorName, EncodeRecord(ActorNameRecord{"id", "Counter", "127.0.0.1:1"})));

  NodeRecord node;
  node.id = NodeId::FromBinary(std::string(NodeId::kSize, '\x07'));
  node.address = "127.0.0.1:1";
  node.total.Set("CPU", 4);
  node.labels["zone"] = "a";
  node.gpu_ids = {0, 1};
  out.push_back(With(kNodeBytes, NodeToBytes(node)));

  std::string head_stream;
  {
    capnp::MallocMessageBuilder m;
    auto req = m.initRoot<proto::ControlRequest>();
    req.setRequestId(2);
    EncodeNode(node, req.initRegisterNode());
    out.push_back(With(kRequest, fuzz::MessageBytes(m)));
    head_stream += EncodeFrame(m);
  }
  {
    capnp::MallocMessageBuilder m;
    auto req = m.initRoot<proto::ControlRequest>();
    req.setRequestId(3);
    auto hb = req.initHeartbeat();
    hb.setNodeId(capnp::Data::Reader(node.id.data(), NodeId::kSize));
    auto d = hb.initPendingDemand(1);
    d[0].setCount(2);
    auto r = d[0].initResources(1);
    r[0].setName("CPU");
    r[0].setAmount(1);
    hb.setWantView(true);
    out.push_back(With(kRequest, fuzz::MessageBytes(m)));
    head_stream += EncodeFrame(m);
  }
  {
    capnp::MallocMessageBuilder m;
    auto req = m.initRoot<proto::ControlRequest>();
    req.setRequestId(4);
    auto put = req.initKvPut();
    put.setNamespace("jobs");
    put.setKey("k");
    put.setValue(capnp::Data::Reader(reinterpret_cast<const uint8_t*>("v"), 1));
    head_stream += EncodeFrame(m);
  }
  for (int which = 0; which < 3; ++which) {
    capnp::MallocMessageBuilder m;
    auto req = m.initRoot<proto::ControlRequest>();
    req.setRequestId(5 + which);
    if (which == 0) {
      auto k = req.initKvGet();
      k.setNamespace("jobs");
      k.setKey("k");
    } else if (which == 1) {
      auto l = req.initKvList();
      l.setNamespace("jobs");
      l.setLimit(10);
    } else {
      auto w = req.initKvWait();
      w.setNamespace("jobs");
      w.setKey("absent");
    }
    head_stream += EncodeFrame(m);
  }
  {
    capnp::MallocMessageBuilder m;
    auto req = m.initRoot<proto::ControlRequest>();
    req.setClusterStatus();
    head_stream += EncodeFrame(m);
  }
  out.push_back(With(kHead, head_stream));
  return out;
}

HeadServer* Head() {
  // Stopped by an exit handler registered after RocksDB's own statics exist, so that it runs
  // before they are destroyed (a static head would be destroyed after them).
  static TempDir& dir = *new TempDir("cumulus-fuzz-head");
  static std::unique_ptr<HeadServer>& head = *new std::unique_ptr<HeadServer>([] {
    HeadOptions options;
    options.port = 0;
    options.data_dir = dir.path();
    options.token = kToken;
    auto h = HeadServer::Start(options);
    if (!h.ok()) {
      std::fprintf(stderr, "cannot start a head: %s\n", h.status().ToString().c_str());
      std::abort();
    }
    return std::move(*h);
  }());
  static bool cleanup = [] {
    std::atexit([] {
      head.reset();
      std::error_code ec;
      std::filesystem::remove_all(dir.path(), ec);
    });
    return true;
  }();
  (void)cleanup;
  return head.get();
}

template <typename T>
void Record(std::string_view bytes) {
  auto r = DecodeRecord<T>(bytes);
  if (!r.ok() && r.status().code() != StatusCode::kInvalidArgument) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  cumulus::fuzz::MaybeMakeSeeds(argc, argv, Seeds);
  cumulus::SetLogLevel(cumulus::LogLevel::kError);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % kModes) {
    case kJob:
      Record<JobRecord>(bytes);
      break;
    case kJobEnd:
      Record<JobEnd>(bytes);
      break;
    case kSubmission:
      Record<SubmissionRecord>(bytes);
      break;
    case kPackage:
      Record<JobPackage>(bytes);
      break;
    case kNodeState:
      Record<NodeStateReport>(bytes);
      break;
    case kGroup:
      Record<GroupRecord>(bytes);
      break;
    case kActorName:
      Record<ActorNameRecord>(bytes);
      break;
    case kNodeBytes:
      (void)NodeFromBytes(std::string(bytes));
      break;
    case kRequest: {
      auto words = fuzz::WordsOf(data + 1, size - 1);
      try {
        // As HeadServer::Loop::Handle (runtime/head/head_requests.cc) reads a request.
        capnp::ReaderOptions limits;
        limits.traversalLimitInWords = words.size() + 64;
        limits.nestingLimit = 16;
        capnp::FlatArrayMessageReader reader(words, limits);
        auto req = reader.getRoot<proto::ControlRequest>();
        if (req.isRegisterNode()) (void)DecodeNode(req.getRegisterNode());
        if (req.isHeartbeat()) {
          (void)DecodeResources(req.getHeartbeat().getResourcesAvailable());
          (void)DecodeDemand(req.getHeartbeat().getPendingDemand());
        }
        (void)fuzz::WalkStruct(capnp::toDynamic(req));
      } catch (const kj::Exception&) {
      }
      break;
    }
    default: {
      HeadServer* head = Head();
      auto fd = ConnectTcp(HostPort{"127.0.0.1", head->port()}, std::chrono::seconds(5));
      if (!fd.ok()) std::abort();
      fuzz::SendAllThenShutdown(*fd, HelloFrame() + std::string(bytes));
      fuzz::DrainUntilClosed(*fd);
      close(*fd);
      break;
    }
  }
  return 0;
}
