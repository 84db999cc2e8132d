#include "workers/core_channel.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <future>

#include "runtime/base/logging.h"
#include "runtime/core/messages.h"
#include "runtime/net/first_segment.h"
#include "runtime/net/frame.h"
#include "runtime/net/tcp.h"
#include "runtime/proto/core.capnp.h"

namespace cumulus {

namespace {

constexpr Duration kHelloTimeout = std::chrono::seconds(10);

// Writes what the socket takes now; returns how many bytes.
size_t WriteNow(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // full (the loop writes the rest) or broken (the loop finds out and closes it)
    }
  }
  return done;
}

}  // namespace

Result<std::unique_ptr<CoreChannel>> CoreChannel::Start(int node_fd, FrameDecoder decoder,
                                                        Handlers handlers) {
  std::unique_ptr<CoreChannel> channel(new CoreChannel());
  CoreChannel* c = channel.get();
  EventLoop::Handlers h;
  h.on_accept = [c, on_accept = std::move(handlers.on_accept)](uint64_t conn, bool) {
    c->AllowDirectWrites(conn);
    if (on_accept) on_accept(conn);
  };
  h.on_frame = std::move(handlers.on_frame);
  h.on_close = [c, on_close = std::move(handlers.on_close)](uint64_t conn, const std::string& why) {
    c->Forget(conn);
    on_close(conn, why);
  };
  h.on_warning = [](const std::string& what) {
    CUMULUS_LOG(WARN) << "cumulus: actor listener: " << what;
  };
  CUMULUS_ASSIGN_OR_RETURN(channel->loop_, EventLoop::Create(std::move(h)));
  // Frames that came with the hello's answer are handed on by the loop's first pass.
  channel->node_conn_ = channel->loop_->Adopt(node_fd, /*tcp=*/false, std::move(decoder));
  channel->AllowDirectWrites(channel->node_conn_);
  channel->thread_ = std::thread([c] { c->Run(); });
  return channel;
}

CoreChannel::~CoreChannel() { Stop(); }

void CoreChannel::Run() {
  while (!stop_) {
    loop_->Poll(std::chrono::milliseconds(200));
    loop_->Flush();
    ReleaseWrittenConnections();
    TellWritten();
  }
}

void CoreChannel::TellWritten() {
  for (auto it = written_waiters_.begin(); it != written_waiters_.end();) {
    if (loop_->HasQueuedOutput(it->first)) {
      ++it;
      continue;
    }
    it->second->set_value();  // written (or its connection closed: nothing more will be)
    it = written_waiters_.erase(it);
  }
}

void CoreChannel::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (!thread_.joinable()) return;
  // What was sent before (frees, kills) is written by the loop's last pass.
  loop_->Post([this] { stop_ = true; });
  if (std::this_thread::get_id() == thread_.get_id()) {
    thread_.detach();  // a handler stopped it: the loop ends after this pass
  } else {
    thread_.join();
  }
}

void CoreChannel::Send(uint64_t conn, std::string frame) {
  bool first;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (outbox_.empty() && in_loop_.count(conn) == 0) {
      auto fd = direct_fds_.find(conn);
      if (fd != direct_fds_.end()) {
        size_t written = WriteNow(fd->second, frame);
        if (written == frame.size()) return;
        frame.erase(0, written);
      }
    }
    first = outbox_.empty();
    outbox_.emplace_back(conn, std::move(frame));
  }
  if (first) loop_->Post([this] { DrainOutbox(); });
}

void CoreChannel::DrainOutbox() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [conn, frame] : outbox_) {
    in_loop_.insert(conn);
    loop_->Send(conn, std::move(frame));
  }
  outbox_.clear();
}

void CoreChannel::ReleaseWrittenConnections() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = in_loop_.begin(); it != in_loop_.end();) {
    it = loop_->HasQueuedOutput(*it) ? std::next(it) : in_loop_.erase(it);
  }
}

void CoreChannel::AllowDirectWrites(uint64_t conn) {
  std::lock_guard<std::mutex> lock(mu_);
  in_loop_.insert(conn);  // until the loop has written what it has for it
  direct_fds_[conn] = loop_->FdOf(conn);
}

void CoreChannel::Forget(uint64_t conn) {
  // Before the loop closes the socket: its number may be reused.
  std::lock_guard<std::mutex> lock(mu_);
  direct_fds_.erase(conn);
  in_loop_.erase(conn);
}

void CoreChannel::Close(uint64_t conn, std::string why) {
  loop_->Post([this, conn, why] { loop_->Close(conn, why); });
}

void CoreChannel::Refuse(uint64_t conn, std::string frame, std::string why) {
  // (Only for a caller not yet authenticated: nothing else was sent to it.)
  loop_->Post([this, conn, frame = std::move(frame), why]() mutable {
    loop_->Send(conn, std::move(frame));
    loop_->CloseAfterFlush(conn, why);
  });
}

void CoreChannel::SendAndWait(uint64_t conn, std::string frame, Duration timeout) {
  auto written = std::make_shared<std::promise<void>>();
  auto done = written->get_future();
  loop_->Post([this, conn, frame = std::move(frame), written]() mutable {
    {
      // What was sent before goes first; the connection stays the loop's until all is written,
      // so no other thread writes into the middle of this frame.
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [c, f] : outbox_) {
        in_loop_.insert(c);
        loop_->Send(c, std::move(f));
      }
      outbox_.clear();
      in_loop_.insert(conn);
      loop_->Send(conn, std::move(frame));
    }
    loop_->Flush();
    written_waiters_.emplace_back(conn, written);  // told by Run once it is all written
    TellWritten();
  });
  done.wait_for(timeout);
}

void CoreChannel::Connect(int fd, std::string hello, Duration timeout,
                          std::function<Adopted(uint64_t conn)> adopted) {
  loop_->Post(
      [this, fd, timeout, hello = std::move(hello), adopted = std::move(adopted)]() mutable {
        uint64_t conn =
            loop_->AdoptConnecting(fd, kMaxCoreFrameBytes, SystemClock::Get().Now() + timeout);
        loop_->Send(conn, std::move(hello));
        AllowDirectWrites(conn);
        Adopted what = adopted(conn);
        if (what.keep) return;
        if (!what.last_frame.empty()) loop_->Send(conn, std::move(what.last_frame));
        loop_->CloseAfterFlush(conn, "the actor is gone");
      });
}

Result<std::string> CoreChannel::ListenForCallers(const std::string& bind_host) {
  uint16_t port = 0;
  CUMULUS_ASSIGN_OR_RETURN(int fd, ListenTcp(bind_host, 0, &port));
  int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  EventLoop::ListenRules rules = EventLoop::PreAuthentication();
  loop_->Post([this, fd, rules] { loop_->Listen(fd, /*tcp=*/true, rules); });
  return bind_host + ":" + std::to_string(port);
}

Result<NodeHello> HelloNode(const std::string& node_socket, const JobId& job,
                            const WorkerId& worker) {
  NodeHello out;
  CUMULUS_ASSIGN_OR_RETURN(out.fd, ConnectUnix(node_socket));
  capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
  auto h = message.initRoot<proto::CoreMessage>().initHello();
  h.setPid(getpid());
  if (!worker.IsNil()) {
    auto w = h.initWorker();
    w.setWorkerId(DataOf(worker));
    w.setJobId(DataOf(job));
  } else {
    h.initDriver().setJobId(DataOf(job));
  }
  auto fail = [&](Status st) {
    close(out.fd);
    return st;
  };
  std::string hello = EncodeFrame(message);
  Status said =
      SendAll(out.fd, reinterpret_cast<const uint8_t*>(hello.data()), hello.size(), kHelloTimeout);
  if (!said.ok()) return fail(said);
  out.decoder = FrameDecoder(kMaxCoreFrameBytes);
  auto words = ReadFrame(out.fd, out.decoder, SystemClock::Get().Now() + kHelloTimeout);
  if (!words.ok()) return fail(words.status());
  capnp::FlatArrayMessageReader reader(*words);
  auto msg = reader.getRoot<proto::CoreMessage>();
  if (!msg.isHelloAck()) return fail(Status::Internal("the node did not acknowledge the hello"));
  auto ack = msg.getHelloAck();
  out.node_id = IdFrom<NodeId>(ack.getNodeId());
  out.transfer_address = ack.getTransferAddress();
  out.store_socket = ack.getStoreSocket();
  return out;
}

}  // namespace cumulus
