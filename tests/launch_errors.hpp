#pragma once
// The launch tests' shared check: reading a fake environment must fail with InvalidArgument, and
// the message is returned for the test to inspect.

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "ranks/errors.hpp"
#include "ranks/launch/launcher.hpp"

namespace ranks::launch::testing {

inline std::string read_error(std::string_view launcher, const Env::Map& vars) {
  try {
    read_launch(launcher, Env(vars));
  } catch (const InvalidArgument& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InvalidArgument, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected InvalidArgument, nothing was thrown";
  return {};
}

}  // namespace ranks::launch::testing
