#pragma once
// An op the front end refused before any backend saw it (an op the backend's table does not
// have, a bad argument, a group this rank is not in). The error it throws carries the op, so that
// whoever catches it can name the op the rank failed in (the simulator's report does) without
// any per-rank record of it: the error is the record.

#include <cstdint>
#include <exception>
#include <source_location>
#include <string>
#include <string_view>
#include <utility>

#include "ranks/op.hpp"

namespace ranks::detail {

struct RejectedOp {
  OpKind op = OpKind::Barrier;
  std::string_view name;  // what the caller called ("gather_object"), when not op's own name
  std::string group;
  int64_t seq = -1;
  std::source_location where;
};

// The part of a rejection that carries the op: catch the public error type, then look here.
class CarriesRejectedOp {
 public:
  explicit CarriesRejectedOp(RejectedOp op) : rejected_(std::move(op)) {}
  virtual ~CarriesRejectedOp() = default;
  const RejectedOp& rejected_op() const noexcept { return rejected_; }

 private:
  RejectedOp rejected_;
};

// A public error (InvalidArgument, Unsupported) that also carries the rejected op.
template <class PublicError>
class Rejection final : public PublicError, public CarriesRejectedOp {
 public:
  Rejection(const std::string& message, RejectedOp op)
      : PublicError(message), CarriesRejectedOp(std::move(op)) {}
};

// The op an error rejected, if it is a rejection.
inline const RejectedOp* rejected_op_of(const std::exception& error) noexcept {
  const auto* carrier = dynamic_cast<const CarriesRejectedOp*>(&error);
  return carrier != nullptr ? &carrier->rejected_op() : nullptr;
}

}  // namespace ranks::detail
