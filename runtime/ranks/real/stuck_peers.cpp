#include "ranks/real/stuck_peers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <thread>
#include <vector>

#include "ranks/collectives.hpp"
#include "ranks/context.hpp"
#include "ranks/detail/check.hpp"
#include "ranks/errors.hpp"
#include "ranks/real/first_failure.hpp"
#include "ranks/real/frozen_peers.hpp"
#include "ranks/store.hpp"
#include "ranks/store/deadline.hpp"
#include "ranks/store/tcp_store.hpp"

namespace ranks::detail {

namespace {

std::string key_of(int global_rank) { return fmt::format("ranks/stuck/{}", global_rank); }

// How long after the window a live store has to answer the calls that follow it.
constexpr std::chrono::milliseconds kStoreAnswerMargin{500};

// What a record says: the op a rank is stuck in, by group and sequence number (to tell "this
// op too" from another), and how to name it.
struct Record {
  std::string group;
  int64_t seq = -1;
  bool p2p = false;
  std::string op;     // ranks in different ops at one seq are not "in this op too"
  int64_t root = -1;  // global rank of a rooted collective's root: do the ranks in it agree?
  std::string text;   // "in recv from rank 0 (tag 0) on group 'world' p2p seq 0 at train.cpp:9"
};

std::string encode(const Record& r) {
  return fmt::format("{}\n{}\n{}\n{}\n{}\n{}", r.group, r.seq, r.p2p ? 1 : 0, r.op, r.root, r.text);
}

std::optional<Record> decode(const std::vector<uint8_t>& bytes) {
  const std::string text(bytes.begin(), bytes.end());
  Record r;
  size_t at = 0;
  std::string fields[5];
  for (std::string& field : fields) {
    const size_t end = text.find('\n', at);
    if (end == std::string::npos) return std::nullopt;
    field = text.substr(at, end - at);
    at = end + 1;
  }
  r.group = fields[0];
  r.seq = std::strtoll(fields[1].c_str(), nullptr, 10);
  r.p2p = fields[2] == "1";
  r.op = fields[3];
  r.root = std::strtoll(fields[4].c_str(), nullptr, 10);
  r.text = text.substr(at);
  return r;
}

Record record_of(const GroupSpec& group, const OpRequest& request) {
  const bool p2p = is_point_to_point(request.kind);
  std::string peer;
  if (p2p || has_root(request.kind)) {
    const bool any = request.root == any_source;
    const int global = any || request.root < 0 || request.root >= group.size()
                           ? -1
                           : group.global_ranks()[static_cast<size_t>(request.root)];
    if (request.kind == OpKind::Recv) {
      peer = any ? fmt::format(" from any source (tag {})", request.tag)
                 : fmt::format(" from rank {} (tag {})", global, request.tag);
    } else if (request.kind == OpKind::Send) {
      peer = fmt::format(" to rank {} (tag {})", global, request.tag);
    } else {
      peer = fmt::format(" (root rank {})", global);
    }
  }
  int64_t root = -1;
  if (!p2p && has_root(request.kind) && request.root >= 0 && request.root < group.size()) {
    root = group.global_ranks()[static_cast<size_t>(request.root)];
  }
  return Record{group.name,
                static_cast<int64_t>(request.seq),
                p2p,
                std::string(op_label(request)),
                root,
                fmt::format("in {}{} on group '{}' {}seq {} at {}", op_label(request), peer,
                            group.name, p2p ? "p2p " : "", request.seq, where_str(request.where))};
}

// "rank 3" or "ranks 1, 4-7": ascending global ranks, runs joined.
std::string name_ranks(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ", ";
    text += j == i       ? fmt::format("{}", ranks[i])
            : j == i + 1 ? fmt::format("{}, {}", ranks[i], ranks[j])
                         : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", text);
}

// The global ranks the op waits on: its peer, or every other member.
std::vector<int> awaited(const GroupSpec& group, const OpRequest& request) {
  if (is_point_to_point(request.kind) && request.root != any_source && request.root >= 0 &&
      request.root < group.size()) {
    return {group.global_ranks()[static_cast<size_t>(request.root)]};
  }
  std::vector<int> others;
  for (int r = 0; r < group.size(); ++r) {
    if (r != group.rank) others.push_back(group.global_ranks()[static_cast<size_t>(r)]);
  }
  return others;
}

}  // namespace

std::chrono::milliseconds stuck_window(std::chrono::milliseconds op_timeout) {
  if (const char* text = std::getenv("RANKS_STUCK_WINDOW_MS"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    const long long ms = std::strtoll(text, &end, 10);
    if (*end == '\0' && ms >= 0) return std::chrono::milliseconds(ms);
  }
  return std::min(op_timeout, std::chrono::milliseconds(2000));
}

std::string stuck_peers(const GroupSpec& group, const OpRequest& request,
                        std::chrono::milliseconds window) {
  const std::shared_ptr<Store> store = current().store;
  if (!store || group.rank < 0 || store_silent()) return {};
  // Every store call below ends by then: a frozen store host must not hold this rank's report
  // for the store's whole timeout. The margin lets a live store answer the wait at its window.
  const auto cap = window + kStoreAnswerMargin;
  store::CallCap bounded(cap);
  try {
    const Record mine = record_of(group, request);
    const std::string text = encode(mine);
    store->set(key_of(group.global_ranks()[static_cast<size_t>(group.rank)]),
               std::vector<uint8_t>(text.begin(), text.end()));
    const std::vector<int> peers = awaited(group, request);
    std::vector<std::string> keys;
    for (int peer : peers) keys.push_back(key_of(peer));
    if (window.count() > 0) {
      try {
        store->wait(keys, window);  // returns as soon as all have written
      } catch (const std::exception&) {
        // Some wrote nothing within the window: that is part of the answer.
      }
    }
    std::vector<int> same;
    std::map<int64_t, std::vector<int>> ranks_by_root;  // of this rank and those in this op
    ranks_by_root[mine.root].push_back(group.global_ranks()[static_cast<size_t>(group.rank)]);
    std::vector<int> silent;
    std::vector<std::pair<int, std::string>> elsewhere;
    for (int peer : peers) {
      if (!store->check({key_of(peer)})) {
        silent.push_back(peer);
        continue;
      }
      std::optional<Record> theirs = decode(store->get(key_of(peer)));
      if (!theirs) continue;
      if (!mine.p2p && !theirs->p2p && theirs->group == mine.group && theirs->seq == mine.seq &&
          theirs->op == mine.op) {
        same.push_back(peer);
        ranks_by_root[theirs->root].push_back(peer);
      } else {
        elsewhere.emplace_back(peer, theirs->text);
      }
    }
    // Which of the silent ones are frozen, while the store still answers this rank's calls.
    const std::string frozen = frozen_peers(silent);
    // The others read this rank's record, and theirs, from the store's server: when this process
    // hosts it, leaving at once would cut off ranks whose window ends a moment after this one's.
    if (auto* tcp = dynamic_cast<TCPStore*>(store.get()); tcp != nullptr && tcp->server()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    const std::string_view op = op_label(request);
    std::string out;
    if (!same.empty()) out += fmt::format("; {} timed out in this {} too", name_ranks(same), op);
    if (ranks_by_root.size() > 1) {
      // Every one of them called it, each waiting on a root the others do not serve: a mismatch,
      // which only RANKS_DEBUG=detail reports before the data moves.
      std::vector<std::string> sides;
      for (auto& [root, members] : ranks_by_root) {
        std::sort(members.begin(), members.end());
        sides.push_back(fmt::format("{} gave root {}", name_ranks(members), root));
      }
      out += fmt::format(
          "; but they name different roots ({}): a mismatched {}, which RANKS_DEBUG=detail "
          "reports before any data moves",
          fmt::join(sides, "; "), op);
    } else if (!same.empty() && same.size() == peers.size() && !is_point_to_point(request.kind)) {
      out += fmt::format(
          "; so every rank it waits on called this {}: they may disagree on its dtype, element "
          "count or reduce op (RANKS_DEBUG=detail compares the calls)",
          op);
    }
    constexpr size_t shown = 8;
    for (size_t i = 0; i < elsewhere.size() && i < shown; ++i) {
      out += fmt::format("; rank {} is stuck {}", elsewhere[i].first, elsewhere[i].second);
    }
    if (elsewhere.size() > shown) {
      out += fmt::format("; {} more ranks are stuck in other ops", elsewhere.size() - shown);
    }
    if (!silent.empty()) {
      out += fmt::format(
          "; {} wrote nothing within {} ms: {}no op of ranks timed out there (busy elsewhere, in "
          "an op whose deadline is later, dead, or hung outside ranks)",
          name_ranks(silent), window.count(),
          is_point_to_point(request.kind) ? "" : fmt::format("not in this {}; ", op));
    }
    out += frozen;
    return out;
  } catch (const Timeout& e) {
    mark_store_silent();
    return fmt::format(
        "; the job's rendezvous store did not answer within {} ms, so which ranks did not arrive "
        "is unknown: {}, which hosts it, is frozen (SIGSTOP, a hung host) or cut off ({})",
        cap.count(), current().store_host.empty() ? "the process" : current().store_host, e.what());
  } catch (const std::exception&) {
    return {};  // the store is gone (rank 0, its host, has exited): nothing more to tell
  }
}

}  // namespace ranks::detail
