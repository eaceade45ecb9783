// Run by ctest under `ranks run -n 2` (store.secret.*): the job's rendezvous store has a fresh
// secret and, the job being on one node, listens on loopback only. Rank 0 checks that a client
// without the secret is refused before it can read a key, that one with it reads what rank 0
// wrote, and that the store does not answer on another address of this host.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ranks/ranks.hpp>
#include <ranks/store/tcp_store.hpp>
#include <stdexcept>
#include <string>

#include "accepts_connection.hpp"

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("store_secret_probe: " + what);
}


}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  return ranks::main(argc, argv, [] {
    if (ranks::get_rank() == 0) {
      const char* token = std::getenv("RANKS_STORE_TOKEN");
      require(token != nullptr && std::strlen(token) == 64, "ranks run gave no fresh secret");
      const int port = std::atoi(std::getenv("MASTER_PORT"));
      bool refused = false;
      try {
        ranks::TCPStore stray("127.0.0.1", port, -1, false, 5s);
        stray.get("ranks/world_size");
      } catch (const ranks::RendezvousError& e) {
        refused = std::strstr(e.what(), "token") != nullptr;
      }
      require(refused, "a client without the secret was not refused");
      ranks::TCPStore member("127.0.0.1", port, -1, false, 5s, token);
      const std::vector<uint8_t> size = member.get("ranks/world_size");
      require(std::string(size.begin(), size.end()) == "2", "the member read the wrong world size");
      require(!ranks::testing::accepts("127.0.0.2", port),
              "the store answers on 127.0.0.2, not loopback only");
      std::printf("store_secret_probe: refused without the secret, served with it, loopback only\n");
    }
    ranks::barrier();
  });
}
