#pragma once
// A read-only view of environment variables. Launcher detection reads its input through an Env
// so that tests can hand it a fake environment instead of mutating the real one (setenv is not
// thread-safe and leaks between tests).

#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ranks::launch {

class Env {
 public:
  using Map = std::map<std::string, std::string, std::less<>>;

  Env() = default;  // no variables at all
  explicit Env(Map variables);
  // Env({{"RANK", "0"}}) would be ambiguous with Env(Map) and the copy constructor alone.
  explicit Env(std::initializer_list<Map::value_type> variables);

  // A snapshot of this process's environment, taken now; later setenv calls do not show.
  static Env process();

  // The value of `name`, or nullopt when it is not set. A variable set to "" is set.
  std::optional<std::string> get(std::string_view name) const;
  bool has(std::string_view name) const;

  // Adds or replaces a variable in this Env only (never in the process): lets the runtime
  // layer an explicit argument, such as init_dist's port, over what the launcher exported.
  void set(std::string name, std::string value);

 private:
  Map variables_;
};

}  // namespace ranks::launch
