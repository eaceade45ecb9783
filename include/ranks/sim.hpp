#pragma once
// The simulator, programmatically: run a per-rank body as N ranks (Boost.Fiber fibers on this
// thread), deterministically, on a virtual clock, and get a report of what happened.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <source_location>
#include <string>
#include <string_view>
#include <string_view>
#include <vector>

namespace ranks::sim {

// Hazard: every rank finished, but the run did something that real backends do not promise to
// survive (Report::hazards says what); the other outcomes are failures.
enum class Outcome { Ok, Deadlock, Timeout, Mismatch, Unsupported, Crash, Error, Hazard };
std::string_view outcome_name(Outcome);  // "ok", "deadlock", ...

// The kinds of hazard the simulator reports (Report::hazards, Options::accept):
//   "buffer_in_flight": an op's buffer written between posting the op and seeing it complete
//   "unwaited_work":    a Work dropped without a wait, or a result read before it completed
//   "buffering":        a send that completed only because the library held the message
std::span<const std::string_view> hazard_kinds();

struct Report;

struct Options {
  int world_size = 8;
  int ranks_per_node = 0;        // 0: all ranks on one node
  std::string backend = "nccl";  // whose support matrix and device rules to emulate
  uint64_t seed = 0;             // 0: FIFO schedule; else a seeded interleaving
  // Of virtual time for a blocking op; and of real time for a rank to hand the thread back
  // (a rank blocked outside ranks, in a real sleep or lock, ends the run with outcome timeout).
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
  std::vector<std::string> faults;             // same spec strings as `ranks sim --fault`
  bool move_data = true;                       // false: shapes only (planning at huge scale)
  std::optional<std::filesystem::path> trace;  // Chrome trace JSON (Perfetto)
  size_t stack_bytes = 0;  // per rank; 0: 256 KiB up to 4,096 ranks, 64 KiB above
  // The cost model that prices ops on the virtual clock: "" or "free" (ops take no virtual
  // time), a preset ("h100-nvlink-ib", "pcie-gen5-ib", "ethernet-40g") or a model file (JSON,
  // e.g. from `ranks calibrate`). Topology comes from ranks_per_node.
  std::string model;
  // A rank that calls exit() ends the one process every rank lives in, so the run ends there,
  // as outcome crash. This gets that report before the process exits with status 1 (empty: the
  // report's text goes to stderr). ranks::main prints it and writes the JSON, as for any run.
  // (A rank that keeps the thread past the timeout, or dies on a signal, is reported from a
  // signal handler, where this cannot run: see detail::install_crash_report.)
  std::function<void(const Report&)> on_exit;
  // Called on every switch of the one thread the ranks share: with the rank about to run, or -1
  // when the thread goes back to the simulator's own fibers (the caller of run(), Boost's
  // dispatcher). This is where a language runtime swaps in a rank's own interpreter state (a
  // Python binding: the rank's PyThreadState) so that each rank runs with its own. It runs between
  // fibers: it must not block, throw or call into ranks. Empty: nothing is called.
  std::function<void(int rank)> on_rank_switch;
  // Each rank on an OS thread of its own, one running at a time, handed over in the same
  // deterministic order, on the same virtual clock, with the same reports; instead of fibers of
  // the caller's thread. For programs whose libraries keep per-thread state that ranks must not
  // share (torch: its autograd engine and grad mode are C++ thread_locals). A switch costs a
  // hand-over between threads (a futex wake and wait) rather than a fiber switch. stack_bytes
  // is then each thread's stack (0: 8 MiB, what glibc gives a thread by default).
  bool rank_threads = false;
  // With rank_threads: called on a rank's thread just before it gives the turn to another
  // rank's thread while its body goes on, and just after it gets the turn back; where a
  // language runtime lets go of and retakes its interpreter lock. Neither may block, throw or
  // call into ranks.
  std::function<void()> on_turn_given;
  std::function<void()> on_turn_taken;
  // With rank_threads: asked, on the caller's thread, where a rank that has kept its turn past
  // the timeout of real time is now (a Python binding: the rank's current line), for the
  // timeout report; "" when it cannot tell. Empty: not asked. It must return even when the rank
  // never lets go of what it holds (bound its own wait).
  std::function<std::string(int rank)> where_is_rank;
  // Nothing chose the rules (`ranks sim` without --backend, RANKS_BACKEND or a calibrated
  // model): the backend the program's first init asks for (init_process_group("gloo"),
  // init_dist(..., backend="gloo"), torch's init_process_group("gloo") under the simulator)
  // becomes the run's rules from then on, for every rank, as if given with --backend; the
  // report says so (Report::backend_from). Until then, and when the program asks for none,
  // `backend`'s.
  bool backend_from_program = false;
  // Hazard kinds (hazard_kinds()) the program accepts: still listed in the report, marked
  // accepted, but they leave the outcome ok. Accepting buffer_in_flight also skips its check
  // (hashing every op's buffers).
  std::vector<std::string> accept;
};

struct RankReport {
  int rank = 0;
  std::string state;  // finished | blocked | failed | crashed
  std::string op;     // the op it was in when it stopped ("" when finished)
  std::string group;
  int64_t seq = -1;
  std::string where;  // file.cpp:42
  std::string error;
  std::optional<int> peer;  // the root, or the point-to-point peer (-1: any source)
  std::string dtype;        // of the op's tensor, when it has one
  int64_t count = -1;       // elements of the op's tensor, when it has one
};

// One hazard, with every occurrence at the same call site folded into it.
struct Hazard {
  std::string kind;                // one of hazard_kinds()
  std::string message;             // what happened and what to do, naming ranks and call sites
  std::vector<int> ranks;          // the ranks it happened on (the first few)
  std::vector<std::string> ops;    // the ops involved ("isend", ...)
  std::vector<std::string> where;  // their call sites, file:line
  int64_t occurrences = 1;
  bool accepted = false;  // Options::accept named its kind
};

struct Report {
  Outcome outcome = Outcome::Ok;
  std::chrono::nanoseconds virtual_time{0};
  int world_size = 0;
  uint64_t seed = 0;
  std::string backend;  // whose rules the run followed (Options::backend)
  // Why those rules when the program chose them (Options::backend_from_program): "rank 0's init
  // at train.py:12 asked for gloo"; "" when they are Options::backend.
  std::string backend_from;
  std::string message;  // one-paragraph diagnosis
  std::vector<RankReport> ranks;
  std::vector<int> cycle;  // a wait-for cycle, when there is one
  std::vector<Hazard> hazards;

  std::string to_text() const;  // the human report
  std::string to_json() const;  // the machine report (shared/API.md schema)
};

Report run(const Options&, const std::function<void()>& body);

// From a simulated rank: the program asks for backend's rules (its init), at `where` when the
// caller knows it (a default-constructed location: not known). Under Options::
// backend_from_program the first ask makes them the run's rules; true when they are the run's
// rules now. Outside a run, false.
bool program_asks_for_backend(std::string_view backend, std::source_location where = {});

// From a simulated rank about to end the process (a language binding's exit, such as Python's
// os._exit): where the program called it, for the report the exit makes. Outside a run, nothing.
void rank_exits_at(std::source_location where);

namespace detail {
// For ranks::main: a rank that dies on a signal (abort(), a segfault) ends the process every
// simulated rank shares; the handler this installs still writes the crash report naming that
// rank (to report_path when it is not empty, and to stdout), then lets the signal kill. The
// timeout report of a rank that keeps the thread (Options::timeout) goes to the same path.
void install_crash_report(const char* report_path);
}  // namespace detail

}  // namespace ranks::sim
