#pragma once
// The file store's file: an append-only log of records that every process replays.
//
//   file   = magic "ranksfs\n" (8 bytes), then records
//   record = u32 body length, u32 checksum (FNV-1a of the body), body
//   body   = u8 type, then
//     'H' header  u16 version, i32 world size (-1: unknown), bytes token,
//                 i64 created (Unix ms), bytes creator ("host pid N")     first record only
//     'J' join    bytes who                                             a store opened the file
//     'L' leave   bytes who                                             a store closed it
//     'S' set     bytes key, bytes value                                add() writes the sum
//     'D' delete  bytes key                                             a tombstone
//   Integers are big-endian, "bytes" is a u32 length and the bytes.
//
// Appends happen only under an exclusive fcntl lock, so a record that ends past the end of the
// file, a bad checksum or an unknown type means the file is corrupt (or not ours), never that
// a writer is halfway through.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ranks/store/bytes.hpp"
#include "ranks/store/kv_map.hpp"

namespace ranks::store {

inline constexpr uint16_t kFileVersion = 1;

struct FileHeader {
  uint16_t version = kFileVersion;
  int32_t world_size = -1;
  std::string token;
  int64_t created_ms = 0;
  std::string creator;
};

// Encoded records (the magic is part of the header record's bytes, since both start a file).
Bytes header_record(const FileHeader& header);
Bytes join_record(const std::string& who);
Bytes leave_record(const std::string& who);
Bytes set_record(const std::string& key, const Bytes& value);
Bytes delete_record(const std::string& key);

// The state of a file: everything replayed from its records so far.
class FileLog {
 public:
  // Replays the bytes that follow what was replayed so far (the file from offset()). Returns
  // how many bytes form complete records; the rest is an incomplete record. Throws DecodeError
  // (its text names the file offset) for anything malformed.
  std::size_t replay(std::span<const uint8_t> data);

  uint64_t offset() const { return offset_; }
  const std::optional<FileHeader>& header() const { return header_; }
  const KvMap& map() const { return map_; }
  const std::vector<std::string>& joined() const { return joined_; }
  int leaves() const { return leaves_; }

 private:
  void apply(std::span<const uint8_t> body, uint64_t at);

  uint64_t offset_ = 0;
  std::optional<FileHeader> header_;
  KvMap map_;
  std::vector<std::string> joined_;
  int leaves_ = 0;
};

}  // namespace ranks::store
