#include "ranks/store/messages.hpp"

#include <fmt/format.h>

#include "ranks/errors.hpp"

namespace ranks::store {

namespace {
constexpr std::size_t kShownKeyBytes = 80;
constexpr std::size_t kShownKeys = 8;
}  // namespace

std::string quote_key(std::string_view key) {
  std::string out = "'";
  for (std::size_t i = 0; i < key.size() && i < kShownKeyBytes; ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '\'';
  if (key.size() > kShownKeyBytes) out += fmt::format("... ({} bytes)", key.size());
  return out;
}

std::string describe_keys(const std::vector<std::string>& keys) {
  if (keys.size() == 1) return "key " + quote_key(keys[0]);
  std::string out = "keys ";
  const std::size_t shown = std::min(keys.size(), kShownKeys);
  for (std::size_t i = 0; i < shown; ++i) {
    if (i > 0) out += (i + 1 == shown && shown == keys.size()) ? " and " : ", ";
    out += quote_key(keys[i]);
  }
  if (shown < keys.size()) out += fmt::format(" and {} more", keys.size() - shown);
  return out;
}

std::string describe_duration(std::chrono::milliseconds duration) {
  const auto ms = duration.count();
  if (ms < 10'000) return fmt::format("{} ms", ms);
  if (ms % 1000 == 0) return fmt::format("{} s", ms / 1000);
  return fmt::format("{:.1f} s", static_cast<double>(ms) / 1000.0);
}

std::string describe_size(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} byte{}", bytes, bytes == 1 ? "" : "s");
}

void check_wait_timeout(std::string_view store, std::chrono::milliseconds timeout) {
  if (timeout.count() < 0) {
    throw InvalidArgument(
        fmt::format("{}: wait timeout is {} ms; it must be zero (do not wait) or positive", store,
                    timeout.count()));
  }
}

std::string timeout_message(std::string_view store, std::chrono::milliseconds timeout,
                            const std::vector<std::string>& missing, std::string_view context) {
  return fmt::format(
      "{}: timed out after {} waiting for {}{}; whoever sets {} has not got there (not started, "
      "failed, or slower than the timeout)",
      store, describe_duration(timeout), describe_keys(missing), context,
      missing.size() == 1 ? "it" : "them");
}

}  // namespace ranks::store
