#include "runtime/metrics/file_sd.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "runtime/autoscaler/cluster_config.h"

namespace cumulus::metrics {
namespace {

NodeRecord Node(const std::string& metrics, const std::string& type,
                NodeState state = NodeState::kAlive) {
  NodeRecord n;
  n.id = NodeId::FromRandom();
  n.metrics_address = metrics;
  if (!type.empty()) n.labels[kNodeTypeLabel] = type;
  n.state = state;
  return n;
}

TEST(FileSdTest, GroupsAliveNodesByTypeAndListsTheHeadOnce) {
  std::vector<NodeRecord> nodes = {Node("127.0.0.1:9102", "cpu-cloud"), Node("127.0.0.1:9101", ""),
                                   Node("127.0.0.1:9103", "cpu-cloud"),
                                   Node("127.0.0.1:9104", "cpu-cloud", NodeState::kDead),
                                   Node("", "gpu-cloud")};
  EXPECT_EQ(RenderFileSd(nodes, "127.0.0.1:9100"),
            "[\n"
            "  {\"targets\": [\"127.0.0.1:9102\", \"127.0.0.1:9103\"], \"labels\": {\"node_type\": "
            "\"cpu-cloud\"}},\n"
            "  {\"targets\": [\"127.0.0.1:9100\"], \"labels\": {\"node_type\": \"head\"}},\n"
            "  {\"targets\": [\"127.0.0.1:9101\"], \"labels\": {\"node_type\": \"static\"}}\n"
            "]\n");
  // The head's own node serves the head's page on the same port: listed once, as the node.
  EXPECT_EQ(
      RenderFileSd({Node("127.0.0.1:9100", "")}, "127.0.0.1:9100"),
      "[\n  {\"targets\": [\"127.0.0.1:9100\"], \"labels\": {\"node_type\": \"static\"}}\n]\n");
  EXPECT_EQ(RenderFileSd({}, ""), "[]\n");
}

TEST(FileSdTest, WriterRewritesTheFileWhenNodesChange) {
  std::string dir = ::testing::TempDir() + "/file_sd_test_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::string path = dir + "/targets.json";
  std::mutex mu;
  std::vector<NodeRecord> nodes;
  FileSdWriterOptions o;
  o.path = path;
  o.nodes = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return nodes;
  };
  o.interval = std::chrono::milliseconds(10);
  auto writer = FileSdWriter::Start(o);
  ASSERT_TRUE(writer.ok()) << writer.status();
  auto read = [&] {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  EXPECT_EQ(read(), "[]\n");
  {
    std::lock_guard<std::mutex> lock(mu);
    nodes.push_back(Node("127.0.0.1:9200", "t"));
  }
  std::string want = RenderFileSd({Node("127.0.0.1:9200", "t")}, "");
  // Polls the file at a short interval (not a busy loop: CI has two cores) until the writer
  // has caught up, bounded.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (read() != want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(read(), want);
  writer->reset();
  // Nothing but the file is left in the directory (the temporary one was renamed).
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
  std::filesystem::remove_all(dir);
}

TEST(FileSdTest, WriteDoesNotFollowASymlinkAtATemporaryName) {
  std::string dir = ::testing::TempDir() + "/file_sd_symlink_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string path = dir + "/targets.json";
  std::string victim = dir + "/victim";
  std::ofstream(victim) << "keep";
  // Names a writer could plausibly pick for its temporary, each a symlink to the victim.
  for (std::string name :
       {path + ".tmp", path + ".tmp." + std::to_string(getpid()), path + ".XXXXXX", path + "~"}) {
    std::filesystem::create_symlink(victim, name);
  }
  ASSERT_TRUE(WriteFileAtomically(path, "[]\n").ok());
  std::ifstream in(victim);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), "keep");
  EXPECT_FALSE(std::filesystem::is_symlink(path));
  auto perms = std::filesystem::status(path).permissions();
  EXPECT_EQ(perms & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                std::filesystem::perms::group_read | std::filesystem::perms::others_read);
  // The file and the victim and the four symlinks: no temporary left behind.
  size_t entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) entries += !e.path().empty();
  EXPECT_EQ(entries, 6u);
  std::filesystem::remove_all(dir);
}

TEST(FileSdTest, AMissingDirectoryIsOneClearNotFound) {
  Status st = WriteFileAtomically("/nonexistent-dir-for-cumulus/targets.json", "[]\n");
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st;
  EXPECT_NE(st.message().find("/nonexistent-dir-for-cumulus/targets.json"), std::string::npos)
      << st;
  EXPECT_NE(st.message().find(std::strerror(ENOENT)), std::string::npos) << st;
  EXPECT_EQ(st.message().find('\n'), std::string::npos) << st;
}

TEST(FileSdTest, StartNamesAPathItCannotWrite) {
  FileSdWriterOptions o;
  o.path = "/nonexistent-dir-for-cumulus/targets.json";
  o.nodes = [] { return std::vector<NodeRecord>(); };
  auto writer = FileSdWriter::Start(o);
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.status().message().find("/nonexistent-dir-for-cumulus/targets.json"),
            std::string::npos)
      << writer.status();
}

}  // namespace
}  // namespace cumulus::metrics
