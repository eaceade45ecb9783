#pragma once
// Helpers for errors kept as exception_ptr (a Work's outcome, a group's first failure).

#include <exception>
#include <string>

namespace ranks::detail {

// The message of the stored exception ("an unknown exception" for a non-std one).
std::string what_of(const std::exception_ptr& error);

// A new error of the same ranks kind as `like` (BackendError for anything that is not a ranks
// kind), carrying message: how a group's first failure is reported again to later ops.
std::exception_ptr same_kind(const std::exception_ptr& like, const std::string& message);

}  // namespace ranks::detail
