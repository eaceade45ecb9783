#pragma once
// What a model file that the cost model refuses is told: the error's text, or "loaded".

#include <string>

#include "ranks/errors.hpp"
#include "ranks/sim/cost_model.hpp"

namespace ranks::testing {

inline std::string model_file_error(const char* json) {
  try {
    sim::parse_cost_model(json, "mine.json");
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "loaded";
}

}  // namespace ranks::testing
