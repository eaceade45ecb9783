#include "ranks/launch/detail/var_reader.hpp"

#include <fmt/format.h>

#include <charconv>
#include <limits>

#include "ranks/errors.hpp"

namespace ranks::launch::detail {

VarReader::VarReader(const Env& env, std::string_view launcher, std::string_view how_to_start)
    : env_(env), launcher_(launcher), how_to_start_(how_to_start) {}

void VarReader::fail(std::string_view what) const {
  throw InvalidArgument(fmt::format("{} launcher: {}", launcher_, what));
}

std::optional<std::string> VarReader::text(std::string_view name) const {
  std::optional<std::string> value = env_.get(name);
  if (value && value->empty()) fail(fmt::format("{} is set but empty", name));
  return value;
}

std::string VarReader::require_text(std::string_view name) const {
  std::optional<std::string> value = text(name);
  if (!value) fail(fmt::format("{} is not set; {}", name, how_to_start_));
  return *value;
}

std::optional<std::pair<std::string_view, std::string>> VarReader::first_text(
    std::initializer_list<std::string_view> names) const {
  for (std::string_view name : names) {
    if (std::optional<std::string> value = text(name)) return std::pair{name, *value};
  }
  return std::nullopt;
}

std::optional<long long> VarReader::number(std::string_view name) const {
  std::optional<std::string> value = env_.get(name);
  if (!value) return std::nullopt;
  long long result = 0;
  const char* end = value->data() + value->size();
  auto [ptr, error] = std::from_chars(value->data(), end, result);
  if (error == std::errc::invalid_argument || ptr != end) {
    fail(fmt::format("{}='{}' is not a whole number; expected decimal digits such as 0", name,
                     *value));
  }
  if (error == std::errc::result_out_of_range) {
    fail(fmt::format("{}='{}' is out of range; expected a smaller whole number", name, *value));
  }
  return result;
}

std::optional<int> VarReader::integer(std::string_view name) const {
  std::optional<long long> value = number(name);
  if (!value) return std::nullopt;
  if (*value < std::numeric_limits<int>::min() || *value > std::numeric_limits<int>::max()) {
    fail(fmt::format("{}={} is out of range; expected a number that fits in an int", name, *value));
  }
  return static_cast<int>(*value);
}

int VarReader::require_integer(std::string_view name) const {
  std::optional<int> value = integer(name);
  if (!value) fail(fmt::format("{} is not set; {}", name, how_to_start_));
  return *value;
}

std::optional<int> VarReader::port(std::string_view name) const {
  std::optional<long long> value = number(name);
  if (!value) return std::nullopt;
  if (*value < 1 || *value > 65535) {
    fail(fmt::format("{}={} is out of range; expected a port in 1..65535", name, *value));
  }
  return static_cast<int>(*value);
}

void VarReader::check_positive(std::string_view name, long long value) const {
  if (value < 1) {
    fail(
        fmt::format("{}={} is out of range; expected a positive number of processes", name, value));
  }
}

void VarReader::check_index(std::string_view name, long long value, long long bound,
                            std::string_view bound_source) const {
  if (value < 0 || value >= bound) {
    fail(fmt::format("{}={} is out of range; expected 0 <= {} < {} ({})", name, value, name, bound,
                     bound_source));
  }
}

void VarReader::check_at_most(std::string_view name, long long value, long long bound,
                              std::string_view bound_source) const {
  if (value < 1 || value > bound) {
    fail(fmt::format("{}={} is out of range; expected 1 <= {} <= {} ({})", name, value, name, bound,
                     bound_source));
  }
}

}  // namespace ranks::launch::detail
