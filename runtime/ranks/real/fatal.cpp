#include "ranks/real/fatal.hpp"

#include <time.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "ranks/detail/debug_check.hpp"
#include "ranks/real/first_failure.hpp"
#include "ranks/errors.hpp"

namespace ranks::detail {

namespace {

// Under torchrun the agent names as the "Root Cause" the failed worker it saw first, by whole
// seconds and then the lowest local rank, and it sees every worker that has exited by its next
// look (every 0.1 s): a rank that stops because another failed is then often named in its
// place. Such a rank first gives the agent up to kAgentNotice to see the other's failure; the
// agent then stops this one (SIGTERM, whose default action ends it here) and leaves it out of
// its failures. A rank whose peers only hang (a timeout) exits after the wait all the same.
constexpr std::chrono::seconds kAgentNotice{2};

void let_torchrun_see_the_cause_first() {
  if (std::getenv("TORCHELASTIC_RUN_ID") == nullptr) return;
  std::fflush(nullptr);
  timespec left{static_cast<time_t>(kAgentNotice.count()), 0};
  while (::nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

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
  if (symptom) let_torchrun_see_the_cause_first();
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
