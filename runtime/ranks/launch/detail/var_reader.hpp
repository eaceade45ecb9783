#pragma once
// Reads one launcher's environment variables with uniform error messages: each names the
// launcher, the variable, its value and what was expected, so a user can fix the job script
// without a debugger.

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "ranks/launch/env.hpp"

namespace ranks::launch::detail {

class VarReader {
 public:
  // `how_to_start` completes "... is not set; <how_to_start>", e.g. "start the program with srun".
  VarReader(const Env& env, std::string_view launcher, std::string_view how_to_start);

  // The value, nullopt when unset; InvalidArgument when set but empty.
  std::optional<std::string> text(std::string_view name) const;
  std::string require_text(std::string_view name) const;

  // The first of `names` that is set, with its name: for aliases such as SLURM_STEP_NODELIST,
  // SLURM_NODELIST.
  std::optional<std::pair<std::string_view, std::string>> first_text(
      std::initializer_list<std::string_view> names) const;

  // A whole decimal number ("-1" allowed; "", " 1", "1x", "0x10" are not), nullopt when unset.
  std::optional<long long> number(std::string_view name) const;
  std::optional<int> integer(std::string_view name) const;  // also fits an int
  int require_integer(std::string_view name) const;
  // A TCP port, 1..65535.
  std::optional<int> port(std::string_view name) const;

  // Range checks; `bound_source` says where the bound came from, e.g. "WORLD_SIZE".
  void check_positive(std::string_view name, long long value) const;  // >= 1
  void check_index(std::string_view name, long long value, long long bound,
                   std::string_view bound_source) const;  // 0 <= value < bound
  void check_at_most(std::string_view name, long long value, long long bound,
                     std::string_view bound_source) const;  // 1 <= value <= bound

  // Throws InvalidArgument("<launcher> launcher: <what>").
  [[noreturn]] void fail(std::string_view what) const;

 private:
  const Env& env_;
  std::string_view launcher_;
  std::string_view how_to_start_;
};

}  // namespace ranks::launch::detail
