// The client of torch's TCPStore server (torchrun's agent store) where no such server answers.
// Its contract against a real torch server is in store_contract_test.cpp (TorchServer).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.hpp"
#include "ranks/store/torch_store_client.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;

// A loopback socket that listens (the kernel completes connections) but never reads or answers.
struct SilentListener {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  SilentListener() {
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof at;
    ::bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof at);
    ::listen(fd, 4);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&at), &length);
    port = ntohs(at.sin_port);
  }
  ~SilentListener() { ::close(fd); }
};

TEST(TorchStoreClient, AServerThatDoesNotSpeakTorch113IsNamedAsSuch) {
  SilentListener silent;
  try {
    store::TorchStoreClient client("127.0.0.1", silent.port, 200ms);
    FAIL() << "joined a server that never answers";
  } catch (const RendezvousError& e) {
    EXPECT_TRUE(Contains(e.what(), "torchrun's agent store 127.0.0.1:"));
    EXPECT_TRUE(Contains(e.what(), "did not answer a query of the store protocol of torch 2.4"));
    EXPECT_TRUE(Contains(e.what(), "no answer within 200 ms"));
  }
}

TEST(TorchStoreClient, NothingListeningTimesOutNamingTheAgent) {
  int port = 0;
  {
    SilentListener closed;  // a port that was free a moment ago, closed again
    port = closed.port;
  }
  try {
    store::TorchStoreClient client("127.0.0.1", port, 100ms);
    FAIL() << "joined a port where nothing listens";
  } catch (const Timeout& e) {
    EXPECT_TRUE(Contains(e.what(), "could not reach the server"));
    EXPECT_TRUE(Contains(e.what(), "is the agent still running?"));
  }
}

TEST(TorchStoreClient, BadArgumentsAreInvalid) {
  EXPECT_THROW(store::TorchStoreClient("", 1, 1s), InvalidArgument);
  EXPECT_THROW(store::TorchStoreClient("127.0.0.1", 0, 1s), InvalidArgument);
  EXPECT_THROW(store::TorchStoreClient("127.0.0.1", 1, 0ms), InvalidArgument);
}

}  // namespace
}  // namespace ranks::testing
