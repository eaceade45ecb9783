// libFuzzer target: the TCP store's wire protocol, as a server and a client read it from a peer.
// Every input is a frame body (the u32 length prefix is the loop's, which checks it against the
// limits before it reads the body). The first byte picks the reader: a request (what the server
// reads from any client, strangers included) or the reply to one op (what a client reads).
// Whatever decodes must encode back to a body that decodes to the same message; whatever does
// not must fail with DecodeError, never crash, hang or allocate far past its own size.
//
// RANKS_FUZZ_WRITE_SEEDS=DIR writes the seed corpus (one well-formed body of each kind) to DIR.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "ranks/store/wire.hpp"

namespace {

using namespace ranks::store;
using wire::Op;

constexpr Op kOps[] = {Op::Hello, Op::Set,   Op::Get,       Op::Add,    Op::CompareSet,
                       Op::Check, Op::Wait, Op::DeleteKey, Op::NumKeys};

bool same(const wire::Request& a, const wire::Request& b) {
  return a.op == b.op && a.key == b.key && a.keys == b.keys && a.value == b.value &&
         a.expected == b.expected && a.number == b.number && a.magic == b.magic &&
         a.version == b.version && a.token == b.token;
}

bool same(const wire::Reply& a, const wire::Reply& b) {
  return a.status == b.status && a.value == b.value && a.number == b.number && a.flag == b.flag &&
         a.version == b.version && a.max_key == b.max_key && a.max_value == b.max_value &&
         a.missing == b.missing && a.clients == b.clients && a.world_size == b.world_size &&
         a.error == b.error && a.message == b.message;
}

void write_seed(const std::string& dir, const std::string& name, uint8_t reader,
                const std::vector<uint8_t>& body) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.put(static_cast<char>(reader));
  out.write(reinterpret_cast<const char*>(body.data()), static_cast<std::streamsize>(body.size()));
}

void write_seeds(const std::string& dir) {
  wire::Request r;
  r.token = "0123456789abcdef";
  write_seed(dir, "hello", 0, wire::encode_request(r));
  r = {};
  r.op = Op::Set;
  r.key = "ranks/world_size";
  r.value = {'4'};
  write_seed(dir, "set", 0, wire::encode_request(r));
  r.op = Op::CompareSet;
  r.expected = {'3'};
  write_seed(dir, "compare_set", 0, wire::encode_request(r));
  r = {};
  r.op = Op::Wait;
  r.keys = {"a", "b/c"};
  r.number = 30000;
  write_seed(dir, "wait", 0, wire::encode_request(r));
  wire::Reply ok;
  ok.version = wire::kVersion;
  ok.max_key = 4096;
  ok.max_value = 1 << 26;
  write_seed(dir, "reply_hello", 1, wire::encode_reply(Op::Hello, ok));
  ok = {};
  ok.value = {'v'};
  write_seed(dir, "reply_get", 3, wire::encode_reply(Op::Get, ok));
  wire::Reply timeout;
  timeout.status = wire::Status::Timeout;
  timeout.missing = {"k1", "k2"};
  timeout.clients = 3;
  timeout.world_size = 4;
  write_seed(dir, "reply_timeout", 7, wire::encode_reply(Op::Wait, timeout));
  wire::Reply error;
  error.status = wire::Status::Error;
  error.error = wire::ErrorKind::Rendezvous;
  error.message = "the token differs";
  write_seed(dir, "reply_error", 1, wire::encode_reply(Op::Hello, error));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("RANKS_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t reader = data[0] % (1 + std::size(kOps));
  const std::span<const uint8_t> body(data + 1, size - 1);
  try {
    if (reader == 0) {
      const wire::Request request = wire::decode_request(body);
      if (!same(wire::decode_request(wire::encode_request(request)), request)) std::abort();
    } else {
      const Op op = kOps[reader - 1];
      const wire::Reply reply = wire::decode_reply(op, body);
      if (!same(wire::decode_reply(op, wire::encode_reply(op, reply)), reply)) std::abort();
    }
  } catch (const DecodeError&) {
    // malformed: what a reader must say of it
  }
  return 0;
}
