#include "ranks/launch/hostlist.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <utility>

#include "ranks/errors.hpp"

namespace ranks::launch {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A name split into literal text and bracket groups: text[0] group[0] text[1] ... text[n].
struct Pattern {
  std::vector<std::string> text;
  std::vector<std::vector<std::string>> groups;  // each group's values, already formatted
};

class Parser {
 public:
  explicit Parser(std::string_view list) : list_(list) {}

  std::vector<std::string> expand() {
    if (list_.find_first_not_of(" \t\n\r\v\f") == std::string_view::npos) {
      fail(0, "empty host list");
    }
    std::vector<Pattern> patterns;
    size_t total = 0;
    size_t begin = 0;
    while (true) {
      size_t end = item_end(begin);
      Pattern pattern = parse_item(begin, end);
      total += count(pattern, begin);
      if (total > kMaxHosts) fail(begin, fmt::format("expands to more than {} hosts", kMaxHosts));
      patterns.push_back(std::move(pattern));
      if (end == list_.size()) break;
      begin = end + 1;
    }
    std::vector<std::string> hosts;
    hosts.reserve(total);
    for (const Pattern& pattern : patterns) append(pattern, hosts);
    return hosts;
  }

 private:
  [[noreturn]] void fail(size_t position, std::string_view what) const {
    throw InvalidArgument(
        fmt::format("invalid host list \"{}\" at position {}: {}", list_, position, what));
  }

  // The index of the comma ending the item that starts at `begin`, or the input's size.
  size_t item_end(size_t begin) const {
    size_t open = std::string_view::npos;
    for (size_t i = begin; i < list_.size(); ++i) {
      char c = list_[i];
      if (c == '[') {
        if (open != std::string_view::npos) fail(i, "'[' inside brackets");
        open = i;
      } else if (c == ']') {
        if (open == std::string_view::npos) fail(i, "']' without a matching '['");
        open = std::string_view::npos;
      } else if (c == ',' && open == std::string_view::npos) {
        return i;
      }
    }
    if (open != std::string_view::npos) fail(open, "'[' is never closed");
    return list_.size();
  }

  Pattern parse_item(size_t begin, size_t end) const {
    while (begin < end && is_space(list_[begin])) ++begin;
    while (end > begin && is_space(list_[end - 1])) --end;
    if (begin == end) fail(begin, "empty host name");
    Pattern pattern;
    pattern.text.emplace_back();
    for (size_t i = begin; i < end; ++i) {
      char c = list_[i];
      if (is_space(c)) fail(i, "whitespace inside a host name");
      if (c == '[') {
        size_t close = list_.find(']', i);  // item_end() proved it exists before `end`
        pattern.groups.push_back(parse_group(i + 1, close));
        pattern.text.emplace_back();
        i = close;
      } else {
        pattern.text.back() += c;
      }
    }
    return pattern;
  }

  // The values of the bracket group between `begin` and `end` (exclusive of the brackets).
  std::vector<std::string> parse_group(size_t begin, size_t end) const {
    std::vector<std::string> values;
    size_t range_begin = begin;
    while (true) {
      size_t range_end = list_.find(',', range_begin);
      if (range_end == std::string_view::npos || range_end > end) range_end = end;
      append_range(range_begin, range_end, values);
      if (range_end == end) return values;
      range_begin = range_end + 1;
    }
  }

  void append_range(size_t begin, size_t end, std::vector<std::string>& values) const {
    if (begin == end) fail(begin, "empty range inside brackets");
    size_t dash = list_.find('-', begin);
    if (dash >= end) dash = end;
    auto [lo, width] = number(begin, dash);
    uint64_t hi = lo;
    if (dash != end) hi = number(dash + 1, end).first;
    std::string_view text = list_.substr(begin, end - begin);
    if (lo > hi) fail(begin, fmt::format("range {} is reversed; expected low <= high", text));
    if (hi - lo >= kMaxHosts - values.size()) {
      fail(begin, fmt::format("expands to more than {} hosts", kMaxHosts));
    }
    // Counting offsets rather than values: hi may be the largest uint64_t.
    for (uint64_t offset = 0; offset <= hi - lo; ++offset) {
      values.push_back(fmt::format("{:0{}}", lo + offset, width));
    }
  }

  // The decimal number in [begin, end) and the width of its text.
  std::pair<uint64_t, size_t> number(size_t begin, size_t end) const {
    if (begin == end) fail(begin, "missing number in range; expected digits");
    for (size_t i = begin; i < end; ++i) {
      if (!is_digit(list_[i])) {
        fail(i, fmt::format("unexpected '{}' in a range; expected digits", list_[i]));
      }
    }
    uint64_t value = 0;
    auto [ptr, error] = std::from_chars(list_.data() + begin, list_.data() + end, value);
    if (error != std::errc()) fail(begin, "number too large");
    return {value, end - begin};
  }

  size_t count(const Pattern& pattern, size_t position) const {
    size_t product = 1;
    for (const auto& group : pattern.groups) {
      product *= group.size();  // each group holds at most kMaxHosts values: no overflow
      if (product > kMaxHosts) {
        fail(position, fmt::format("expands to more than {} hosts", kMaxHosts));
      }
    }
    return product;
  }

  // Appends every name of `pattern` in SLURM's order: loops over groups n-2, n-3, ..., 0 from
  // the outside in, and group n-1 innermost (hostlist.c recurses on the rightmost bracket of the
  // prefix before the last one).
  static void append(const Pattern& pattern, std::vector<std::string>& hosts) {
    size_t n = pattern.groups.size();
    if (n == 0) {
      hosts.push_back(pattern.text[0]);
      return;
    }
    std::vector<size_t> order;  // outermost first
    for (size_t g = n - 1; g-- > 0;) order.push_back(g);
    order.push_back(n - 1);
    std::vector<size_t> index(n, 0);
    while (true) {
      std::string host = pattern.text[0];
      for (size_t g = 0; g < n; ++g) host += pattern.groups[g][index[g]] + pattern.text[g + 1];
      hosts.push_back(std::move(host));
      // Advance like an odometer whose fastest wheel is order.back().
      size_t k = n;
      while (k > 0) {
        size_t g = order[k - 1];
        if (++index[g] < pattern.groups[g].size()) break;
        index[g] = 0;
        --k;
      }
      if (k == 0) return;
    }
  }

  std::string_view list_;
};

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view list) { return Parser(list).expand(); }

}  // namespace ranks::launch
