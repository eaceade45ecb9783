#include "ranks/store/file_log.hpp"

#include <fmt/format.h>

#include <cstring>

#include "ranks/store/defaults.hpp"

namespace ranks::store {

namespace {

constexpr char kMagic[] = "ranksfs\n";
constexpr std::size_t kMagicBytes = sizeof kMagic - 1;
constexpr std::size_t kRecordHeader = 8;
// Records carry at most one key and one value; a bigger length can only be corruption.
constexpr std::size_t kMaxBody = kDefaultMaxKeyBytes + kDefaultMaxValueBytes + 64 * 1024;

enum Type : uint8_t { kHeader = 'H', kJoin = 'J', kLeave = 'L', kSet = 'S', kDelete = 'D' };

uint32_t fnv1a(std::span<const uint8_t> data) {
  uint32_t h = 2166136261u;
  for (uint8_t b : data) {
    h ^= b;
    h *= 16777619u;
  }
  return h;
}

Bytes record(ByteWriter body_writer) {
  const Bytes body = body_writer.take();
  ByteWriter w;
  w.u32(static_cast<uint32_t>(body.size()));
  w.u32(fnv1a(body));
  Bytes out = w.take();
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

}  // namespace

Bytes header_record(const FileHeader& header) {
  ByteWriter w;
  w.u8(kHeader);
  w.u16(header.version);
  w.i32(header.world_size);
  w.str(header.token);
  w.i64(header.created_ms);
  w.str(header.creator);
  Bytes out(kMagic, kMagic + kMagicBytes);
  Bytes r = record(std::move(w));
  out.insert(out.end(), r.begin(), r.end());
  return out;
}

Bytes join_record(const std::string& who) {
  ByteWriter w;
  w.u8(kJoin);
  w.str(who);
  return record(std::move(w));
}

Bytes leave_record(const std::string& who) {
  ByteWriter w;
  w.u8(kLeave);
  w.str(who);
  return record(std::move(w));
}

Bytes set_record(const std::string& key, const Bytes& value) {
  ByteWriter w;
  w.u8(kSet);
  w.str(key);
  w.bytes(value);
  return record(std::move(w));
}

Bytes delete_record(const std::string& key) {
  ByteWriter w;
  w.u8(kDelete);
  w.str(key);
  return record(std::move(w));
}

std::size_t FileLog::replay(std::span<const uint8_t> data) {
  std::size_t used = 0;
  if (offset_ == 0) {
    if (data.size() < kMagicBytes) return 0;
    if (std::memcmp(data.data(), kMagic, kMagicBytes) != 0) {
      throw DecodeError("it does not start with the file store's magic \"ranksfs\\n\"");
    }
    used = kMagicBytes;
  }
  while (data.size() - used >= kRecordHeader) {
    const uint64_t at = offset_ + used;
    const uint32_t length = load_u32(data.data() + used);
    const uint32_t checksum = load_u32(data.data() + used + 4);
    if (length == 0 || length > kMaxBody) {
      throw DecodeError(
          fmt::format("the record at byte {} claims a length of {} bytes", at, length));
    }
    if (data.size() - used - kRecordHeader < length) break;
    std::span<const uint8_t> body = data.subspan(used + kRecordHeader, length);
    if (fnv1a(body) != checksum) {
      throw DecodeError(fmt::format("the record at byte {} fails its checksum", at));
    }
    apply(body, at);
    used += kRecordHeader + length;
  }
  offset_ += used;
  return used;
}

void FileLog::apply(std::span<const uint8_t> body, uint64_t at) {
  ByteReader in(body);
  const uint8_t type = in.u8();
  if ((type == kHeader) != (at == kMagicBytes)) {
    throw DecodeError(fmt::format("the record at byte {} is {}", at,
                                  type == kHeader ? "a second header" : "not the header"));
  }
  try {
    switch (type) {
      case kHeader: {
        FileHeader h;
        h.version = in.u16();
        if (h.version != kFileVersion) {
          throw DecodeError(fmt::format("the file has format version {}; this ranks reads {}",
                                        h.version, kFileVersion));
        }
        h.world_size = in.i32();
        h.token = in.str(kMaxBody, "token");
        h.created_ms = in.i64();
        h.creator = in.str(kMaxBody, "creator");
        header_ = std::move(h);
        break;
      }
      case kJoin:
        joined_.push_back(in.str(kMaxBody, "name"));
        break;
      case kLeave:
        in.str(kMaxBody, "name");
        ++leaves_;
        break;
      case kSet: {
        std::string key = in.str(kMaxBody, "key");
        map_.set(key, in.bytes(kMaxBody, "value"));
        break;
      }
      case kDelete:
        map_.erase(in.str(kMaxBody, "key"));
        break;
      default:
        throw DecodeError(fmt::format("unknown record type {}", type));
    }
    in.expect_end("the record");
  } catch (const DecodeError& e) {
    throw DecodeError(fmt::format("the record at byte {}: {}", at, e.what()));
  }
}

}  // namespace ranks::store
