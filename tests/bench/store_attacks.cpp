// The audit's attacks on a job's rendezvous store, measured (reports/security.md): for each, the
// peak resident memory of the process hosting the server while it lasts (VmHWM, reset before
// each attack through /proc/self/clear_refs) and how long a member of the job waits for a set
// and a get meanwhile. The server runs with its default limits and a secret; the attackers are
// sockets of this process (their own memory is a few small buffers).
//   store_attacks

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ranks/errors.hpp"
#include "ranks/object/payload.hpp"
#include "ranks/store/tcp_store.hpp"
#include "ranks/store/wire.hpp"

namespace {

using namespace ranks;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

long status_kib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void send_all(int fd, const std::vector<uint8_t>& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the server closed it
    sent += static_cast<size_t>(n);
  }
}

std::vector<uint8_t> framed(const store::wire::Request& r) {
  return store::wire::frame(store::wire::encode_request(r));
}

std::vector<uint8_t> hello(const std::string& token) {
  store::wire::Request r;
  r.token = token;
  return framed(r);
}

// A compare_set with two values of `each` bytes (a frame of twice that), written from one
// small buffer so that the sender holds none of it.
void send_huge_compare_set(int fd, const std::string& key, uint32_t each) {
  auto u32 = [](uint32_t v) {
    const uint32_t be = htonl(v);
    std::vector<uint8_t> out(4);
    std::memcpy(out.data(), &be, 4);
    return out;
  };
  const uint32_t body = 1 + 4 + static_cast<uint32_t>(key.size()) + 2 * (4 + each);
  std::vector<uint8_t> head = u32(body);
  head.push_back(static_cast<uint8_t>(store::wire::Op::CompareSet));
  for (uint8_t b : u32(static_cast<uint32_t>(key.size()))) head.push_back(b);
  head.insert(head.end(), key.begin(), key.end());
  send_all(fd, head);
  const std::vector<uint8_t> chunk(1 << 20, 1);
  for (int value = 0; value < 2; ++value) {
    send_all(fd, u32(each));
    for (uint32_t sent = 0; sent < each; sent += chunk.size()) send_all(fd, chunk);
  }
}

struct Waits {
  double median_ms = 0;
  double max_ms = 0;
};

// A member's set + get, again and again while `attack` runs on another thread.
Waits member_waits(int port, const std::function<void()>& attack) {
  TCPStore member("127.0.0.1", port, -1, false, 60s, "secret");
  std::atomic<bool> done{false};
  std::thread attacker([&] {
    attack();
    done = true;
  });
  std::vector<double> ms;
  const std::vector<uint8_t> value(1024, 1);
  for (int i = 0; !done || i < 20; ++i) {
    const auto start = Clock::now();
    member.set("member/key", value);
    (void)member.get("member/key");
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  attacker.join();
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.back()};
}

void row(const std::string& attack, long baseline_kib, const Waits& waits,
         const std::string& outcome) {
  const long peak = status_kib("VmHWM");
  fmt::print("| {} | {:.1f} | {:.2f} | {:.2f} | {} |\n", attack,
             static_cast<double>(peak - baseline_kib) / 1024.0, waits.median_ms, waits.max_ms,
             outcome);
}

}  // namespace

int main() {
  TCPStoreOptions options;
  options.is_server = true;
  options.token = "secret";
  options.log = [](const std::string&) {};  // refusals are the point here
  TCPStore server(options);
  const int port = server.port();
  fmt::print("| attack | server's peak memory above idle (MiB) | member's set+get, median (ms) | "
             "max (ms) | what the attackers got |\n| --- | --- | --- | --- | --- |\n");

  reset_peak();
  long idle = status_kib("VmRSS");
  Waits waits = member_waits(port, [] { std::this_thread::sleep_for(200ms); });
  row("none", idle, waits, "-");

  // A stray reader and a key overwriter: 200 connections without the secret.
  reset_peak();
  idle = status_kib("VmRSS");
  std::atomic<int> refused{0};
  waits = member_waits(port, [&] {
        for (int i = 0; i < 200; ++i) {
          const int fd = connect_to(port);
          send_all(fd, hello(i % 2 ? "guess" : ""));
          store::wire::Request set;
          set.op = store::wire::Op::Set;
          set.key = "ranks/world_size";
          set.value = {'9'};
          send_all(fd, framed(set));
          char buffer[256];
          while (::recv(fd, buffer, sizeof buffer, 0) > 0) {
          }
          ++refused;
          ::close(fd);
        }
      });
  row("200 strangers read and overwrite keys (no secret)", idle, waits,
      fmt::format("{} turned away at the hello", refused.load()));

  // 400 idle connections that never say hello.
  reset_peak();
  idle = status_kib("VmRSS");
  std::vector<int> idle_fds;
  waits = member_waits(port, [&] {
    for (int i = 0; i < 400; ++i) idle_fds.push_back(connect_to(port));
  });
  row("400 idle connections", idle, waits, "at most 64 held in their handshake; the oldest closed");
  for (int fd : idle_fds) ::close(fd);

  // Huge frames from insiders (the secret known): 8 connections each send a 124 MiB set.
  reset_peak();
  idle = status_kib("VmRSS");
  std::atomic<int> cut{0};
  waits = member_waits(port, [&] {
        std::vector<std::thread> senders;
        for (int i = 0; i < 8; ++i) {
          senders.emplace_back([&, i] {
            const int fd = connect_to(port);
            send_all(fd, hello("secret"));
            char reply[64];
            (void)::recv(fd, reply, sizeof reply, 0);
            send_huge_compare_set(fd, fmt::format("huge/{}", i), 62u << 20);
            char buffer[4096];
            if (::recv(fd, buffer, sizeof buffer, 0) > 0 && buffer[4] != 0) ++cut;
            ::close(fd);
          });
        }
        for (auto& t : senders) t.join();
      });
  row("8 x 124 MiB compare_sets at once (insiders)", idle, waits,
      fmt::format("{} of 8 refused past max_buffered_bytes (256 MiB)", cut.load()));

  // The decoder: a 64 KiB corrupt body read as vector<array<double, 512>>.
  reset_peak();
  idle = status_kib("VmRSS");
  std::string outcome;
  waits = member_waits(port, [&] {
        std::vector<std::array<double, 512>> one(1);
        auto payload = object::encode(one);
        payload.resize(object::header_bytes + (64u << 10), 0xff);
        // the body length in the header follows the resized body
        const uint64_t body = payload.size() - object::header_bytes;
        std::memcpy(payload.data() + 8, &body, sizeof body);
        try {
          (void)object::decode<std::vector<std::array<double, 512>>>(payload, "rank 1");
          outcome = "decoded";
        } catch (const Error& e) {
          outcome = "refused before allocating";
        }
      });
  row("a 64 KiB object payload whose count asks for 2^64 arrays of 4 KiB", idle, waits, outcome);
  return 0;
}
