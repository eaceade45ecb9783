#pragma once
// The TCP store's wire protocol, version 1.
//
// Every message in either direction is a frame: a u32 body length, then the body. Integers are
// big-endian; "bytes" is a u32 length and that many bytes; "keys" is a u32 count of "bytes".
//
// A connection opens with the client's Hello. The server answers Ok, or Error and closes. Then
// the client sends one request at a time and reads its reply before it sends the next.
//
//   request = u8 op, then
//     Hello       1  u32 magic 0x524E4B53 ("RNKS"), u16 version, bytes token
//     Set         2  bytes key, bytes value
//     Get         3  bytes key, i64 timeout_ms     parked on the server until set or timed out
//     Add         4  bytes key, i64 delta
//     CompareSet  5  bytes key, bytes expected, bytes desired
//     Check       6  keys
//     Wait        7  keys, i64 timeout_ms          parked like Get
//     DeleteKey   8  bytes key
//     NumKeys     9  bytes prefix                  empty: every key
//   reply = u8 status, then
//     Ok       0  Hello: u16 version, u32 max_key, u64 max_value; Get, CompareSet: bytes value;
//                 Add, NumKeys: i64; Check, DeleteKey: u8 0|1; Set, Wait: nothing
//     Timeout  1  keys still missing, i32 clients connected, i32 world size (-1: unknown)
//     Error    2  u8 kind (1 invalid argument, 2 rendezvous, 3 protocol), bytes message
//
// Limits: a frame before the handshake has at most 64 KiB; after it, at most
// 2 * max_value + max_key + 64 KiB (compare_set carries two values). A key or value over the
// server's limit is answered with Error (invalid argument) and the connection stays usable. A
// frame over the limit, an unknown op or a malformed body is answered with Error (protocol)
// where possible, and the connection is closed with the reason in the server's log.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ranks/store/bytes.hpp"

namespace ranks::store::wire {

inline constexpr uint32_t kMagic = 0x524E4B53;  // "RNKS"
inline constexpr uint16_t kVersion = 1;
inline constexpr std::size_t kHeaderBytes = 4;
inline constexpr std::size_t kMaxHelloFrame = 64 * 1024;
inline constexpr std::size_t kMaxTokenBytes = 4 * 1024;

enum class Op : uint8_t {
  Hello = 1,
  Set = 2,
  Get = 3,
  Add = 4,
  CompareSet = 5,
  Check = 6,
  Wait = 7,
  DeleteKey = 8,
  NumKeys = 9,
};
enum class Status : uint8_t { Ok = 0, Timeout = 1, Error = 2 };
enum class ErrorKind : uint8_t { InvalidArgument = 1, Rendezvous = 2, Protocol = 3 };

const char* op_name(Op op);

// One request; the fields an op does not use stay empty.
struct Request {
  Op op = Op::Hello;
  std::string key;                // Set Get Add CompareSet DeleteKey; NumKeys: the prefix
  std::vector<std::string> keys;  // Check Wait
  std::vector<uint8_t> value;     // Set; CompareSet: desired
  std::vector<uint8_t> expected;  // CompareSet
  int64_t number = 0;             // Add: delta; Get Wait: timeout in ms
  uint32_t magic = kMagic;        // Hello
  uint16_t version = kVersion;    // Hello
  std::string token;              // Hello
};

struct Reply {
  Status status = Status::Ok;
  std::vector<uint8_t> value;             // Get CompareSet
  int64_t number = 0;                     // Add NumKeys
  bool flag = false;                      // Check DeleteKey
  uint16_t version = 0;                   // Hello
  uint64_t max_key = 0;                   // Hello
  uint64_t max_value = 0;                 // Hello
  std::vector<std::string> missing;       // Timeout
  int32_t clients = 0;                    // Timeout
  int32_t world_size = -1;                // Timeout
  ErrorKind error = ErrorKind::Protocol;  // Error
  std::string message;                    // Error
};

// The largest frame body a server with these limits accepts after the handshake.
std::size_t max_frame(std::size_t max_key, std::size_t max_value);
// Why request breaks the limits ("" when it does not): the server answers with this text and a
// client says it before sending, so both give the same message.
std::string limit_violation(const Request& request, std::size_t max_key, std::size_t max_value);

// Bodies, without the length prefix. Decoding throws DecodeError on anything malformed.
std::vector<uint8_t> encode_request(const Request& request);
Request decode_request(std::span<const uint8_t> body);
// A reply's Ok fields depend on the op it answers.
std::vector<uint8_t> encode_reply(Op op, const Reply& reply);
Reply decode_reply(Op op, std::span<const uint8_t> body);

// Prefixes body with its length.
std::vector<uint8_t> frame(const std::vector<uint8_t>& body);

}  // namespace ranks::store::wire
