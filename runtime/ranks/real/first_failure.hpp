#pragma once
// The first failure of a real job, published through the rendezvous store, so that every rank's
// error can name the same root cause ("the first failure was rank 2: ...") instead of each
// survivor reporting only the broken connection it saw.

#include <chrono>
#include <optional>
#include <string>

namespace ranks::detail {

// Records "rank R: message" as the job's first failure unless one is recorded already. Never
// throws: it runs on the way out of a failing rank, whose store may be gone too.
void publish_failure(const std::string& message);

// The job's first failure, if another rank published one and the store still answers.
std::optional<std::string> first_failure_of_others();

// Both give up after kFailureStoreWindow: a rank on its way out must not wait the store's whole
// timeout for a store whose host is frozen. Once a call on the way to a report found the store
// silent (mark_store_silent), they do not try it again.
inline constexpr std::chrono::milliseconds kFailureStoreWindow{2000};
void mark_store_silent();
bool store_silent();

}  // namespace ranks::detail
