#include "runtime/core/records.h"

#include <cstring>

#include "runtime/core/record_codec.h"
#include "runtime/proto/control.capnp.h"

namespace cumulus {

using record_codec::Bytes;
using record_codec::Read;
using record_codec::SetTexts;
using record_codec::Text;
using record_codec::Texts;

namespace {

capnp::Data::Reader DataOf(const std::string& s) {
  return capnp::Data::Reader(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

}  // namespace

std::string EncodeRecord(const JobRecord& r) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<proto::JobRecord>();
  b.setBinaryObject(r.binary_object);
  b.setBinarySize(r.binary_size);
  b.setBinaryHash(r.binary_hash);
  b.setTransferAddress(r.transfer_address);
  SetTexts(b.initArgv(static_cast<unsigned>(r.argv.size())), r.argv);
  b.setDriverNode(r.driver_node);
  b.setSubmitted(r.submitted);
  b.setStartMicros(r.start_micros);
  return Bytes(m);
}

template <>
Result<JobRecord> DecodeRecord<JobRecord>(std::string_view bytes) {
  return Read<proto::JobRecord>(bytes, "job", [](proto::JobRecord::Reader b) {
    JobRecord r;
    r.binary_object = Text(b.getBinaryObject());
    r.binary_size = b.getBinarySize();
    r.binary_hash = Text(b.getBinaryHash());
    r.transfer_address = Text(b.getTransferAddress());
    r.argv = Texts(b.getArgv());
    r.driver_node = Text(b.getDriverNode());
    r.submitted = b.getSubmitted();
    r.start_micros = b.getStartMicros();
    return r;
  });
}

std::string EncodeRecord(const JobEnd& r) {
  capnp::MallocMessageBuilder m;
  m.initRoot<proto::JobEnd>().setEndMicros(r.end_micros);
  return Bytes(m);
}

template <>
Result<JobEnd> DecodeRecord<JobEnd>(std::string_view bytes) {
  return Read<proto::JobEnd>(bytes, "job end", [](proto::JobEnd::Reader b) {
    JobEnd r;
    r.end_micros = b.getEndMicros();
    return r;
  });
}

std::string EncodeRecord(const SubmissionRecord& r) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<proto::SubmissionRecord>();
  b.setName(r.name);
  SetTexts(b.initEntrypoint(static_cast<unsigned>(r.entrypoint.size())), r.entrypoint);
  b.setResources(r.resources);
  b.setNode(r.node);
  b.setState(r.state);
  b.setMessage(r.message);
  b.setPid(r.pid);
  b.setSubmitMicros(r.submit_micros);
  b.setStartMicros(r.start_micros);
  b.setEndMicros(r.end_micros);
  b.setPackageChunks(r.package_chunks);
  b.setPackageBytes(r.package_bytes);
  return Bytes(m);
}

template <>
Result<SubmissionRecord> DecodeRecord<SubmissionRecord>(std::string_view bytes) {
  return Read<proto::SubmissionRecord>(bytes, "submission", [](proto::SubmissionRecord::Reader b) {
    SubmissionRecord r;
    r.name = Text(b.getName());
    r.entrypoint = Texts(b.getEntrypoint());
    r.resources = Text(b.getResources());
    r.node = Text(b.getNode());
    r.state = Text(b.getState());
    r.message = Text(b.getMessage());
    r.pid = b.getPid();
    r.submit_micros = b.getSubmitMicros();
    r.start_micros = b.getStartMicros();
    r.end_micros = b.getEndMicros();
    r.package_chunks = b.getPackageChunks();
    r.package_bytes = b.getPackageBytes();
    return r;
  });
}

std::string EncodeRecord(const JobPackage& r) {
  capnp::MallocMessageBuilder m;
  auto files = m.initRoot<proto::JobPackage>().initFiles(static_cast<unsigned>(r.files.size()));
  for (unsigned i = 0; i < r.files.size(); ++i) {
    files[i].setPath(r.files[i].path);
    files[i].setMode(r.files[i].mode);
    files[i].setBytes(DataOf(r.files[i].bytes));
  }
  return Bytes(m);
}

template <>
Result<JobPackage> DecodeRecord<JobPackage>(std::string_view bytes) {
  return Read<proto::JobPackage>(bytes, "job package", [](proto::JobPackage::Reader b) {
    JobPackage r;
    for (auto f : b.getFiles()) {
      PackageFile file;
      file.path = Text(f.getPath());
      file.mode = f.getMode();
      auto d = f.getBytes();
      file.bytes.assign(reinterpret_cast<const char*>(d.begin()), d.size());
      r.files.push_back(std::move(file));
    }
    return r;
  });
}

std::string EncodeRecord(const NodeStateReport& r) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<proto::NodeStateReport>();
  b.setMicros(r.micros);
  b.setTasksTotal(r.tasks_total);
  b.setObjectsTotal(r.objects_total);
  auto tasks = b.initTasks(static_cast<unsigned>(r.tasks.size()));
  for (unsigned i = 0; i < r.tasks.size(); ++i) {
    const TaskStateRow& t = r.tasks[i];
    tasks[i].setTask(t.task);
    tasks[i].setJob(t.job);
    tasks[i].setFunction(t.function);
    tasks[i].setState(t.state);
    tasks[i].setPid(t.pid);
    tasks[i].setAttempt(t.attempt);
  }
  auto objects = b.initObjects(static_cast<unsigned>(r.objects.size()));
  for (unsigned i = 0; i < r.objects.size(); ++i) {
    const ObjectStateRow& o = r.objects[i];
    objects[i].setObject(o.object);
    objects[i].setJob(o.job);
    objects[i].setSize(o.size);
    objects[i].setWhere(o.where);
    objects[i].setPins(o.pins);
  }
  auto disk = b.initDisk();
  disk.setProgramCache(r.disk.program_cache);
  disk.setProgramCacheMax(r.disk.program_cache_max);
  disk.setSubmitted(r.disk.submitted);
  disk.setSpill(r.disk.spill);
  disk.setLogs(r.disk.logs);
  disk.setFree(r.disk.free);
  return Bytes(m);
}

template <>
Result<NodeStateReport> DecodeRecord<NodeStateReport>(std::string_view bytes) {
  return Read<proto::NodeStateReport>(bytes, "node state", [](proto::NodeStateReport::Reader b) {
    NodeStateReport r;
    r.micros = b.getMicros();
    r.tasks_total = b.getTasksTotal();
    r.objects_total = b.getObjectsTotal();
    for (auto t : b.getTasks()) {
      TaskStateRow row;
      row.task = Text(t.getTask());
      row.job = Text(t.getJob());
      row.function = Text(t.getFunction());
      row.state = Text(t.getState());
      row.pid = t.getPid();
      row.attempt = t.getAttempt();
      r.tasks.push_back(std::move(row));
    }
    for (auto o : b.getObjects()) {
      ObjectStateRow row;
      row.object = Text(o.getObject());
      row.job = Text(o.getJob());
      row.size = o.getSize();
      row.where = Text(o.getWhere());
      row.pins = o.getPins();
      r.objects.push_back(std::move(row));
    }
    if (b.hasDisk()) {
      auto d = b.getDisk();
      r.disk.program_cache = d.getProgramCache();
      r.disk.program_cache_max = d.getProgramCacheMax();
      r.disk.submitted = d.getSubmitted();
      r.disk.spill = d.getSpill();
      r.disk.logs = d.getLogs();
      r.disk.free = d.getFree();
    }
    return r;
  });
}

std::string EncodeRecord(const GroupRecord& r) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<proto::GroupRecord>();
  b.setJob(r.job);
  SetTexts(b.initNodes(static_cast<unsigned>(r.nodes.size())), r.nodes);
  return Bytes(m);
}

template <>
Result<GroupRecord> DecodeRecord<GroupRecord>(std::string_view bytes) {
  return Read<proto::GroupRecord>(bytes, "placement group", [](proto::GroupRecord::Reader b) {
    GroupRecord r;
    r.job = Text(b.getJob());
    r.nodes = Texts(b.getNodes());
    return r;
  });
}

std::string EncodeRecord(const ActorNameRecord& r) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<proto::ActorNameRecord>();
  b.setActorId(r.actor_id);
  b.setClassName(r.class_name);
  b.setAddress(r.address);
  return Bytes(m);
}

template <>
Result<ActorNameRecord> DecodeRecord<ActorNameRecord>(std::string_view bytes) {
  return Read<proto::ActorNameRecord>(bytes, "actor name", [](proto::ActorNameRecord::Reader b) {
    ActorNameRecord r;
    r.actor_id = Text(b.getActorId());
    r.class_name = Text(b.getClassName());
    r.address = Text(b.getAddress());
    return r;
  });
}

}  // namespace cumulus
