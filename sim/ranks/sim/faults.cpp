#include "ranks/sim/faults.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <map>
#include <string_view>

#include "ranks/errors.hpp"

namespace ranks::sim::detail {

namespace {

[[noreturn]] void bad(const std::string& spec, const std::string& why) {
  throw InvalidArgument(
      fmt::format("sim: fault '{}': {}; expected crash:rank=R,op=K, crash:rank=R,at=SECONDS or "
                  "delay:rank=R,op=K,by=SECONDS",
                  spec, why));
}

int64_t parse_int(const std::string& spec, std::string_view key, std::string_view text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) {
    bad(spec, fmt::format("{}={} is not a whole number", key, text));
  }
  return value;
}

std::chrono::nanoseconds parse_seconds(const std::string& spec, std::string_view key,
                                       std::string_view text) {
  std::string copy(text);
  char* end = nullptr;
  double seconds = std::strtod(copy.c_str(), &end);
  if (copy.empty() || *end != '\0' || !std::isfinite(seconds) || seconds < 0 || seconds > 1e9) {
    bad(spec, fmt::format("{}={} is not a number of seconds in [0, 1e9]", key, text));
  }
  return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(seconds * 1e9)));
}

}  // namespace

std::vector<Fault> parse_faults(const std::vector<std::string>& specs, int world_size) {
  std::vector<Fault> faults;
  for (const std::string& spec : specs) {
    auto colon = spec.find(':');
    if (colon == std::string::npos) bad(spec, "no ':' after the kind");
    std::string_view kind(spec.data(), colon);
    std::map<std::string_view, std::string_view> args;
    std::string_view rest(spec.data() + colon + 1, spec.size() - colon - 1);
    while (!rest.empty()) {
      auto comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      auto eq = item.find('=');
      if (eq == std::string_view::npos) bad(spec, fmt::format("'{}' is not key=value", item));
      if (!args.emplace(item.substr(0, eq), item.substr(eq + 1)).second) {
        bad(spec, fmt::format("'{}' is given twice", item.substr(0, eq)));
      }
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    Fault fault;
    fault.spec = spec;
    if (!args.count("rank")) bad(spec, "rank= is missing");
    int64_t rank = parse_int(spec, "rank", args["rank"]);
    if (rank < 0 || rank >= world_size) {
      bad(spec, fmt::format("rank {} is out of range [0, {})", rank, world_size));
    }
    fault.rank = static_cast<int>(rank);
    auto op = [&] {
      int64_t k = parse_int(spec, "op", args["op"]);
      if (k < 1) bad(spec, fmt::format("op={} must be 1 or more (the first op is op=1)", k));
      return k;
    };
    if (kind == "crash" && args.count("op") && !args.count("at") && args.size() == 2) {
      fault.kind = Fault::Kind::CrashAtOp;
      fault.op = op();
    } else if (kind == "crash" && args.count("at") && !args.count("op") && args.size() == 2) {
      fault.kind = Fault::Kind::CrashAtTime;
      fault.at = parse_seconds(spec, "at", args["at"]);
    } else if (kind == "delay" && args.count("op") && args.count("by") && args.size() == 3) {
      fault.kind = Fault::Kind::DelayAtOp;
      fault.op = op();
      fault.by = parse_seconds(spec, "by", args["by"]);
    } else {
      bad(spec, kind == "crash" || kind == "delay" ? "the keys do not fit the kind"
                                                   : fmt::format("unknown kind '{}'", kind));
    }
    faults.push_back(std::move(fault));
  }
  return faults;
}

}  // namespace ranks::sim::detail
