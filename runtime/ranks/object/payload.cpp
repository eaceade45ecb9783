#include "ranks/object/payload.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "ranks/context.hpp"
#include "ranks/detail/check.hpp"
#include "ranks/group.hpp"

namespace ranks::object {

namespace {
constexpr char magic[4] = {'r', 'k', 'o', 'b'};
constexpr uint64_t default_max_bytes = uint64_t{8} << 30;

// "gather_object on group 'world' at eval.cpp:9: " inside an object collective: a payload's
// errors come after the ops that moved it, so they name the call themselves.
std::string in_object_call() {
  const Context::ObjectCall& call = current().object_call;
  if (call.api == nullptr) return {};
  return fmt::format("{} on group '{}' at {}: ", call.api, call.group->name(),
                     ranks::detail::where_str(call.where));
}
}  // namespace

uint64_t max_payload_bytes() {
  const char* text = std::getenv("RANKS_MAX_OBJECT_BYTES");
  if (text == nullptr || *text == '\0') return default_max_bytes;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || value == 0) {
    throw InvalidArgument(
        fmt::format("RANKS_MAX_OBJECT_BYTES='{}' is not a positive number of bytes", text));
  }
  return value;
}

void write_header(Bytes& out, uint64_t body_bytes, uint64_t type_tag) {
  std::memcpy(out.data(), magic, sizeof magic);
  const uint16_t version = format_version;
  const uint16_t reserved = 0;
  std::memcpy(out.data() + 4, &version, 2);
  std::memcpy(out.data() + 6, &reserved, 2);
  std::memcpy(out.data() + 8, &body_bytes, 8);
  std::memcpy(out.data() + 16, &type_tag, 8);
}

void throw_corrupt(std::string_view from, std::string_view why) {
  throw Error(fmt::format("{}corrupt object payload from {}: {}", in_object_call(), from, why));
}

std::span<const uint8_t> checked_body(std::span<const uint8_t> payload, std::string_view from,
                                      uint64_t type_tag, std::string_view type) {
  if (payload.size() < header_bytes) {
    throw_corrupt(from, fmt::format("{} bytes is shorter than the {}-byte header", payload.size(),
                                    header_bytes));
  }
  if (std::memcmp(payload.data(), magic, sizeof magic) != 0) {
    throw_corrupt(from,
                  "it does not start with the object header (is some other data in the "
                  "buffer, or are the ranks out of step?)");
  }
  uint16_t version = 0;
  uint64_t body_bytes = 0;
  std::memcpy(&version, payload.data() + 4, 2);
  std::memcpy(&body_bytes, payload.data() + 8, 8);
  if (version != format_version) {
    throw_corrupt(from, fmt::format("format version {} (this build reads version {})", version,
                                    format_version));
  }
  if (body_bytes != payload.size() - header_bytes) {
    throw_corrupt(from, fmt::format("the header announces {} bytes but {} arrived", body_bytes,
                                    payload.size() - header_bytes));
  }
  if (body_bytes > max_payload_bytes()) {
    throw_corrupt(from, fmt::format("{} bytes is over the limit of {} (RANKS_MAX_OBJECT_BYTES)",
                                    body_bytes, max_payload_bytes()));
  }
  uint64_t sent_tag = 0;
  std::memcpy(&sent_tag, payload.data() + 16, 8);
  if (sent_tag != type_tag) {
    throw Mismatch(fmt::format(
        "{}the object from {} is not of this rank's type {} (type tags {:016x} there, {:016x} "
        "here): do all ranks pass the same type?",
        in_object_call(), from, type, sent_tag, type_tag));
  }
  return payload.subspan(header_bytes);
}

void check_announced_size(uint64_t bytes, std::string_view from, std::string_view op) {
  if (bytes < header_bytes || bytes > max_payload_bytes()) {
    const std::string call = in_object_call();
    throw Mismatch(fmt::format(
        "{}{} announces an object of {} bytes, outside [{}, {}] (RANKS_MAX_OBJECT_BYTES); are "
        "the ranks out of step, one of them in a different collective?",
        call.empty() ? fmt::format("{}: ", op) : call, from, bytes, header_bytes,
        max_payload_bytes()));
  }
}

}  // namespace ranks::object
