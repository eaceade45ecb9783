#include "ranks/real/fatal.hpp"

#include <cstdio>
#include <cstdlib>

#include "ranks/real/first_failure.hpp"
#include "ranks/errors.hpp"

namespace ranks::detail {

void exit_on(const std::exception& e) {
  std::fflush(stdout);
  std::fprintf(stderr, "ranks: error: %s\n", e.what());
  bool symptom =
      dynamic_cast<const RankFailure*>(&e) != nullptr || dynamic_cast<const Timeout*>(&e);
  if (auto first = first_failure_of_others()) {
    std::fprintf(stderr, "ranks: the first failure was %s\n", first->c_str());
    symptom = true;
  } else if (!symptom) {
    publish_failure(e.what());
  }
  // The launcher sees the exit status, and peers see the closed connections.
  std::fflush(nullptr);
  std::_Exit(symptom ? peer_failed_exit_status : 1);
}

}  // namespace ranks::detail
