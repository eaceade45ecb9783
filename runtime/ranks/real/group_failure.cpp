#include "ranks/real/group_failure.hpp"

#include "ranks/detail/error_kind.hpp"
#include "ranks/detail/failure_text.hpp"

namespace ranks::detail {

bool GroupFailure::record(std::exception_ptr error, const OpRequest* cause) {
  if (error_ != nullptr) return false;
  error_ = std::move(error);
  text_ = what_of(error_);
  if (cause != nullptr) cause_.emplace(cause->kind, cause->seq);
  return true;
}

std::exception_ptr GroupFailure::for_op(const OpRequest& request, std::string_view op,
                                        std::string_view group) const {
  if (error_ == nullptr) return nullptr;
  if (cause_ == std::make_pair(request.kind, request.seq)) return error_;
  return same_kind(error_, failed_earlier_text(op, group, text_));
}

}  // namespace ranks::detail
