// store_probe: a separate process that uses a node's object store, for the multi-process tests.
//
//   store_probe read SOCKET ID_HEX     Gets the object, prints
//                                      "read size=N checksum=HEX in_shared_region=1", then
//                                      "pinned", and holds the pin until its stdin closes.
//   store_probe create SOCKET ID_HEX SIZE
//                                      Creates the object without sealing it, prints "created",
//                                      and waits until its stdin closes.
#include <unistd.h>
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/object_store/store_client.h"

using namespace cumulus;

static void WaitForStdinToClose() {
  char c;
  while (read(STDIN_FILENO, &c, 1) > 0) {
  }
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: store_probe read|create SOCKET ID_HEX [SIZE]\n");
    return 2;
  }
  std::string cmd = argv[1];
  auto id = ObjectId::FromHex(argv[3]);
  if (!id.ok()) {
    std::fprintf(stderr, "store_probe: %s\n", id.status().ToString().c_str());
    return 2;
  }
  auto client = StoreClient::Connect(argv[2], {"store_probe", 10'000});
  if (!client.ok()) {
    std::fprintf(stderr, "store_probe: %s\n", client.status().ToString().c_str());
    return 1;
  }
  if (cmd == "read") {
    auto buf = (*client)->Get(*id);
    if (!buf.ok()) {
      std::printf("error %s\n", buf.status().ToString().c_str());
      return 1;
    }
    bool in_region = (*client)->region().Contains(buf->data(), buf->size());
    std::printf("read size=%llu checksum=%016llx in_shared_region=%d\npinned\n",
                static_cast<unsigned long long>(buf->size()),
                static_cast<unsigned long long>(XXH3_64bits(buf->data(), buf->size())),
                in_region ? 1 : 0);
    std::fflush(stdout);
    WaitForStdinToClose();
    return 0;
  }
  if (cmd == "create" && argc >= 5) {
    auto buf = (*client)->Create(*id, std::strtoull(argv[4], nullptr, 10));
    if (!buf.ok()) {
      std::printf("error %s\n", buf.status().ToString().c_str());
      return 1;
    }
    std::printf("created\n");
    std::fflush(stdout);
    WaitForStdinToClose();
    return 0;
  }
  std::fprintf(stderr, "store_probe: unknown command '%s'\n", cmd.c_str());
  return 2;
}
