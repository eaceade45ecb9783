#pragma once
// One object as bytes on the wire: a 24-byte header (magic "rkob", format version, body length,
// the type's tag) and the cereal body. decode() checks all four and the configured size limit
// before reading, and turns every failure into a ranks::Error that names where the payload came
// from (a Mismatch when the sender's type is another).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ranks/errors.hpp"
#include "ranks/object/archive.hpp"
#include "ranks/object/type_tag.hpp"

namespace ranks::object {

inline constexpr size_t header_bytes = 24;
inline constexpr uint16_t format_version = 2;

// The largest payload a rank accepts: RANKS_MAX_OBJECT_BYTES, else 8 GiB. Sizes are checked
// against it before a receive buffer is allocated, so a rank that is out of step (whose "size"
// is really some other data) gives an error, not a 1 EB allocation.
uint64_t max_payload_bytes();

// Writes the header for a body of body_bytes of the type tagged type_tag into the first
// header_bytes of out.
void write_header(Bytes& out, uint64_t body_bytes, uint64_t type_tag);
// Checks the header of a payload, the type's included, and returns the body; `from` names the
// payload's origin for the message ("rank 3"), `type` the type this rank reads.
std::span<const uint8_t> checked_body(std::span<const uint8_t> payload, std::string_view from,
                                      uint64_t type_tag, std::string_view type);
// Throws the error for a size announced by `from` that is over max_payload_bytes().
void check_announced_size(uint64_t bytes, std::string_view from, std::string_view op);
[[noreturn]] void throw_corrupt(std::string_view from, std::string_view why);

template <class T>
Bytes encode(const T& value) {
  OutputArchive counter;
  counter(value);
  Bytes out(header_bytes);
  {
    OutputArchive archive(out);
    archive.reserve(counter.written());
    archive(value);
  }
  write_header(out, out.size() - header_bytes, type_tag<T>());
  return out;
}

template <class T>
void decode_into(std::span<const uint8_t> payload, T& value, std::string_view from) {
  std::span<const uint8_t> body = checked_body(payload, from, type_tag<T>(), type_name<T>());
  try {
    InputArchive archive(body);
    archive(value);
    if (archive.remaining() != 0) {
      throw_corrupt(from, std::to_string(archive.remaining()) +
                              " bytes are left over (do all ranks "
                              "pass the same type?)");
    }
  } catch (const cereal::Exception& e) {
    throw_corrupt(from, std::string(e.what()) + " (do all ranks pass the same type?)");
  } catch (const std::length_error& e) {
    throw_corrupt(from, e.what());
  } catch (const std::bad_alloc&) {
    throw_corrupt(from, "it asks for more memory than this rank has");
  }
}

template <class T>
T decode(std::span<const uint8_t> payload, std::string_view from) {
  T value{};
  decode_into(payload, value, from);
  return value;
}

}  // namespace ranks::object
