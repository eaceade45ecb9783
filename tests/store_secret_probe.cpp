// Run by ctest under `ranks run -n 2` (store.secret.*) and under two launchers of a 2-node job on
// loopback (scenario.multinode.store_secret): the job's rendezvous store has a fresh secret
// (RANKS_STORE_TOKEN from ranks run, or the file node 0's launcher wrote) and listens on loopback
// only: on MASTER_ADDR's address, never every interface. Rank 0 checks that a client without
// the secret is refused before it can read a key, that one with it reads what rank 0 wrote, and
// that the store does not answer on another address of this host.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ranks/ranks.hpp>
#include <ranks/store/tcp_store.hpp>
#include <stdexcept>
#include <string>

#include "accepts_connection.hpp"

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("store_secret_probe: " + what);
}


// The job's secret as its ranks get it: the variable, else the first line of the file.
std::string job_secret() {
  if (const char* token = std::getenv("RANKS_STORE_TOKEN")) return token;
  std::string line;
  if (const char* path = std::getenv("RANKS_STORE_TOKEN_FILE")) {
    std::ifstream file(path);
    std::getline(file, line);
  }
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  return ranks::main(argc, argv, [] {
    if (ranks::get_rank() == 0) {
      const std::string token = job_secret();
      require(token.size() == 64, "the job has no fresh secret");
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
      require(std::string(size.begin(), size.end()) == std::getenv("WORLD_SIZE"),
              "the member read the wrong world size");
      require(!ranks::testing::accepts("127.0.0.2", port),
              "the store answers on 127.0.0.2, not loopback only");
      std::printf("store_secret_probe: refused without the secret, served with it, loopback only\n");
    }
    ranks::barrier();
  });
}
