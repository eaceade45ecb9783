#include "ranks/detail/error_kind.hpp"

#include "ranks/errors.hpp"

namespace ranks::detail {

std::string what_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an unknown exception";
  }
}

std::exception_ptr same_kind(const std::exception_ptr& like, const std::string& message) {
  try {
    std::rethrow_exception(like);
  } catch (const Timeout&) {
    return std::make_exception_ptr(Timeout(message));
  } catch (const RankFailure&) {
    return std::make_exception_ptr(RankFailure(message));
  } catch (const Mismatch&) {
    return std::make_exception_ptr(Mismatch(message));
  } catch (const Unsupported&) {
    return std::make_exception_ptr(Unsupported(message));
  } catch (const InvalidArgument&) {
    return std::make_exception_ptr(InvalidArgument(message));
  } catch (const Deadlock&) {
    return std::make_exception_ptr(Deadlock(message));
  } catch (const RendezvousError&) {
    return std::make_exception_ptr(RendezvousError(message));
  } catch (...) {
    return std::make_exception_ptr(BackendError(message));
  }
}

}  // namespace ranks::detail
