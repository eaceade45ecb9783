#include "ranks/sim/trace.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "ranks/errors.hpp"

namespace ranks::sim::detail {

void Trace::slice(int rank, std::string_view name, std::string_view group, int64_t seq,
                  std::chrono::nanoseconds start, std::chrono::nanoseconds end,
                  std::string_view where) {
  entries_.push_back({rank, false, std::string(name), std::string(group), std::string(where), seq,
                      start.count(), end.count()});
}

void Trace::instant(int rank, std::string_view name, std::chrono::nanoseconds at,
                    std::string_view detail) {
  entries_.push_back(
      {rank, true, std::string(name), {}, std::string(detail), -1, at.count(), at.count()});
}

void Trace::write(const std::filesystem::path& path, int world_size) const {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  for (int r = 0; r < world_size; ++r) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", r},
                      {"args", {{"name", "rank " + std::to_string(r)}}}});
  }
  for (const Entry& e : entries_) {
    nlohmann::ordered_json event = {{"name", e.name},
                                    {"pid", 0},
                                    {"tid", e.rank},
                                    {"ts", static_cast<double>(e.start_ns) / 1000.0}};
    if (e.instant) {
      event["ph"] = "i";
      event["s"] = "t";
      event["args"] = {{"detail", e.where}};
    } else {
      event["ph"] = "X";
      event["dur"] = static_cast<double>(e.end_ns - e.start_ns) / 1000.0;
      event["args"] = {{"group", e.group}, {"seq", e.seq}, {"where", e.where}};
    }
    events.push_back(std::move(event));
  }
  std::ofstream out(path);
  if (!out) throw InvalidArgument("sim: cannot write the trace to " + path.string());
  out << nlohmann::ordered_json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump() << '\n';
}

}  // namespace ranks::sim::detail
