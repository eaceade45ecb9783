#include "ranks/launch/tasks_per_node.hpp"

#include <fmt/format.h>

#include <charconv>

#include "ranks/errors.hpp"
#include "ranks/launch/hostlist.hpp"

namespace ranks::launch {

namespace {

class Parser {
 public:
  explicit Parser(std::string_view spec) : spec_(spec) {}

  std::vector<int> expand() {
    std::vector<int> counts;
    while (true) {
      size_t item = pos_;
      int count = positive("task count");
      int repeat = 1;
      if (at('(')) {
        ++pos_;
        expect('x');
        repeat = positive("repeat count");
        expect(')');
      }
      // The node count is bounded like a host list, so a typo cannot exhaust memory.
      if (static_cast<size_t>(repeat) > kMaxHosts - counts.size()) {
        fail(item, fmt::format("lists more than {} nodes", kMaxHosts));
      }
      counts.insert(counts.end(), static_cast<size_t>(repeat), count);
      if (pos_ == spec_.size()) return counts;
      expect(',');
    }
  }

 private:
  [[noreturn]] void fail(size_t position, std::string_view what) const {
    throw InvalidArgument(fmt::format("invalid tasks-per-node list \"{}\" at position {}: {}",
                                      spec_, position, what));
  }
  [[noreturn]] void fail(std::string_view what) const { fail(pos_, what); }

  bool at(char c) const { return pos_ < spec_.size() && spec_[pos_] == c; }

  void expect(char c) {
    if (!at(c)) {
      fail(pos_ < spec_.size() ? fmt::format("unexpected '{}'; expected '{}'", spec_[pos_], c)
                               : fmt::format("unexpected end; expected '{}'", c));
    }
    ++pos_;
  }

  int positive(std::string_view what) {
    size_t end = pos_;
    while (end < spec_.size() && spec_[end] >= '0' && spec_[end] <= '9') ++end;
    if (end == pos_) {
      fail(pos_ < spec_.size() ? fmt::format("unexpected '{}'; expected a {}", spec_[pos_], what)
                               : fmt::format("unexpected end; expected a {}", what));
    }
    int value = 0;
    auto [ptr, error] = std::from_chars(spec_.data() + pos_, spec_.data() + end, value);
    if (error != std::errc()) fail(fmt::format("{} is too large", what));
    if (value < 1) fail(fmt::format("{} is 0; expected at least 1", what));
    pos_ = end;
    return value;
  }

  std::string_view spec_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<int> expand_tasks_per_node(std::string_view spec) { return Parser(spec).expand(); }

}  // namespace ranks::launch
