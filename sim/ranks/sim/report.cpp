#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "ranks/sim.hpp"
#include "ranks/detail/failure_text.hpp"
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
    case Outcome::Hazard:
      return "hazard";
  }
  return "error";
}

namespace {

bool same_row(const RankReport& a, const RankReport& b) {
  return a.state == b.state && a.op == b.op && a.group == b.group && a.seq == b.seq &&
         a.where == b.where && a.error == b.error && a.peer == b.peer && a.dtype == b.dtype &&
         a.count == b.count;
}

// A row's error that the text has already shown (in the message, or in an earlier row) is named,
// not repeated: a traceback or a mismatch paragraph at a thousand ranks would otherwise fill
// pages. Short errors ("blocked forever") are cheaper to repeat than to refer to.
constexpr size_t kReferredErrorBytes = 120;

std::string row_text(const RankReport& row, std::string_view error) {
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
  if (!error.empty()) text += fmt::format(": {}", error);
  return text;
}

}  // namespace

std::string Report::to_text() const {
  std::string text = fmt::format(
      "ranks sim: outcome {} ({} ranks, {} rules, seed {}, virtual time {})\n",
      outcome_name(outcome), world_size, backend.empty() ? "nccl" : backend, seed,
      ranks::detail::format_duration(virtual_time));
  if (!backend_from.empty()) text += fmt::format("{} rules: {}\n", backend, backend_from);
  text += message + "\n";
  for (const Hazard& hazard : hazards) {
    text += fmt::format("  hazard {}{}: {}\n", hazard.kind, hazard.accepted ? " (accepted)" : "",
                        hazard.message);
  }
  if (outcome == Outcome::Ok || outcome == Outcome::Hazard) return text;
  // Runs of consecutive ranks in the same state print as one line, so 10,000 ranks in a few
  // states stay readable. Ranks that each differ (a ring of receives) would print one line each:
  // after kShownRows lines only failed and crashed ranks are shown, and the rest are counted.
  // Failed and crashed ranks get as many lines again before they too are counted: the text
  // stays a few pages at any scale, and the JSON keeps every rank.
  constexpr size_t kShownRows = 48;
  constexpr size_t kShownFailedRows = 2 * kShownRows;
  size_t lines = 0;
  size_t hidden_rows = 0;
  size_t hidden_ranks = 0;
  std::map<std::string_view, int> shown_errors;  // a long error, and the first rank shown with it
  for (size_t begin = 0; begin < ranks.size();) {
    size_t end = begin + 1;
    while (end < ranks.size() && same_row(ranks[begin], ranks[end])) ++end;
    const RankReport& row = ranks[begin];
    const bool failed = row.state == "failed" || row.state == "crashed";
    if (lines < kShownRows || (failed && lines < kShownFailedRows)) {
      std::string who = end - begin == 1
                            ? fmt::format("rank {}", row.rank)
                            : fmt::format("ranks {}-{}", row.rank, ranks[end - 1].rank);
      std::string error = row.error;
      if (row.error.size() >= kReferredErrorBytes) {
        if (message.find(row.error) != std::string::npos) {
          error = "(the error in the message above)";
        } else if (auto seen = shown_errors.find(row.error); seen != shown_errors.end()) {
          error = fmt::format("(the same error as rank {} above)", seen->second);
        } else {
          shown_errors.emplace(row.error, row.rank);
        }
      }
      text += fmt::format("  {:<12} {}\n", who, row_text(row, error));
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

namespace {

// Appends s as a JSON string. A report's strings are nearly all plain ASCII ("finished", "world",
// "train.cpp:12", "" for a finished rank's op): those are written as they are, and the rest
// (quotes, control characters, UTF-8) go through nlohmann, which escapes and checks them.
void append_string(std::string& out, std::string_view s) {
  const bool plain = std::all_of(
      s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
  if (!plain) {
    out += nlohmann::json(s).dump();
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

void append_int(std::string& out, int64_t value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof(digits), value).ptr;
  out.append(digits, end);
}

// One rank's row as nlohmann's compact dump() of the object would write it, without building
// the object: a 4,096-rank report took a tenth of the whole simulated run that way. Plain
// appends: fmt::format_to a string's back_inserter costs more than the row itself.
void append_row(std::string& out, const RankReport& row) {
  auto text = [&](std::string_view key, std::string_view value) {
    out += key;
    append_string(out, value);
  };
  out += "{\"rank\":";
  append_int(out, row.rank);
  text(",\"state\":", row.state);
  text(",\"op\":", row.op);
  text(",\"group\":", row.group);
  out += ",\"seq\":";
  append_int(out, row.seq);
  text(",\"where\":", row.where);
  text(",\"error\":", row.error);
  if (row.peer) {
    out += ",\"peer\":";
    append_int(out, *row.peer);
  }
  if (!row.dtype.empty()) text(",\"dtype\":", row.dtype);
  if (row.count >= 0) {
    out += ",\"count\":";
    append_int(out, row.count);
  }
  out += '}';
}

}  // namespace

std::string Report::to_json() const {
  // Each rank is one line, so a 10,000-rank report stays greppable and diffs line by line.
  std::string out = "{\n";
  auto field = [&](std::string_view key, auto&& write_value) {
    fmt::format_to(std::back_inserter(out), "  \"{}\": ", key);
    write_value();
    out += ",\n";
  };
  field("outcome", [&] { append_string(out, outcome_name(outcome)); });
  field("world_size", [&] { fmt::format_to(std::back_inserter(out), "{}", world_size); });
  field("seed", [&] { fmt::format_to(std::back_inserter(out), "{}", seed); });
  // Only when the program chose the rules (Options::backend_from_program): which and why.
  if (!backend_from.empty()) {
    field("backend", [&] { append_string(out, backend); });
    field("backend_from", [&] { append_string(out, backend_from); });
  }
  field("virtual_time_ns",
        [&] { fmt::format_to(std::back_inserter(out), "{}", virtual_time.count()); });
  field("message", [&] { append_string(out, message); });
  out += "  \"ranks\": [";
  out.reserve(out.size() + ranks.size() * 100);
  for (size_t i = 0; i < ranks.size(); ++i) {
    out += i == 0 ? "\n    " : ",\n    ";
    // Every row has the schema's keys (shared/API.md), with RankReport's "" and -1 where a rank
    // has none (a finished rank is in no op); the extras only when the op has them.
    append_row(out, ranks[i]);
  }
  out += ranks.empty() ? "],\n" : "\n  ],\n";
  out += fmt::format("  \"cycle\": {},\n", nlohmann::json(cycle).dump());
  nlohmann::json listed = nlohmann::json::array();
  for (const Hazard& hazard : hazards) {
    listed.push_back({{"kind", hazard.kind},
                      {"message", hazard.message},
                      {"ranks", hazard.ranks},
                      {"ops", hazard.ops},
                      {"where", hazard.where},
                      {"occurrences", hazard.occurrences},
                      {"accepted", hazard.accepted}});
  }
  out += fmt::format("  \"hazards\": {}\n}}\n", listed.dump());
  return out;
}

}  // namespace ranks::sim
