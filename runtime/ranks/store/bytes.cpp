#include "ranks/store/bytes.hpp"

#include <fmt/format.h>

namespace ranks::store {

void ByteWriter::be(uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void ByteWriter::bytes(std::span<const uint8_t> v) {
  u32(static_cast<uint32_t>(v.size()));
  out_.insert(out_.end(), v.begin(), v.end());
}

void ByteWriter::str(std::string_view v) {
  bytes({reinterpret_cast<const uint8_t*>(v.data()), v.size()});
}

void ByteWriter::strings(const std::vector<std::string>& v) {
  u32(static_cast<uint32_t>(v.size()));
  for (const std::string& s : v) str(s);
}

uint64_t ByteReader::be(int n) {
  std::span<const uint8_t> p = take(static_cast<std::size_t>(n), "integer");
  uint64_t v = 0;
  for (uint8_t b : p) v = (v << 8) | b;
  return v;
}

std::span<const uint8_t> ByteReader::take(std::size_t n, const char* what) {
  if (n > left()) {
    throw DecodeError(fmt::format("truncated {}: it needs {} bytes at offset {} but {} are left",
                                  what, n, pos_, left()));
  }
  std::span<const uint8_t> out = in_.subspan(pos_, n);
  pos_ += n;
  return out;
}

std::vector<uint8_t> ByteReader::bytes(std::size_t max, const char* what) {
  const std::size_t at = pos_;
  const uint32_t n = u32();
  if (n > max) {
    throw DecodeError(fmt::format("the {} at offset {} claims {} bytes, more than the limit of {}",
                                  what, at, n, max));
  }
  std::span<const uint8_t> p = take(n, what);
  return {p.begin(), p.end()};
}

std::string ByteReader::str(std::size_t max, const char* what) {
  std::vector<uint8_t> b = bytes(max, what);
  return {b.begin(), b.end()};
}

std::vector<std::string> ByteReader::strings(std::size_t max_each, const char* what) {
  const std::size_t at = pos_;
  const uint32_t n = u32();
  // Each entry takes at least its 4-byte length, so a count beyond that is a lie.
  if (n > left() / 4) {
    throw DecodeError(
        fmt::format("the list of {} at offset {} claims {} entries but only {} "
                    "bytes are left",
                    what, at, n, left()));
  }
  std::vector<std::string> out;
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) out.push_back(str(max_each, what));
  return out;
}

void ByteReader::expect_end(const char* what) const {
  if (left() != 0) {
    throw DecodeError(fmt::format("{} has {} unexpected trailing bytes", what, left()));
  }
}

uint32_t load_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace ranks::store
