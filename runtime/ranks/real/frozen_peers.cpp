#include "ranks/real/frozen_peers.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include "ranks/context.hpp"
#include "ranks/real/first_failure.hpp"
#include "ranks/store.hpp"
#include "ranks/store/deadline.hpp"

namespace ranks::detail {

namespace {

std::mutex table_mutex;
std::vector<RankProcess>& table() {
  static std::vector<RankProcess> processes;
  return processes;
}

std::string key_of(int global_rank) { return fmt::format("ranks/process/{}", global_rank); }

// Ranks named in one report at most: the others are likely frozen for the same reason.
constexpr size_t kShown = 8;

std::optional<RankProcess> process_of(int global_rank) {
  {
    std::lock_guard lock(table_mutex);
    if (static_cast<size_t>(global_rank) < table().size()) {
      return table()[static_cast<size_t>(global_rank)];
    }
  }
  const auto& store = current().store;
  if (!store || store_silent()) return std::nullopt;
  try {
    if (!store->check({key_of(global_rank)})) return std::nullopt;
    const std::vector<uint8_t> value = store->get(key_of(global_rank));
    const std::string text(value.begin(), value.end());
    const size_t newline = text.find('\n');
    RankProcess process{text.substr(0, newline), 0};
    if (newline == std::string::npos ||
        std::from_chars(text.data() + newline + 1, text.data() + text.size(), process.pid).ec !=
            std::errc{}) {
      return std::nullopt;
    }
    return process;
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

bool process_stopped(int pid) {
  std::FILE* stat = std::fopen(fmt::format("/proc/{}/stat", pid).c_str(), "r");
  if (stat == nullptr) return false;
  char line[1024] = {};
  const bool read = std::fgets(line, sizeof line, stat) != nullptr;
  std::fclose(stat);
  const char* after_name = read ? std::strrchr(line, ')') : nullptr;  // the name may hold ')'
  return after_name != nullptr && (after_name[2] == 'T' || after_name[2] == 't');
}

RankProcess this_process() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return {name, static_cast<int>(::getpid())};
}

void publish_process(Store& store, int global_rank) {
  const RankProcess me = this_process();
  const std::string text = fmt::format("{}\n{}", me.host, me.pid);
  store.set(key_of(global_rank), std::vector<uint8_t>(text.begin(), text.end()));
}

void set_rank_processes(std::vector<RankProcess> processes) {
  std::lock_guard lock(table_mutex);
  table() = std::move(processes);
}

std::string frozen_peers(const std::vector<int>& global_ranks) {
  const std::string here = this_process().host;
  store::CallCap bounded(kFailureStoreWindow);
  std::string out;
  size_t named = 0;
  for (int rank : global_ranks) {
    if (named == kShown) break;
    const auto process = process_of(rank);
    if (!process || process->host != here || process->pid <= 0 || !process_stopped(process->pid)) {
      continue;
    }
    out += fmt::format(
        "; rank {} (pid {}) is frozen: its process is stopped (SIGSTOP, SIGTSTP or a debugger)",
        rank, process->pid);
    ++named;
  }
  return out;
}

}  // namespace ranks::detail
