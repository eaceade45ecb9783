// Built-in cost models: the JSON files of sim/models/, one system each, every figure with its
// source, built into the library (sim/CMakeLists.txt) and read as any model file is. "free" is
// the default: every op costs nothing.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>
#include <vector>

#include "ranks/errors.hpp"
#include "ranks/sim/cost_model.hpp"

namespace ranks::sim {

namespace {

// {name, JSON text}, from sim/models/NAME.json, in name order.
constexpr std::pair<std::string_view, std::string_view> preset_files[] = {
#include "ranks_model_presets.inc"
};

const std::vector<std::string_view>& names() {
  static const std::vector<std::string_view> all = [] {
    std::vector<std::string_view> out{"free"};
    for (const auto& [name, text] : preset_files) out.push_back(name);
    return out;
  }();
  return all;
}

}  // namespace

std::span<const std::string_view> cost_model_presets() { return names(); }

CostModel cost_model_preset(std::string_view name) {
  if (name == "free") return CostModel{};
  for (const auto& [file_name, text] : preset_files) {
    if (file_name == name) return parse_cost_model(std::string(text), std::string(name));
  }
  throw InvalidArgument(
      fmt::format("cost model preset '{}' is not one of {}", name, fmt::join(names(), ", ")));
}

}  // namespace ranks::sim
