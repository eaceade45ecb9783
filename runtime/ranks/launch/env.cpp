#include "ranks/launch/env.hpp"

#include <unistd.h>

#include <utility>

namespace ranks::launch {

Env::Env(Map variables) : variables_(std::move(variables)) {}

Env::Env(std::initializer_list<Map::value_type> variables) : variables_(variables) {}

Env Env::process() {
  Map variables;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    size_t equals = text.find('=');
    if (equals == std::string_view::npos) continue;
    // emplace keeps the first of duplicate names, which is the one getenv() returns.
    variables.emplace(std::string(text.substr(0, equals)), std::string(text.substr(equals + 1)));
  }
  return Env(std::move(variables));
}

std::optional<std::string> Env::get(std::string_view name) const {
  auto it = variables_.find(name);
  if (it == variables_.end()) return std::nullopt;
  return it->second;
}

bool Env::has(std::string_view name) const { return variables_.find(name) != variables_.end(); }

void Env::set(std::string name, std::string value) {
  variables_.insert_or_assign(std::move(name), std::move(value));
}

}  // namespace ranks::launch
