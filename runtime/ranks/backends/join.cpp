#include "ranks/backends/join.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "ranks/detail/failure_text.hpp"
#include "ranks/errors.hpp"

namespace ranks::backends {

void join_members(Store& store, const GroupSpec& spec, std::chrono::milliseconds timeout,
                  const std::string& who) {
  store.set(fmt::format("joined/{}", spec.rank), {1});
  std::vector<std::string> keys;
  for (int r = 0; r < spec.size(); ++r) keys.push_back(fmt::format("joined/{}", r));
  try {
    store.wait(keys, timeout);
  } catch (const Error& e) {
    std::vector<int> missing;
    for (int r = 0; r < spec.size(); ++r) {
      try {
        if (!store.check({keys[static_cast<size_t>(r)]})) {
          missing.push_back(spec.global_ranks()[static_cast<size_t>(r)]);
        }
      } catch (const Error&) {
        // The store itself failed; its own message (below) says so.
      }
    }
    throw RendezvousError(fmt::format(
        "{}: {}/{} ranks joined within {}; missing: {} ({})", who,
        spec.size() - static_cast<int>(missing.size()), spec.size(), ranks::detail::format_duration(timeout),
        missing.empty() ? std::string("unknown") : fmt::format("{}", fmt::join(missing, ", ")),
        e.what()));
  }
}

}  // namespace ranks::backends
