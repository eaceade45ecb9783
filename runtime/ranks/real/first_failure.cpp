#include "ranks/real/first_failure.hpp"

#include <fmt/format.h>

#include "ranks/context.hpp"
#include "ranks/store.hpp"

namespace ranks::detail {

namespace {
const std::string key = "ranks/first_failure";
}  // namespace

void publish_failure(const std::string& message) {
  Context& context = current();
  if (!context.store) return;
  const std::string text = fmt::format("rank {}: {}", context.rank, message);
  try {
    // compare_set with an empty expected value creates the key only if it does not exist.
    context.store->compare_set(key, {}, std::vector<uint8_t>(text.begin(), text.end()));
  } catch (...) {
    // The store is hosted by rank 0, which may be the rank that failed.
  }
}

std::optional<std::string> first_failure_of_others() {
  Context& context = current();
  if (!context.store) return std::nullopt;
  try {
    if (!context.store->check({key})) return std::nullopt;
    std::vector<uint8_t> value = context.store->get(key);
    std::string text(value.begin(), value.end());
    if (text.starts_with(fmt::format("rank {}:", context.rank))) return std::nullopt;
    return text;
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace ranks::detail
