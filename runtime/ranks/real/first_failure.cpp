#include "ranks/real/first_failure.hpp"

#include <fmt/format.h>

#include <atomic>

#include "ranks/context.hpp"
#include "ranks/errors.hpp"
#include "ranks/store.hpp"
#include "ranks/store/deadline.hpp"

namespace ranks::detail {

namespace {
const std::string key = "ranks/first_failure";
std::atomic<bool> silent{false};
}  // namespace

void mark_store_silent() { silent = true; }
bool store_silent() { return silent; }

void publish_failure(const std::string& message) {
  Context& context = current();
  if (!context.store || store_silent()) return;
  const std::string text = fmt::format("rank {}: {}", context.rank, message);
  store::CallCap bounded(kFailureStoreWindow);
  try {
    // compare_set with an empty expected value creates the key only if it does not exist.
    context.store->compare_set(key, {}, std::vector<uint8_t>(text.begin(), text.end()));
  } catch (const Timeout&) {
    mark_store_silent();
  } catch (...) {
    // The store is hosted by rank 0, which may be the rank that failed.
  }
}

std::optional<std::string> first_failure_of_others() {
  Context& context = current();
  if (!context.store || store_silent()) return std::nullopt;
  store::CallCap bounded(kFailureStoreWindow);
  try {
    if (!context.store->check({key})) return std::nullopt;
    std::vector<uint8_t> value = context.store->get(key);
    std::string text(value.begin(), value.end());
    if (text.starts_with(fmt::format("rank {}:", context.rank))) return std::nullopt;
    return text;
  } catch (const Timeout&) {
    mark_store_silent();
    return std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace ranks::detail
