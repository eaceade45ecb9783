#pragma once
// The first failure of a real job, published through the rendezvous store, so that every rank's
// error can name the same root cause ("the first failure was rank 2: ...") instead of each
// survivor reporting only the broken connection it saw.

#include <optional>
#include <string>

namespace ranks::detail {

// Records "rank R: message" as the job's first failure unless one is recorded already. Never
// throws: it runs on the way out of a failing rank, whose store may be gone too.
void publish_failure(const std::string& message);

// The job's first failure, if another rank published one and the store still answers.
std::optional<std::string> first_failure_of_others();

}  // namespace ranks::detail
