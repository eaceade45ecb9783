#pragma once
// The tests' one check for bad input: the call must throw InvalidArgument, and its message is
// returned for the test to inspect ("" and a test failure when it throws something else or
// nothing).

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "ranks/errors.hpp"

namespace ranks::testing {

inline std::string invalid_argument(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InvalidArgument, got another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected InvalidArgument, nothing was thrown";
  return {};
}

}  // namespace ranks::testing
