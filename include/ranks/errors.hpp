#pragma once
// One error hierarchy for the whole library. Messages are lower-case sentences that carry what a
// user needs to fix the problem without a debugger: group, sequence number, op, ranks, call site.

#include <stdexcept>
#include <string>

namespace ranks {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // The short machine name of the kind ("invalid_argument", "timeout", ...).
  virtual const char* kind() const noexcept { return "error"; }
};

#define RANKS_DEFINE_ERROR(Name, kind_name)                          \
  class Name : public Error {                                        \
   public:                                                           \
    using Error::Error;                                              \
    const char* kind() const noexcept override { return kind_name; } \
  };

RANKS_DEFINE_ERROR(InvalidArgument, "invalid_argument")
RANKS_DEFINE_ERROR(Unsupported, "unsupported")
RANKS_DEFINE_ERROR(Mismatch, "mismatch")
RANKS_DEFINE_ERROR(Timeout, "timeout")
RANKS_DEFINE_ERROR(Deadlock, "deadlock")
RANKS_DEFINE_ERROR(RankFailure, "rank_failure")
RANKS_DEFINE_ERROR(RendezvousError, "rendezvous")
RANKS_DEFINE_ERROR(BackendError, "backend")

#undef RANKS_DEFINE_ERROR

}  // namespace ranks
