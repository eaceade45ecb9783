// Reports written from a signal handler, where the engine cannot report: a simulated rank that
// dies on a signal (abort(), a segfault in its body) takes the one process every rank lives in
// with it (outcome crash; then the signal takes its course, so the process still dies of it),
// a rank that keeps the thread past the timeout (wall_guard.hpp; outcome timeout, exit 1), and
// a run interrupted from outside (interruption.hpp; outcome error, then the signal kills).
// Each names the rank that was running and the op it last entered, with a row for every rank as
// it stood. The heap may be corrupt, or the rank interrupted inside malloc: the handlers format
// into fixed buffers, write with write(2) and never allocate.

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "ranks/sim.hpp"
#include "ranks/detail/failure_text.hpp"
#include "ranks/sim/engine.hpp"
#include "ranks/sim/interruption.hpp"
#include "ranks/sim/outsiders.hpp"
#include "ranks/sim/stack.hpp"
#include "ranks/sim/thread_turns.hpp"

namespace ranks::sim::detail {

namespace {

char report_path[4096];
bool installed = false;
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

// The same row as text (report.cpp's layout, one line per rank).
void append_text_row(Out& out, const SimRank& rank) {
  out.format("  rank {:<7} ", rank.rank);
  switch (rank.state) {
    case RankState::Finished: out.put("finished"); break;
    case RankState::Failed: out.put("failed"); break;
    case RankState::Crashed: out.put("crashed"); break;
    case RankState::Runnable:
      out.put(rank.ops_entered == 0 ? "had entered no op" : "between ops");
      break;
    default: out.put("blocked"); break;
  }
  const bool in_op = rank.state != RankState::Finished && rank.state != RankState::Runnable &&
                     !rank.failed_between_ops;
  if (in_op) {
    const BlockInfo& op = rank.block;
    const char* file = op.where.file_name() != nullptr ? op.where.file_name() : "";
    const char* slash = std::strrchr(file, '/');
    out.format(" in {} on group '{}' seq {}", op.op,
               op.group != nullptr ? std::string_view(*op.group) : "", op.seq);
    if (op.where.line() != 0) {
      out.format(" at {}:{}", slash != nullptr ? slash + 1 : file, op.where.line());
    }
  }
  if ((rank.state == RankState::Failed || rank.state == RankState::Crashed) &&
      !rank.error.empty()) {
    out.put(": ");
    out.put(std::string_view(rank.error).substr(0, 400));
  }
  out.put("\n");
}

std::string_view after_last_op(const SimRank& rank) {
  static char text[1024];
  return after_last_op_to(text, rank);
}

// What the ranks printed that stdio still holds. The process dies of the signal (or leaves with
// _exit) without flushing it, so every rank's output since the last flush would be lost, where in
// a real run only the dying rank's is. fflush() is not async-signal-safe (it takes the stream's
// lock, which the interrupted rank may hold); glibc's FILE keeps the pending bytes between two
// public pointers, and write(2) can send them as they are.
void write_pending_stdout() {
#ifdef __GLIBC__
  const char* begin = stdout->_IO_write_base;
  const char* end = stdout->_IO_write_ptr;
  if (begin != nullptr && end > begin) {
    write_all(STDOUT_FILENO, begin, static_cast<size_t>(end - begin));
    stdout->_IO_write_ptr = stdout->_IO_write_base;  // sent: an exit must not send it again
  }
#endif
}

// The report as the engine would write it, from a signal handler: the JSON to the report path
// (when there is one), the human text to stdout. `culprit` (the running rank, if any) gets
// `culprit_state` and `culprit_error`; every other rank its row as it stood.
void write_last_words(Engine* engine, const SimRank* culprit, std::string_view outcome,
                      std::string_view message, std::string_view culprit_state,
                      std::string_view culprit_error) {
  const Options* options = engine != nullptr ? &engine->options() : nullptr;
  const int world_size = options ? options->world_size : 0;
  const unsigned long long seed = options ? options->seed : 0;
  const long long now = engine != nullptr ? engine->now().count() : 0;
  static Out out;  // 16 KiB: not on the (alternate) signal stack
  if (report_path[0] != '\0') {
    int fd = ::open(report_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      out.fd = fd;
      out.used = 0;
      out.format(
          "{{\"outcome\": \"{}\", \"world_size\": {}, \"seed\": {}, "
          "\"virtual_time_ns\": {}, \"message\": \"",
          outcome, world_size, seed, now);
      out.json(message);
      out.put("\", \"ranks\": [");
      for (int r = 0; engine != nullptr && r < world_size; ++r) {
        if (r > 0) out.put(", ");
        if (&engine->rank(r) == culprit) {
          out.format(
              "{{\"rank\": {}, \"state\": \"{}\", \"op\": \"\", \"group\": \"\", "
              "\"seq\": -1, \"where\": \"\", \"error\": \"",
              r, culprit_state);
          out.json(culprit_error);
          out.put("\"}");
        } else {
          append_row(out, engine->rank(r));
        }
      }
      out.put("], \"cycle\": []}\n");
      out.flush();
      ::close(fd);
    }
  }
  write_pending_stdout();
  out.fd = STDOUT_FILENO;
  out.used = 0;
  char duration[32];
  out.format("\nranks sim: outcome {} ({} ranks, {} rules, seed {}, virtual time {})\n", outcome,
             world_size, options ? std::string_view(options->backend) : std::string_view("nccl"),
             seed, ranks::detail::format_duration_to(duration, std::chrono::nanoseconds(now)));
  out.put(message);
  out.put("\n");
  // Every rank as it stood, the one the message is about included, up to a few pages.
  constexpr int kShownRows = 48;
  for (int r = 0; engine != nullptr && r < world_size && r < kShownRows; ++r) {
    const SimRank& rank = engine->rank(r);
    if (&rank == culprit) {
      out.format("  rank {:<7} {} (the message above)\n", r, culprit_state);
    } else {
      append_text_row(out, rank);
    }
  }
  if (engine != nullptr && world_size > kShownRows) {
    out.format("  ... {} more ranks not shown (the JSON report, --report FILE, has every rank)\n",
               world_size - kShownRows);
  }
  out.flush();
}

void on_fatal_signal(int sig, siginfo_t* info, void*) {
  static char message[2048];
  Engine* engine = running_engine_for_crash();
  const SimRank* rank = engine != nullptr ? engine->running() : nullptr;
  size_t length = 0;
  // A rank that ran off its fiber stack: it faults in its guard page, or has written on into the
  // stack below, whose rank then crashes. Either way the report names the rank that overflowed.
  const StackPool* stacks = engine != nullptr ? engine->stacks() : nullptr;
  const long overflowed = stacks != nullptr && (sig == SIGSEGV || sig == SIGBUS)
                              ? stacks->overflowed(info != nullptr ? info->si_addr : nullptr)
                              : -1;
  if (overflowed >= 0 && overflowed < engine->options().world_size) {
    const SimRank& culprit = engine->rank(static_cast<int>(overflowed));
    char last[1024];
    char victim[96];
    size_t victim_length = 0;
    if (rank != nullptr && rank != &culprit) {
      victim_length = fmt::format_to_n(victim, sizeof victim,
                                       " while rank {}, whose stack it wrote over, ran", rank->rank)
                          .size;
    }
    length = fmt::format_to_n(message, sizeof message,
                              "rank {} overflowed its stack of {} KiB ({}), and the process died "
                              "on signal {} (SIG{}){}: deep recursion or large local arrays; give "
                              "each rank more with sim::Options::stack_bytes "
                              "(ranks.sim.run(stack_bytes=...)), or run ranks on threads of their "
                              "own (8 MiB stacks)",
                              culprit.rank, stacks->size_bytes() / 1024,
                              after_last_op_to(last, culprit), sig, sigabbrev_np(sig),
                              std::string_view(victim, std::min(victim_length, sizeof victim)))
                 .size;
    rank = &culprit;
  } else if (const ThreadTurns* turns = engine != nullptr ? engine->turns() : nullptr;
             rank != nullptr && turns != nullptr && (sig == SIGSEGV || sig == SIGBUS) &&
             turns->ran_off_stack(rank->rank, info != nullptr ? info->si_addr : nullptr)) {
    char last[1024];
    length = fmt::format_to_n(message, sizeof message,
                              "rank {} overflowed its thread's stack of {} KiB ({}), and the "
                              "process died on signal {} (SIG{}): deep recursion (through C "
                              "code, which the interpreter's recursion limit does not bound) or "
                              "large local arrays",
                              rank->rank, turns->stack_bytes() / 1024,
                              after_last_op_to(last, *rank), sig, sigabbrev_np(sig))
                 .size;
  } else if (rank == nullptr) {
    length = fmt::format_to_n(message, sizeof message,
                              "the process died on signal {} (SIG{}) while no rank was running",
                              sig, sigabbrev_np(sig))
                 .size;
  } else {
    length = fmt::format_to_n(message, sizeof message,
                              "rank {} died on signal {} (SIG{}) in its "
                              "body, {}",
                              rank->rank, sig, sigabbrev_np(sig), after_last_op(*rank))
                 .size;
  }
  const std::string_view text(message, std::min(length, sizeof message));
  write_last_words(engine, rank, "crash", text, "crashed", text);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

std::string_view after_last_op_to(std::span<char, 1024> out, const SimRank& rank) {
  if (rank.ops_entered == 0) return "before any op";
  const BlockInfo& last = rank.block;
  const char* file = last.where.file_name() != nullptr ? last.where.file_name() : "";
  const char* slash = std::strrchr(file, '/');
  const auto result = fmt::format_to_n(
      out.data(), out.size(), "after entering its op {} ({} on group '{}' seq {} at {}:{})",
      rank.ops_entered, last.op, last.group != nullptr ? std::string_view(*last.group) : "",
      last.seq, slash != nullptr ? slash + 1 : file, last.where.line());
  return {out.data(), std::min(result.size, out.size())};
}

void report_stall_and_exit(Engine& engine, std::string_view now_at) {
  static char message[2048];
  static char error[1280];
  const SimRank* rank = engine.running();
  char duration[32];
  const std::string_view timeout =
      format_duration_to(duration, std::chrono::nanoseconds(engine.options().timeout));
  size_t length = 0;
  size_t error_length = 0;
  if (rank != nullptr) {
    // Where it is now, when the caller could tell (a Python rank's current line).
    char at[600];
    size_t at_length = 0;
    if (!now_at.empty()) {
      at_length = fmt::format_to_n(at, sizeof at, ", now at {}", now_at).size;
    }
    const std::string_view now(at, std::min(at_length, sizeof at));
    length = fmt::format_to_n(
                 message, sizeof message,
                 "rank {} has not handed the thread back to the simulator for {} of real time "
                 "(the run's timeout), {}{}: it is blocked or busy outside ranks (a real sleep or "
                 "lock, I/O, waiting for another rank by means ranks cannot see, a long "
                 "computation). Simulated ranks run one at a time, so no other rank could run; "
                 "real ranks waiting for it would time out",
                 rank->rank, timeout, after_last_op(*rank), now)
                 .size;
    error_length = fmt::format_to_n(error, sizeof error,
                                    "kept the thread for {} of real time, outside ranks ({}{})",
                                    timeout, after_last_op(*rank), now)
                       .size;
  } else {
    length = fmt::format_to_n(message, sizeof message,
                              "the simulator made no progress for {} of real time (the run's "
                              "timeout) while no rank was running",
                              timeout)
                 .size;
  }
  write_last_words(&engine, rank, "timeout",
                   std::string_view(message, std::min(length, sizeof message)), "blocked",
                   std::string_view(error, std::min(error_length, sizeof error)));
  ::_exit(1);
}

[[noreturn]] void report_interruption_and_exit(Engine& engine, int sig, std::string_view now_at) {
  static char message[2048];
  static char error[1280];
  const SimRank* rank = engine.running();
  char at[600];
  size_t at_length = 0;
  if (!now_at.empty()) at_length = fmt::format_to_n(at, sizeof at, ", now at {}", now_at).size;
  const std::string_view now(at, std::min(at_length, sizeof at));
  size_t length = 0;
  size_t error_length = 0;
  if (rank != nullptr) {
    length = fmt::format_to_n(message, sizeof message,
                              "the run was interrupted by signal {} (SIG{}) while rank {} was "
                              "running, {}{}; every other rank as it stood then",
                              sig, sigabbrev_np(sig), rank->rank, after_last_op(*rank), now)
                 .size;
    error_length = fmt::format_to_n(error, sizeof error, "interrupted by SIG{} while running ({}{})",
                                    sigabbrev_np(sig), after_last_op(*rank), now)
                       .size;
  } else {
    length = fmt::format_to_n(message, sizeof message,
                              "the run was interrupted by signal {} (SIG{}) while no rank was "
                              "running; every rank as it stood then",
                              sig, sigabbrev_np(sig))
                 .size;
  }
  write_last_words(&engine, rank, "error",
                   std::string_view(message, std::min(length, sizeof message)), "failed",
                   std::string_view(error, std::min(error_length, sizeof error)));
  // Dies of the signal, as it would have without the report.
  ::signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);
  ::_exit(128 + sig);
}

void report_foreign_call_and_exit(Engine& engine, std::string_view message) {
  write_last_words(&engine, nullptr, "error", message, "", "");
  ::_exit(1);
}

bool crash_report_installed() { return installed; }

void install_crash_report(const char* path) {
  installed = true;
  std::strncpy(report_path, path != nullptr ? path : "", sizeof report_path - 1);
  stack_t alternate{};
  alternate.ss_sp = alternate_stack;
  alternate.ss_size = sizeof alternate_stack;
  ::sigaltstack(&alternate, nullptr);
  struct sigaction action {};
  action.sa_sigaction = on_fatal_signal;
  action.sa_flags = SA_ONSTACK | SA_RESETHAND | SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::sigaction(sig, &action, nullptr);
}

}  // namespace ranks::sim::detail
