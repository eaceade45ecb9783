#include "ranks/real/fatal.hpp"

#include <cstdio>
#include <cstdlib>

#include "ranks/detail/debug_check.hpp"
#include "ranks/real/first_failure.hpp"
#include "ranks/errors.hpp"

namespace ranks::detail {

namespace {

[[noreturn]] void leave(const std::string& what, bool symptom) {
  if (symptom && !debug_detail()) {
    // A timeout or a lost peer is where a mismatched call (another root, count or dtype) shows
    // in a real run: comparing every call costs a round trip per collective, too much to be the
    // default (reports/hazards.md), so say where the comparison is made.
    std::fputs(
        "ranks: to find the cause: run the program under `ranks sim -n N` (every rank's op and "
        "call site, mismatched calls and deadlocks named), or again with RANKS_DEBUG=detail (each "
        "collective's op, root, count and dtype compared across ranks before it runs)\n",
        stderr);
  }
  if (auto first = first_failure_of_others()) {
    std::fprintf(stderr, "ranks: the first failure was %s\n", first->c_str());
    symptom = true;
  } else if (!symptom) {
    publish_failure(what);
  }
  // The launcher sees the exit status, and peers see the closed connections.
  std::fflush(nullptr);
  std::_Exit(symptom ? peer_failed_exit_status : 1);
}

}  // namespace

void exit_on(const std::exception& e) {
  std::fflush(stdout);
  std::fprintf(stderr, "ranks: error: %s\n", e.what());
  leave(e.what(), dynamic_cast<const RankFailure*>(&e) != nullptr ||
                      dynamic_cast<const Timeout*>(&e) != nullptr);
}

void leave_after(const std::string& what, bool symptom) { leave(what, symptom); }

}  // namespace ranks::detail
