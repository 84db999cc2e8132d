#include "runtime/net/frame.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include "runtime/net/first_segment.h"
#include "runtime/proto/control.capnp.h"

namespace cumulus {
namespace {

std::string HelloFrame(const std::string& token) {
  capnp::MallocMessageBuilder m;
  auto req = m.initRoot<proto::ControlRequest>();
  req.setRequestId(7);
  req.initHello().setToken(token);
  return EncodeFrame(m);
}

TEST(FrameDecoderTest, ReassemblesFramesSplitAnywhere) {
  std::string stream = HelloFrame("a") + HelloFrame("bb") + HelloFrame("ccc");
  FrameDecoder d(1 << 20);
  int frames = 0;
  for (char c : stream) {  // one byte at a time: the worst split
    d.Append(&c, 1);
    while (true) {
      auto f = d.Next();
      ASSERT_TRUE(f.ok()) << f.status();
      if (!*f) break;
      ++frames;
    }
  }
  EXPECT_EQ(frames, 3);
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(FrameDecoderTest, RejectsForeignProtocolsAndOversizedFrames) {
  FrameDecoder http(1 << 20);
  std::string get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  http.Append(get.data(), get.size());
  EXPECT_EQ(http.Next().status().code(), StatusCode::kInvalidArgument);

  FrameDecoder small(64);
  std::string frame = HelloFrame(std::string(200, 'x'));
  small.Append(frame.data(), frame.size());
  auto r = small.Next();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("exceeds"), std::string::npos);

  FrameDecoder odd(1 << 20);
  std::string bad = frame.substr(0, 8);
  bad[4] = 13;  // 13 bytes: not whole words
  bad[5] = bad[6] = bad[7] = 0;
  odd.Append(bad.data(), bad.size());
  EXPECT_EQ(odd.Next().status().code(), StatusCode::kInvalidArgument);
}

// Builders on the hot paths start with a small first segment (first_segment.h): a message that
// outgrows it spans several segments, and must come out of a frame whole.
TEST(FrameDecoderTest, CarriesMessagesOfSeveralSegments) {
  capnp::MallocMessageBuilder m(kFrameFirstSegmentWords);
  auto req = m.initRoot<proto::ControlRequest>();
  req.setRequestId(9);
  std::string token(10 * kFrameFirstSegmentWords * sizeof(capnp::word), '\0');
  for (size_t i = 0; i < token.size(); ++i) token[i] = static_cast<char>('a' + i % 26);
  req.initHello().setToken(token);
  ASSERT_GE(m.getSegmentsForOutput().size(), 2u);

  std::string frame = EncodeFrame(m);
  FrameDecoder d(1 << 20);
  d.Append(frame.data(), frame.size());
  auto words = d.Next();
  ASSERT_TRUE(words.ok()) << words.status();
  ASSERT_TRUE(*words);
  capnp::FlatArrayMessageReader reader(**words);
  auto back = reader.getRoot<proto::ControlRequest>();
  EXPECT_EQ(back.getRequestId(), 9u);
  EXPECT_EQ(std::string(back.getHello().getToken().cStr()), token);
  EXPECT_EQ(d.buffered(), 0u);
}

}  // namespace
}  // namespace cumulus
