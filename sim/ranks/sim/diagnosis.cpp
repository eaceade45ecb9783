// What the engine says when a run cannot go on: the wait-for graph of the blocked ranks and its
// first cycle, who is in each stuck collective and where the missing ranks are instead, and the
// report rows. This runs once per failed run, never on the happy path.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "ranks/collectives.hpp"
#include "ranks/detail/check.hpp"
#include "ranks/errors.hpp"
#include "ranks/sim/comm.hpp"
#include "ranks/sim/engine.hpp"

namespace ranks::sim::detail {

namespace {

using ranks::detail::where_str;

// Reports list this many blocked groups of ranks, then count the rest: a 10,000-rank deadlock
// must stay a paragraph (every rank is still in the JSON rows).
constexpr size_t kShownGroups = 12;
constexpr size_t kShownMissing = 8;

std::string rank_range(int first, int last) {
  return first == last ? fmt::format("rank {}", first) : fmt::format("ranks {}-{}", first, last);
}

std::string peer_text(const BlockInfo& info) {
  if (info.peer == no_peer) return {};
  if (info.op == "send") return fmt::format(" to rank {}", info.peer);
  if (info.op == "recv") {
    return info.peer == any_source ? std::string(" from any source")
                                   : fmt::format(" from rank {}", info.peer);
  }
  return fmt::format(" (root rank {})", info.peer);
}

std::string tensor_text(const BlockInfo& info) {
  if (info.count < 0) return {};
  return fmt::format(", {} x {}", info.count, dtype_name(info.dtype));
}

}  // namespace

std::string format_cycle(const std::vector<int>& cycle) {
  if (cycle.empty()) return {};
  constexpr size_t head = 8;
  constexpr size_t tail = 2;
  if (cycle.size() <= head + tail + 2) {
    return fmt::format("{} → {}", fmt::join(cycle, " → "), cycle.front());
  }
  return fmt::format(
      "{} → … ({} more) → {} → {}", fmt::join(cycle.begin(), cycle.begin() + head, " → "),
      cycle.size() - head - tail, fmt::join(cycle.end() - tail, cycle.end(), " → "), cycle.front());
}

std::vector<int> Engine::find_cycle() const {
  const int n = static_cast<int>(ranks_.size());
  // Nodes: ranks, then one node per stuck collective (group, seq) that all its waiting members
  // point to, so the graph stays O(ranks) however many ranks a collective misses.
  std::vector<std::vector<int>> edges(static_cast<size_t>(n));
  std::map<std::pair<const SimGroup*, int64_t>, int> collective_node;
  auto blocked = [&](int r) { return ranks_[static_cast<size_t>(r)]->state == RankState::Blocked; };
  auto keep_blocked = [&](std::vector<int> targets) {
    std::erase_if(targets, [&](int r) { return !blocked(r); });
    return targets;
  };
  for (int r = 0; r < n; ++r) {
    const SimRank& rank = *ranks_[static_cast<size_t>(r)];
    if (rank.state != RankState::Blocked || rank.waiting_on == nullptr) continue;
    const SimWork& work = *rank.waiting_on;
    if (is_point_to_point(work.op())) {
      // An any-source receive waits for whoever sends first: no single edge to follow.
      if (work.peer() != any_source)
        edges[static_cast<size_t>(r)] = keep_blocked(work.group.waiting_for(work));
      continue;
    }
    auto [it, inserted] = collective_node.try_emplace(
        {&work.group, static_cast<int64_t>(work.request.seq)}, static_cast<int>(edges.size()));
    if (inserted) edges.push_back(keep_blocked(work.group.waiting_for(work)));
    edges[static_cast<size_t>(r)] = {it->second};
  }
  // Iterative DFS from each rank in order; a back edge closes a cycle.
  enum : uint8_t { White, Grey, Black };
  std::vector<uint8_t> colour(edges.size(), White);
  std::vector<std::pair<int, size_t>> stack;  // node, next edge to try
  for (int start = 0; start < n; ++start) {
    if (colour[static_cast<size_t>(start)] != White) continue;
    stack.assign(1, {start, 0});
    colour[static_cast<size_t>(start)] = Grey;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      const auto& out = edges[static_cast<size_t>(node)];
      if (next == out.size()) {
        colour[static_cast<size_t>(node)] = Black;
        stack.pop_back();
        continue;
      }
      int to = out[next++];
      if (colour[static_cast<size_t>(to)] == White) {
        colour[static_cast<size_t>(to)] = Grey;
        stack.push_back({to, 0});
      } else if (colour[static_cast<size_t>(to)] == Grey) {
        std::vector<int> cycle;
        auto from = std::find_if(stack.begin(), stack.end(),
                                 [to](const auto& frame) { return frame.first == to; });
        for (auto it = from; it != stack.end(); ++it) {
          if (it->first < n) cycle.push_back(it->first);
        }
        std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
        return cycle;
      }
    }
  }
  return {};
}

std::string Engine::describe_blocked(const std::vector<SimRank*>& blocked) const {
  std::string text;
  size_t shown = 0;
  for (size_t begin = 0; begin < blocked.size();) {
    const SimRank& first = *blocked[begin];
    const bool p2p = first.waiting_on != nullptr && is_point_to_point(first.waiting_on->op());
    // Consecutive ranks stuck in the same collective read as one entry.
    size_t end = begin + 1;
    while (!p2p && end < blocked.size() && blocked[end]->rank == blocked[end - 1]->rank + 1 &&
           blocked[end]->block.op == first.block.op &&
           blocked[end]->block.group == first.block.group &&
           blocked[end]->block.seq == first.block.seq &&
           blocked[end]->block.where.line() == first.block.where.line()) {
      ++end;
    }
    if (shown++ == kShownGroups) {
      text += fmt::format("; and {} more blocked ranks (see the rows)", blocked.size() - begin);
      break;
    }
    const BlockInfo& info = first.block;
    text += fmt::format("{}{} in {}{}", text.empty() ? "" : "; ",
                        rank_range(first.rank, blocked[end - 1]->rank), info.op, peer_text(info));
    if (info.group) {
      text += fmt::format(" on group '{}' {}seq {}", *info.group, p2p ? "p2p " : "", info.seq);
    }
    text += fmt::format("{} at {}", tensor_text(info), where_str(info.where));
    if (first.waiting_on != nullptr) {
      const SimWork& work = *first.waiting_on;
      if (p2p) {
        text += fmt::format(" ({})", work.group.describe_missing(work));
      } else {
        std::vector<int> missing = work.group.waiting_for(work);
        text +=
            fmt::format(" ({} of {} arrived", work.group.size() - static_cast<int>(missing.size()),
                        work.group.size());
        for (size_t k = 0; k < missing.size() && k < kShownMissing; ++k) {
          const SimRank& m = *ranks_[static_cast<size_t>(missing[k])];
          text += fmt::format("{} rank {} {}", k == 0 ? "; missing:" : ",", m.rank, whereabouts(m));
        }
        if (missing.size() > kShownMissing) {
          text += fmt::format(", and {} more", missing.size() - kShownMissing);
        }
        text += ")";
      }
    }
    begin = end;
  }
  return text;
}

std::string Engine::whereabouts(const SimRank& m) const {
  switch (m.state) {
    case RankState::Finished:
      return "finished without calling it";
    case RankState::Crashed:
      return "crashed";
    case RankState::Failed:
      return "failed: " + m.error;
    case RankState::Runnable:
      return "is running (outside any op)";
    default:
      break;
  }
  if (m.waiting_on == nullptr) return "is sleeping (sleep_for)";
  return fmt::format("is in {}{}{} at {}", m.block.op, peer_text(m.block),
                     m.block.group
                         ? fmt::format(" on group '{}' seq {}", *m.block.group, m.block.seq)
                         : std::string{},
                     where_str(m.block.where));
}

std::string Engine::whereabouts_of(const std::vector<int>& ranks) const {
  std::string text;
  for (size_t k = 0; k < ranks.size() && k < kShownMissing; ++k) {
    const SimRank& m = *ranks_[static_cast<size_t>(ranks[k])];
    text += fmt::format("; rank {} {}", m.rank, whereabouts(m));
  }
  if (ranks.size() > kShownMissing) {
    text += fmt::format("; and {} more", ranks.size() - kShownMissing);
  }
  return text;
}

void Engine::declare_stuck() {
  std::vector<SimRank*> blocked;
  for (auto& rank : ranks_) {
    if (rank->state == RankState::Blocked) blocked.push_back(rank);
  }
  if (blocked.empty()) return;
  stuck_ = true;
  std::string who = describe_blocked(blocked);
  std::exception_ptr error;
  if (first_failure_) {
    std::string message =
        fmt::format("rank {} failed first ({}: {}); the ranks still waiting can never finish: {}",
                    first_failure_->rank, first_failure_->kind, first_failure_->message, who);
    error = std::make_exception_ptr(RankFailure(message));
  } else {
    cycle_ = find_cycle();
    std::string cycle_text;
    if (!cycle_.empty()) {
      cycle_text = fmt::format(" wait-for cycle: {}.", format_cycle(cycle_));
    }
    std::string message = fmt::format(
        "deadlock at virtual time {}: no rank can make progress and no event is pending.{} {} of "
        "{} "
        "ranks are blocked: {}",
        format_duration(now_), cycle_text, blocked.size(), ranks_.size(), who);
    first_failure_ = Failure{now_, blocked.front()->rank, "deadlock", message};
    error = std::make_exception_ptr(Deadlock(message));
  }
  // Ranks stuck in one collective share its description: computing it per rank would cost
  // O(ranks^2) on a 100,000-rank deadlock.
  std::map<std::pair<const SimGroup*, int64_t>, std::string> collective_missing;
  for (SimRank* rank : blocked) {
    rank->stopped_by_engine = true;
    rank->error =
        first_failure_->kind == "deadlock" ? "blocked forever" : "blocked on a failed rank";
    if (const SimWork* work = rank->waiting_on) {
      std::string missing;
      if (is_point_to_point(work->op())) {
        missing = work->group.describe_missing(*work);
      } else {
        auto [it, inserted] =
            collective_missing.try_emplace({&work->group, static_cast<int64_t>(work->request.seq)});
        if (inserted) it->second = work->group.describe_missing(*work);
        missing = it->second;
      }
      if (!missing.empty()) rank->error += ": " + missing;
    }
    if (trace_)
      trace_->instant(rank->rank, first_failure_->kind == "deadlock" ? "deadlock" : "stuck", now_,
                      rank->error);
    rank->wake_error = error;
    wake(*rank);
  }
}

Report Engine::make_report() const {
  Report report;
  report.world_size = options_.world_size;
  report.seed = options_.seed;
  report.backend = options_.backend;
  report.backend_from = backend_from_;
  report.virtual_time = now_;
  report.cycle = cycle_;
  if (first_failure_) {
    const std::string& kind = first_failure_->kind;
    report.outcome = kind == "deadlock"      ? Outcome::Deadlock
                     : kind == "timeout"     ? Outcome::Timeout
                     : kind == "mismatch"    ? Outcome::Mismatch
                     : kind == "unsupported" ? Outcome::Unsupported
                     : kind == "crash"       ? Outcome::Crash
                                             : Outcome::Error;
    report.message = first_failure_->message;
    // The library's own diagnoses name their ranks; an exception from the body or a rejected
    // argument does not say which global rank raised it.
    if (report.outcome == Outcome::Error) {
      report.message = fmt::format("rank {} failed: {}", first_failure_->rank, report.message);
    }
    // A failed run ends when it fails, as a real job is torn down then (NCCL's watchdog,
    // torchrun): a straggler still sleeping past that point must not move the reported time.
    report.virtual_time = first_failure_->time;
  } else if (first_mismatch_) {
    report.outcome = Outcome::Mismatch;
    report.message = fmt::format(
        "the program caught a Mismatch and went on, which it cannot count on for real: {}. "
        "Real backends raise it only under RANKS_DEBUG=detail; without that the mismatched op "
        "moves the wrong data, fails on a size check or times out",
        *first_mismatch_);
  } else {
    report.message = ranks_.size() == 1 ? std::string("the rank finished")
                                        : fmt::format("all {} ranks finished", ranks_.size());
  }
  if (!first_failure_) {
    for (const std::string& note : unstruck_) report.message += "; " + note;
  }
  if (!first_failure_ && !unfinished_.empty()) {
    // Not a failure (MPI calls it erroneous, gloo lets the process exit), but a lost message or
    // an unanswered collective is almost always a bug worth a line.
    constexpr size_t shown = 8;
    std::vector<std::string> head(unfinished_.begin(),
                                  unfinished_.begin() + std::min(shown, unfinished_.size()));
    report.message += fmt::format("; {} op{} started and never completed: {}{}", unfinished_.size(),
                                  unfinished_.size() == 1 ? "" : "s", fmt::join(head, "; "),
                                  unfinished_.size() > shown
                                      ? fmt::format("; and {} more", unfinished_.size() - shown)
                                      : std::string());
  }
  report.hazards = hazards_.report();
  if (report.outcome == Outcome::Ok && hazards_.any_unaccepted()) {
    report.outcome = Outcome::Hazard;
    const auto first = std::find_if(report.hazards.begin(), report.hazards.end(),
                                    [](const Hazard& h) { return !h.accepted; });
    const size_t unaccepted = static_cast<size_t>(std::count_if(
        report.hazards.begin(), report.hazards.end(), [](const Hazard& h) { return !h.accepted; }));
    report.message = fmt::format(
        "{}, through {} hazard{} a real run does not promise to survive; the first ({}): {}{}. "
        "(To accept a kind of hazard: --accept KIND.)",
        report.message, unaccepted, unaccepted == 1 ? "" : "s", first->kind, first->message,
        unaccepted > 1 ? "; the report lists the others" : "");
  }
  report.ranks.reserve(ranks_.size());
  for (const auto& rank : ranks_) {
    RankReport row;
    row.rank = rank->rank;
    switch (rank->state) {
      case RankState::Finished:
        row.state = "finished";
        break;
      case RankState::Failed:
        row.state = "failed";
        break;
      case RankState::Crashed:
        row.state = "crashed";
        break;
      case RankState::Runnable:
        // Between ops when the run ended (another rank called exit()): stopped where it stood,
        // in the schema's words blocked, in no op.
        row.state = "blocked";
        break;
      case RankState::Blocked:
      case RankState::Stuck:
        row.state = "blocked";
        break;
    }
    // A rank that failed between ops, or is between them, is in no op: its last one completed.
    const bool in_no_op = rank->failed_between_ops || rank->state == RankState::Runnable;
    if (in_no_op) row.error = rank->error;
    if (rank->state == RankState::Runnable && row.error.empty()) {
      row.error = rank->ops_entered == 0 ? "had entered no op when the run ended"
                                         : "between ops when the run ended";
    }
    if (rank->state != RankState::Finished && !in_no_op) {
      BlockInfo info = rank->block;
      // The front end may have rejected the rank's last op before the simulator saw it.
      if (rank->state == RankState::Failed && rank->rejected) {
        const ranks::detail::RejectedOp& rejected = *rank->rejected;
        info = BlockInfo{rejected.name.empty() ? op_name(rejected.op) : rejected.name,
                         &rejected.group, rejected.seq, rejected.where};
      }
      row.op = std::string(info.op);
      if (info.group) row.group = *info.group;
      row.seq = info.seq;
      if (info.where.line() != 0) row.where = where_str(info.where);
      row.peer = info.peer == no_peer ? std::optional<int>{} : std::optional<int>{info.peer};
      if (info.count >= 0) {
        row.dtype = std::string(dtype_name(info.dtype));
        row.count = info.count;
      }
      row.error = rank->error;
    }
    report.ranks.push_back(std::move(row));
  }
  return report;
}

}  // namespace ranks::sim::detail
