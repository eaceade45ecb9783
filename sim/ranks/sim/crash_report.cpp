// A simulated rank that dies on a signal (abort(), a segfault in its body) takes the one process
// every rank lives in with it, before the engine can report. This handler writes the report the
// engine would have: outcome crash, naming the rank that was running and the op it last entered,
// and a row for every rank as it stood.
// It runs in a signal handler, possibly on a corrupt heap: it formats into fixed buffers, writes
// with write(2) and never allocates; then the signal takes its course, so the process still
// dies of it.

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "ranks/sim.hpp"
#include "ranks/sim/engine.hpp"

namespace ranks::sim::detail {

namespace {

char report_path[4096];
char alternate_stack[64 * 1024];  // a rank that overflowed its stack still gets a report

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Writes to fd through a fixed buffer: one row per rank, whatever the world size.
struct Out {
  int fd = -1;
  char buffer[16 * 1024];
  size_t used = 0;

  void flush() {
    write_all(fd, buffer, used);
    used = 0;
  }
  void put(std::string_view text) {
    for (char c : text) {
      if (used == sizeof buffer) flush();
      buffer[used++] = c;
    }
  }
  template <class... Args>
  void format(fmt::format_string<Args...> pattern, Args&&... args) {
    char line[512];
    const auto result = fmt::format_to_n(line, sizeof line, pattern, std::forward<Args>(args)...);
    put(std::string_view(line, std::min(result.size, sizeof line)));
  }
  // The inside of a JSON string.
  void json(std::string_view text) {
    for (char c : text) {
      if (c == '"' || c == '\\') put("\\");
      const char shown = static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
      put(std::string_view(&shown, 1));
    }
  }
};

// A rank the crash stopped, as the engine's own report would show it (diagnosis.cpp), from what
// its SimRank holds.
void append_row(Out& out, const SimRank& rank) {
  const bool in_op = rank.state != RankState::Finished && rank.state != RankState::Runnable &&
                     !rank.failed_between_ops;
  const char* state = rank.state == RankState::Finished  ? "finished"
                      : rank.state == RankState::Failed  ? "failed"
                      : rank.state == RankState::Crashed ? "crashed"
                                                         : "blocked";
  out.format("{{\"rank\": {}, \"state\": \"{}\", \"op\": \"", rank.rank, state);
  if (in_op) {
    const BlockInfo& op = rank.block;
    const char* file = op.where.file_name() != nullptr ? op.where.file_name() : "";
    const char* slash = std::strrchr(file, '/');
    out.json(op.op);
    out.put("\", \"group\": \"");
    if (op.group != nullptr) out.json(*op.group);
    out.format("\", \"seq\": {}, \"where\": \"", op.seq);
    if (op.where.line() != 0) {
      out.json(slash != nullptr ? slash + 1 : file);
      out.format(":{}", op.where.line());
    }
  } else {
    out.put("\", \"group\": \"\", \"seq\": -1, \"where\": \"");
  }
  out.put("\", \"error\": \"");
  if (rank.state == RankState::Runnable) {
    out.put(rank.ops_entered == 0 ? "had entered no op when the run ended"
                                  : "between ops when the run ended");
  } else {
    out.json(rank.error);
  }
  out.put("\"}");
}

void on_fatal_signal(int sig) {
  static char message[2048];
  static char where[1024];
  Engine* engine = running_engine_for_crash();
  const SimRank* rank = engine != nullptr ? engine->running() : nullptr;
  size_t length = 0;
  if (rank == nullptr) {
    length = fmt::format_to_n(message, sizeof message - 1,
                              "the process died on signal {} (SIG{}) while no rank was running",
                              sig, sigabbrev_np(sig))
                 .size;
  } else {
    const BlockInfo& last = rank->block;
    const auto at =
        fmt::format_to_n(where, sizeof where - 1, "{}:{}",
                         last.where.file_name() ? last.where.file_name() : "", last.where.line());
    where[at.size < sizeof where ? at.size : sizeof where - 1] = '\0';
    const char* file = std::strrchr(where, '/');
    file = file != nullptr ? file + 1 : where;
    length = rank->ops_entered == 0
                 ? fmt::format_to_n(message, sizeof message - 1,
                                    "rank {} died on signal {} (SIG{}) in its body, before any op",
                                    rank->rank, sig, sigabbrev_np(sig))
                       .size
                 : fmt::format_to_n(message, sizeof message - 1,
                                    "rank {} died on signal {} (SIG{}) in its body, after entering "
                                    "its op {} ({} on group '{}' seq {} at {})",
                                    rank->rank, sig, sigabbrev_np(sig), rank->ops_entered, last.op,
                                    last.group ? *last.group : "", last.seq, file)
                       .size;
  }
  if (length >= sizeof message) length = sizeof message - 1;
  const std::string_view text(message, length);
  const Options* options = engine != nullptr ? &engine->options() : nullptr;
  const int world_size = options ? options->world_size : 0;
  const unsigned long long seed = options ? options->seed : 0;
  const long long now = engine != nullptr ? engine->now().count() : 0;

  if (report_path[0] != '\0') {
    int fd = ::open(report_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      static Out out;  // 16 KiB: not on the (alternate) signal stack
      out.fd = fd;
      out.used = 0;
      out.format(
          "{{\"outcome\": \"crash\", \"world_size\": {}, \"seed\": {}, "
          "\"virtual_time_ns\": {}, \"message\": \"",
          world_size, seed, now);
      out.json(text);
      out.put("\", \"ranks\": [");
      if (engine != nullptr) {
        for (int r = 0; r < world_size; ++r) {
          if (r > 0) out.put(", ");
          if (&engine->rank(r) == rank) {
            out.format(
                "{{\"rank\": {}, \"state\": \"crashed\", \"op\": \"\", \"group\": \"\", "
                "\"seq\": -1, \"where\": \"\", \"error\": \"",
                r);
            out.json(text);
            out.put("\"}");
          } else {
            append_row(out, engine->rank(r));
          }
        }
      }
      out.put("], \"cycle\": []}\n");
      out.flush();
      ::close(fd);
    }
  }
  static char human[4096];
  size_t shown = fmt::format_to_n(human, sizeof human - 1,
                                  "\nranks sim: outcome crash ({} ranks, seed {}, virtual time {} "
                                  "ns)\n{}\n",
                                  world_size, seed, now, text)
                     .size;
  write_all(STDOUT_FILENO, human, shown < sizeof human ? shown : sizeof human - 1);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install_crash_report(const char* path) {
  std::strncpy(report_path, path != nullptr ? path : "", sizeof report_path - 1);
  stack_t alternate{};
  alternate.ss_sp = alternate_stack;
  alternate.ss_size = sizeof alternate_stack;
  ::sigaltstack(&alternate, nullptr);
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  action.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::sigaction(sig, &action, nullptr);
}

}  // namespace ranks::sim::detail
