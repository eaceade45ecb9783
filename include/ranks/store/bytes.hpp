#pragma once
// Big-endian encoding of integers and length-prefixed byte strings, shared by the TCP protocol
// and the file store's log so that both are the same on every machine. The reader checks every
// length against what is left before it allocates: a corrupt length is an error, never a huge
// allocation or a read past the end.

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ranks::store {

// Malformed input; the caller turns it into an error that names the file or the connection.
class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ByteWriter {
 public:
  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v) { be(v, 2); }
  void u32(uint32_t v) { be(v, 4); }
  void u64(uint64_t v) { be(v, 8); }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  // u32 length, then the bytes.
  void bytes(std::span<const uint8_t> v);
  void str(std::string_view v);
  void strings(const std::vector<std::string>& v);  // u32 count, then each as str

  std::size_t size() const { return out_.size(); }
  std::vector<uint8_t>& buffer() { return out_; }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  void be(uint64_t v, int n);
  std::vector<uint8_t> out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> in) : in_(in) {}

  uint8_t u8() { return static_cast<uint8_t>(be(1)); }
  uint16_t u16() { return static_cast<uint16_t>(be(2)); }
  uint32_t u32() { return static_cast<uint32_t>(be(4)); }
  uint64_t u64() { return be(8); }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  // A length-prefixed field of at most max bytes (`what` names it in the error).
  std::vector<uint8_t> bytes(std::size_t max, const char* what);
  std::string str(std::size_t max, const char* what);
  std::vector<std::string> strings(std::size_t max_each, const char* what);

  std::size_t offset() const { return pos_; }
  std::size_t left() const { return in_.size() - pos_; }
  // Throws unless everything was read (trailing bytes mean a malformed message).
  void expect_end(const char* what) const;

 private:
  uint64_t be(int n);
  std::span<const uint8_t> take(std::size_t n, const char* what);
  std::span<const uint8_t> in_;
  std::size_t pos_ = 0;
};

// Reads a big-endian u32 from the first four bytes of p.
uint32_t load_u32(const uint8_t* p);

}  // namespace ranks::store
