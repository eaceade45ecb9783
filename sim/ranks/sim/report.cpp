#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ranks/sim.hpp"
#include "ranks/sim/engine.hpp"

namespace ranks::sim {

std::string_view outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::Ok:
      return "ok";
    case Outcome::Deadlock:
      return "deadlock";
    case Outcome::Timeout:
      return "timeout";
    case Outcome::Mismatch:
      return "mismatch";
    case Outcome::Unsupported:
      return "unsupported";
    case Outcome::Crash:
      return "crash";
    case Outcome::Error:
      return "error";
  }
  return "error";
}

namespace {

bool same_row(const RankReport& a, const RankReport& b) {
  return a.state == b.state && a.op == b.op && a.group == b.group && a.seq == b.seq &&
         a.where == b.where && a.error == b.error && a.peer == b.peer && a.dtype == b.dtype &&
         a.count == b.count;
}

std::string row_text(const RankReport& row) {
  std::string text = row.state;
  if (!row.op.empty()) text += fmt::format(" in {}", row.op);
  if (row.peer) {
    text += row.op == "send"   ? fmt::format(" to rank {}", *row.peer)
            : row.op != "recv" ? fmt::format(" (root {})", *row.peer)
            : *row.peer < 0    ? std::string(" from any source")
                               : fmt::format(" from rank {}", *row.peer);
  }
  if (row.count >= 0) text += fmt::format(" [{} x {}]", row.count, row.dtype);
  if (!row.group.empty()) text += fmt::format(" on group '{}' seq {}", row.group, row.seq);
  if (!row.where.empty()) text += fmt::format(" at {}", row.where);
  if (!row.error.empty()) text += fmt::format(": {}", row.error);
  return text;
}

}  // namespace

std::string Report::to_text() const {
  std::string text = fmt::format("ranks sim: outcome {} ({} ranks, seed {}, virtual time {} ns)\n",
                                 outcome_name(outcome), world_size, seed, virtual_time.count());
  text += message + "\n";
  if (outcome == Outcome::Ok) return text;
  // Runs of consecutive ranks in the same state print as one line, so 10,000 ranks in a few
  // states stay readable. Ranks that each differ (a ring of receives) would print one line each:
  // after kShownRows lines only failed and crashed ranks are shown, and the rest are counted.
  constexpr size_t kShownRows = 48;
  size_t lines = 0;
  size_t hidden_rows = 0;
  size_t hidden_ranks = 0;
  for (size_t begin = 0; begin < ranks.size();) {
    size_t end = begin + 1;
    while (end < ranks.size() && same_row(ranks[begin], ranks[end])) ++end;
    const RankReport& row = ranks[begin];
    if (lines < kShownRows || row.state == "failed" || row.state == "crashed") {
      std::string who = end - begin == 1
                            ? fmt::format("rank {}", row.rank)
                            : fmt::format("ranks {}-{}", row.rank, ranks[end - 1].rank);
      text += fmt::format("  {:<12} {}\n", who, row_text(row));
      ++lines;
    } else {
      ++hidden_rows;
      hidden_ranks += end - begin;
    }
    begin = end;
  }
  if (hidden_rows > 0) {
    text += fmt::format(
        "  ... {} more line{} for {} rank{} not shown (the JSON report, --report FILE, has every "
        "rank)\n",
        hidden_rows, hidden_rows == 1 ? "" : "s", hidden_ranks, hidden_ranks == 1 ? "" : "s");
  }
  if (!cycle.empty()) {
    text += fmt::format("  wait-for cycle: {}\n", detail::format_cycle(cycle));
  }
  return text;
}

std::string Report::to_json() const {
  // Written by hand around nlohmann's dump() so that each rank is one line: a 10,000-rank report
  // stays greppable and diffs line by line.
  using json = nlohmann::ordered_json;
  std::string out = "{\n";
  auto field = [&](std::string_view key, const json& value) {
    out += fmt::format("  {}: {},\n", json(key).dump(), value.dump());
  };
  field("outcome", outcome_name(outcome));
  field("world_size", world_size);
  field("seed", seed);
  field("virtual_time_ns", virtual_time.count());
  field("message", message);
  out += "  \"ranks\": [";
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankReport& row = ranks[i];
    // Every row has the schema's keys (shared/API.md), with RankReport's "" and -1 where a rank
    // has none (a finished rank is in no op); the extras only when the op has them.
    json j = {{"rank", row.rank}, {"state", row.state}, {"op", row.op},      {"group", row.group},
              {"seq", row.seq},   {"where", row.where}, {"error", row.error}};
    if (row.peer) j["peer"] = *row.peer;
    if (!row.dtype.empty()) j["dtype"] = row.dtype;
    if (row.count >= 0) j["count"] = row.count;
    out += (i == 0 ? "\n    " : ",\n    ") + j.dump();
  }
  out += ranks.empty() ? "],\n" : "\n  ],\n";
  out += fmt::format("  \"cycle\": {}\n}}\n", json(cycle).dump());
  return out;
}

}  // namespace ranks::sim
