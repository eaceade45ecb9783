#pragma once
// A real group's first failure and the op that caused it. Once a group has failed (a timeout, a
// dead peer, a backend error) its later ops fail too: the op that caused it reports its own
// error, every other op an error of the same kind that says so and repeats the first one. The
// owner's lock guards it (a backend waits on a condition that includes it).

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "ranks/op.hpp"

namespace ranks::detail {

class GroupFailure {
 public:
  bool empty() const { return error_ == nullptr; }
  // Makes error the group's failure, caused by `cause` when given, unless the group has failed
  // already: then it returns false and keeps the first.
  bool record(std::exception_ptr error, const OpRequest* cause);
  const std::exception_ptr& first() const { return error_; }
  // The error for request: null while the group has not failed, the first failure itself for
  // the op that caused it, else "<op>: group '<group>' failed earlier and can no longer be used:
  // <first>" of the same kind. op: how the backend describes request.
  std::exception_ptr for_op(const OpRequest& request, std::string_view op,
                            std::string_view group) const;

 private:
  std::exception_ptr error_;
  std::string text_;
  // Kind and seq identify an op within a group.
  std::optional<std::pair<OpKind, uint64_t>> cause_;
};

}  // namespace ranks::detail
