// QueryNodes against a fake node on loopback that answers with a malformed message: that node is
// named as not answering; nothing escapes its thread (an exception there would end the process).
#include "runtime/cli/node_query.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "runtime/net/frame.h"
#include "runtime/net/tcp.h"

namespace cumulus::cli {
namespace {

using namespace std::chrono_literals;

TEST(NodeQueryTest, AMalformedReplyIsThatNodesErrorNotACrash) {
  uint16_t port = 0;
  auto listener = ListenTcp("127.0.0.1", 0, &port);
  ASSERT_TRUE(listener.ok()) << listener.status();
  // One frame: a one-word segment whose root pointer points far outside it.
  std::string frame(kFrameHeaderBytes + 16, '\0');
  uint32_t magic = kFrameMagic, length = 16, segments = 0, words = 1;
  uint64_t root = uint64_t{1000} << 2 | uint64_t{1} << 32;  // struct at +1000 words, 1 data word
  std::memcpy(&frame[0], &magic, 4);
  std::memcpy(&frame[4], &length, 4);
  std::memcpy(&frame[8], &segments, 4);
  std::memcpy(&frame[12], &words, 4);
  std::memcpy(&frame[16], &root, 8);
  std::thread fake([&] {
    pollfd p{*listener, POLLIN, 0};
    if (poll(&p, 1, 5000) != 1) return;
    int fd = accept(*listener, nullptr, nullptr);
    if (fd < 0) return;
    char buf[4096];
    (void)recv(fd, buf, sizeof(buf), 0);  // the hello (and maybe the query)
    (void)SendAll(fd, reinterpret_cast<const uint8_t*>(frame.data()), frame.size(), 5s);
    // Held open until the client is done with it.
    while (recv(fd, buf, sizeof(buf), 0) > 0) {
    }
    close(fd);
  });
  NodeRecord node;
  node.id = NodeId::FromRandom();
  node.state = NodeState::kAlive;
  node.core_address = "127.0.0.1:" + std::to_string(port);
  StateQuerySpec q;
  q.kind = "tasks";
  q.limit = 10;
  NodeQueryOptions o;
  o.deadline = 5s;
  auto answers = QueryNodes({node}, std::string(64, 'x'), q, o);
  fake.join();
  close(*listener);
  ASSERT_TRUE(answers.ok()) << answers.status();
  EXPECT_TRUE(answers->rows.empty());
  ASSERT_EQ(answers->unanswered.size(), 1u);
  EXPECT_NE(answers->unanswered.begin()->second.find("malformed"), std::string::npos)
      << answers->unanswered.begin()->second;
}

}  // namespace
}  // namespace cumulus::cli
