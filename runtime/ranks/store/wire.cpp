#include "ranks/store/wire.hpp"

#include <fmt/format.h>

#include <limits>

#include "ranks/store/messages.hpp"

namespace ranks::store::wire {

namespace {
// Decoding trusts no length beyond what the frame holds; the server checks its own limits on
// keys and values afterwards so that it can answer them with a clear error.
constexpr std::size_t kAny = std::numeric_limits<std::size_t>::max();
}  // namespace

const char* op_name(Op op) {
  switch (op) {
    case Op::Hello:
      return "hello";
    case Op::Set:
      return "set";
    case Op::Get:
      return "get";
    case Op::Add:
      return "add";
    case Op::CompareSet:
      return "compare_set";
    case Op::Check:
      return "check";
    case Op::Wait:
      return "wait";
    case Op::DeleteKey:
      return "delete_key";
    case Op::NumKeys:
      return "num_keys";
  }
  return "unknown";
}

std::size_t max_frame(std::size_t max_key, std::size_t max_value) {
  return 2 * max_value + max_key + 64 * 1024;
}

std::string limit_violation(const Request& request, std::size_t max_key, std::size_t max_value) {
  const auto key_error = [&](const std::string& key) {
    return fmt::format(
        "{}: the key {} has {}, more than the server's limit of {}; use "
        "shorter keys",
        op_name(request.op), quote_key(key), describe_size(key.size()), describe_size(max_key));
  };
  if (request.key.size() > max_key) return key_error(request.key);
  for (const std::string& key : request.keys) {
    if (key.size() > max_key) return key_error(key);
  }
  for (const std::vector<uint8_t>* value : {&request.value, &request.expected}) {
    if (value->size() <= max_value) continue;
    return fmt::format(
        "{}({}): the value has {}, more than the server's limit of {}; keep large data out of "
        "the store or raise the server's max_value_bytes",
        op_name(request.op), quote_key(request.key), describe_size(value->size()),
        describe_size(max_value));
  }
  if ((request.op == Op::Get || request.op == Op::Wait) && request.number < 0) {
    return fmt::format("{}: the timeout is {} ms; it must not be negative", op_name(request.op),
                       request.number);
  }
  return {};
}

std::vector<uint8_t> encode_request(const Request& r) {
  ByteWriter w;
  w.u8(static_cast<uint8_t>(r.op));
  switch (r.op) {
    case Op::Hello:
      w.u32(r.magic);
      w.u16(r.version);
      w.str(r.token);
      break;
    case Op::Set:
      w.str(r.key);
      w.bytes(r.value);
      break;
    case Op::Get:
      w.str(r.key);
      w.i64(r.number);
      break;
    case Op::Add:
      w.str(r.key);
      w.i64(r.number);
      break;
    case Op::CompareSet:
      w.str(r.key);
      w.bytes(r.expected);
      w.bytes(r.value);
      break;
    case Op::Check:
      w.strings(r.keys);
      break;
    case Op::Wait:
      w.strings(r.keys);
      w.i64(r.number);
      break;
    case Op::DeleteKey:
    case Op::NumKeys:
      w.str(r.key);
      break;
  }
  return w.take();
}

Request decode_request(std::span<const uint8_t> body) {
  ByteReader in(body);
  Request r;
  const uint8_t op = in.u8();
  if (op < static_cast<uint8_t>(Op::Hello) || op > static_cast<uint8_t>(Op::NumKeys)) {
    throw DecodeError(fmt::format("unknown request op {}", op));
  }
  r.op = static_cast<Op>(op);
  switch (r.op) {
    case Op::Hello:
      r.magic = in.u32();
      if (r.magic != kMagic) {
        throw DecodeError(fmt::format("bad magic 0x{:08x} (a ranks store client sends 0x{:08x})",
                                      r.magic, kMagic));
      }
      r.version = in.u16();
      // Later versions may change what follows; the server answers a version it does not speak
      // with an error that names both versions instead of a parse failure.
      if (r.version != kVersion) return r;
      r.token = in.str(kMaxTokenBytes, "token");
      break;
    case Op::Set:
      r.key = in.str(kAny, "key");
      r.value = in.bytes(kAny, "value");
      break;
    case Op::Get:
    case Op::Add:
      r.key = in.str(kAny, "key");
      r.number = in.i64();
      break;
    case Op::CompareSet:
      r.key = in.str(kAny, "key");
      r.expected = in.bytes(kAny, "expected value");
      r.value = in.bytes(kAny, "desired value");
      break;
    case Op::Check:
      r.keys = in.strings(kAny, "keys");
      break;
    case Op::Wait:
      r.keys = in.strings(kAny, "keys");
      r.number = in.i64();
      break;
    case Op::DeleteKey:
    case Op::NumKeys:
      r.key = in.str(kAny, "key");
      break;
  }
  in.expect_end("the request");
  return r;
}

std::vector<uint8_t> encode_reply(Op op, const Reply& r) {
  ByteWriter w;
  w.u8(static_cast<uint8_t>(r.status));
  if (r.status == Status::Timeout) {
    w.strings(r.missing);
    w.i32(r.clients);
    w.i32(r.world_size);
  } else if (r.status == Status::Error) {
    w.u8(static_cast<uint8_t>(r.error));
    w.str(r.message);
  } else {
    switch (op) {
      case Op::Hello:
        w.u16(r.version);
        w.u32(static_cast<uint32_t>(r.max_key));
        w.u64(r.max_value);
        break;
      case Op::Get:
      case Op::CompareSet:
        w.bytes(r.value);
        break;
      case Op::Add:
      case Op::NumKeys:
        w.i64(r.number);
        break;
      case Op::Check:
      case Op::DeleteKey:
        w.u8(r.flag ? 1 : 0);
        break;
      case Op::Set:
      case Op::Wait:
        break;
    }
  }
  return w.take();
}

Reply decode_reply(Op op, std::span<const uint8_t> body) {
  ByteReader in(body);
  Reply r;
  const uint8_t status = in.u8();
  if (status > static_cast<uint8_t>(Status::Error)) {
    throw DecodeError(fmt::format("unknown reply status {}", status));
  }
  r.status = static_cast<Status>(status);
  if (r.status == Status::Timeout) {
    r.missing = in.strings(kAny, "missing keys");
    r.clients = in.i32();
    r.world_size = in.i32();
  } else if (r.status == Status::Error) {
    const uint8_t kind = in.u8();
    if (kind < static_cast<uint8_t>(ErrorKind::InvalidArgument) ||
        kind > static_cast<uint8_t>(ErrorKind::Protocol)) {
      throw DecodeError(fmt::format("unknown error kind {}", kind));
    }
    r.error = static_cast<ErrorKind>(kind);
    r.message = in.str(kAny, "error message");
  } else {
    switch (op) {
      case Op::Hello:
        r.version = in.u16();
        r.max_key = in.u32();
        r.max_value = in.u64();
        break;
      case Op::Get:
      case Op::CompareSet:
        r.value = in.bytes(kAny, "value");
        break;
      case Op::Add:
      case Op::NumKeys:
        r.number = in.i64();
        break;
      case Op::Check:
      case Op::DeleteKey: {
        const uint8_t flag = in.u8();
        if (flag > 1) throw DecodeError(fmt::format("a boolean reply holds {}", flag));
        r.flag = flag == 1;
        break;
      }
      case Op::Set:
      case Op::Wait:
        break;
    }
  }
  in.expect_end("the reply");
  return r;
}

std::vector<uint8_t> frame(const std::vector<uint8_t>& body) {
  ByteWriter w;
  w.u32(static_cast<uint32_t>(body.size()));
  std::vector<uint8_t> out = w.take();
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

}  // namespace ranks::store::wire
