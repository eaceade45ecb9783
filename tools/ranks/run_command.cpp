// `ranks run -n N [--backend B] [--nnodes K --node-rank I --master-addr H --master-port P]
//  [--bind-to core] -- PROGRAM ARGS`: torchrun-style. Starts N local processes with RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and RANKS_BACKEND),
// optionally each bound to one CPU, prefixes their output with the rank, and when one exits
// non-zero or dies on a signal, stops the others and says which rank failed first, how, and its
// last lines of output. With --backend mpi, mpirun starts the N processes instead (mpirun.hpp):
// ranks run relays its tagged output the same way and names the rank mpirun says failed first.

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "job_guard.hpp"
#include "mpirun.hpp"
#include "node_watch.hpp"
#include "ranks/real/fatal.hpp"
#include "ranks/real/frozen_peers.hpp"
#include "ranks/launch/cpu_binding.hpp"
#include "ranks/launch/free_port.hpp"
#include "ranks/launch/job_secret.hpp"
#include "ranks/errors.hpp"

namespace ranks::cli {

namespace {

struct RunArgs {
  int nproc = 0;
  std::string backend;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port on this host (single node)
  double grace_seconds = 5;
  std::string bind_to = "none";  // none | core
  bool raw_output = false;       // no "[rank k] " in front of each line
  bool open_store = false;       // several nodes without a secret, by the user's explicit choice
  std::vector<std::string> program;
};

// One of a rank's output streams, read from a pipe and written, line by line and with the rank
// in front, to the launcher's stream of the same name (so `2>` and pipes mean what they say).
struct Stream {
  int fd = -1;  // -1 once closed
  FILE* to = nullptr;
  std::string partial;  // a line not yet ended
};

struct Child {
  int rank = 0;    // kMpirun: mpirun, which starts the ranks and tags their lines
  pid_t pid = -1;  // also its process group: the rank and whatever it starts
  Stream out, err;
  std::deque<std::string> tail;  // last lines of both streams, for the failure report
  bool exited = false;
  bool stopped = false;  // still running when the launcher began stopping the ranks
  bool frozen = false;   // and stopped by a signal then (SIGSTOP, a debugger): it did not run
  int status = 0;
  std::map<int, std::deque<std::string>> rank_tails;  // mpirun: each rank's last lines
};

constexpr int kMpirun = -1;

constexpr size_t kTailLines = 20;

// A node launcher silent this long at a failure report is named as frozen or cut off (its
// launcher pings every second).
constexpr auto kSilentNode = std::chrono::milliseconds(3000);

// SIGCHLD writes here, so the poll loop wakes the moment a rank dies and reaps ranks in the
// order they died: the first failure reported is the real first one.
int child_exited_pipe[2] = {-1, -1};

void on_child_exit(int) {
  int saved = errno;
  [[maybe_unused]] ssize_t n = write(child_exited_pipe[1], "x", 1);
  errno = saved;
}

// SIGINT, SIGTERM or SIGHUP sent to the launcher (Ctrl-C, a scheduler, `timeout`): the ranks get
// it too, then SIGKILL after the grace period, as torchrun does; nothing is left running.
volatile sig_atomic_t launcher_signal = 0;

void on_launcher_signal(int sig) {
  launcher_signal = sig;
  on_child_exit(sig);  // wakes the poll loop
}

// How much a failure explains: a death by signal more than an error exit of the rank's own,
// and that more than a rank that stopped because another failed (peer_failed_exit_status).
int blame_weight(int status) {
  if (WIFSIGNALED(status)) return 3;
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 0) return 0;
  return WEXITSTATUS(status) == detail::peer_failed_exit_status ? 1 : 2;
}

// Signals a rank and what it started (its process group). A rank signalled right after fork()
// may not lead its group yet (the child and the launcher both set it, in either order): then the
// rank alone.
void signal_rank(const Child& child, int sig) {
  if (kill(-child.pid, sig) != 0) kill(child.pid, sig);
}

// The launcher stops a rank that is still running: SIGTERM, and a frozen one is let run again
// to act on it (else only the SIGKILL after the grace period would end it).
void stop_rank(Child& child) {
  child.stopped = true;
  child.frozen = detail::process_stopped(child.pid);
  signal_rank(child, SIGTERM);
  if (child.frozen) signal_rank(child, SIGCONT);
}

// cpu: the CPU to bind the process to, or -1 to leave it unbound.
void spawn(Child& child, const RunArgs& args, int port, int cpu) {
  int pipe_fds[2];
  int err_fds[2];
  if (pipe(pipe_fds) != 0 || pipe(err_fds) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  const pid_t launcher = getpid();
  // Until exec, the child runs the launcher's handlers: a SIGTERM passed on to a rank that early
  // would be taken by on_launcher_signal in the child, and the rank would live on. So the
  // signals wait, blocked, until the child has put back the default actions.
  sigset_t forwarded, previous;
  sigemptyset(&forwarded);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&forwarded, sig);
  sigprocmask(SIG_BLOCK, &forwarded, &previous);
  child.pid = fork();
  if (child.pid != 0) sigprocmask(SIG_SETMASK, &previous, nullptr);
  if (child.pid < 0) throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (child.pid == 0) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    // A launcher killed outright (SIGKILL, a crash) takes its ranks with it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(128 + SIGKILL);
    // Its own process group, as torchrun gives each worker one: the launcher can then
    // stop what a rank started (a data-loader worker) along with it, not leave it orphaned and
    // holding the rank's output pipe open.
    setpgid(0, 0);
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(err_fds[1], STDERR_FILENO);
    for (int fd : {pipe_fds[0], pipe_fds[1], err_fds[0], err_fds[1]}) close(fd);
    if (child.rank == kMpirun) {
      // MPI_COMM_WORLD comes from mpirun, not from the variables below.
      try {
        exec_program(mpirun_command(args.nproc, args.bind_to, args.program, /*tag_output=*/true));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "ranks run: %s\n", e.what());
      }
      _exit(127);
    }
    const int local = child.rank - args.node_rank * args.nproc;
    setenv("RANK", std::to_string(child.rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(args.nproc * args.nnodes).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(local).c_str(), 1);
    setenv("LOCAL_WORLD_SIZE", std::to_string(args.nproc).c_str(), 1);
    setenv("GROUP_RANK", std::to_string(args.node_rank).c_str(), 1);
    setenv("MASTER_ADDR", args.master_addr.c_str(), 1);
    setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
    if (!args.backend.empty()) setenv("RANKS_BACKEND", args.backend.c_str(), 1);
    if (cpu >= 0) {
      try {
        launch::bind_this_process_to(cpu);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "ranks run: rank %d: %s\n", child.rank, e.what());
        _exit(127);
      }
    }
    std::vector<char*> argv;
    for (const auto& arg : args.program) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "ranks run: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(child.pid, child.pid);  // as the child does: whichever runs first
  close(pipe_fds[1]);
  close(err_fds[1]);
  fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
  fcntl(err_fds[0], F_SETFL, O_NONBLOCK);
  child.out = {pipe_fds[0], stdout, {}};
  child.err = {err_fds[0], stderr, {}};
}

void keep(std::deque<std::string>& tail, std::string line) {
  tail.push_back(std::move(line));
  if (tail.size() > kTailLines) tail.pop_front();
}

// Prints one line of a rank's output, the rank in front unless raw, and keeps the last ones.
void emit(Child& child, Stream& stream, std::string line, bool raw) {
  if (child.rank == kMpirun) {
    if (auto tagged = parse_tagged_line(line)) {
      if (raw) {
        std::fprintf(stream.to, "%s\n", tagged->text.c_str());
      } else {
        std::fprintf(stream.to, "[rank %d] %s\n", tagged->rank, tagged->text.c_str());
      }
      keep(child.rank_tails[tagged->rank], std::move(tagged->text));
      return;
    }
    // mpirun's own lines, as it wrote them: its account of a failure is read from them.
  }
  if (raw || child.rank == kMpirun) {
    std::fprintf(stream.to, "%s\n", line.c_str());
  } else {
    std::fprintf(stream.to, "[rank %d] %s\n", child.rank, line.c_str());
  }
  keep(child.tail, std::move(line));
}

// Forwards the complete lines read so far, and the partial one at the end of the stream. Reads
// once (the pipes do not block); `last` closes the stream after this read whatever it gave.
void forward(Child& child, Stream& stream, bool last, bool raw) {
  char buffer[4096];
  ssize_t n = read(stream.fd, buffer, sizeof(buffer));
  if (n > 0) stream.partial.append(buffer, static_cast<size_t>(n));
  const bool no_data_yet = n < 0 && (errno == EAGAIN || errno == EINTR);
  bool flush_partial = false;
  if (last || (n <= 0 && !no_data_yet)) {
    close(stream.fd);
    stream.fd = -1;
    flush_partial = true;
  }
  size_t start = 0;
  for (size_t newline; (newline = stream.partial.find('\n', start)) != std::string::npos;
       start = newline + 1) {
    emit(child, stream, stream.partial.substr(start, newline - start), raw);
  }
  stream.partial.erase(0, start);
  if (flush_partial && !stream.partial.empty()) {
    emit(child, stream, std::exchange(stream.partial, {}), raw);
  }
  std::fflush(stream.to);
}

// Forwards whatever the ranks have written, waiting up to timeout_ms for something to arrive.
// Returns whether any stream is still open.
bool pump(std::vector<Child>& children, int timeout_ms, bool raw, int wake_fd = -1) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Child*, Stream*>> owners;
  if (wake_fd >= 0) {
    fds.push_back({wake_fd, POLLIN, 0});
    owners.emplace_back(nullptr, nullptr);
  }
  for (Child& c : children) {
    for (Stream* s : {&c.out, &c.err}) {
      if (s->fd < 0) continue;
      fds.push_back({s->fd, POLLIN, 0});
      owners.emplace_back(&c, s);
    }
  }
  if (fds.size() == (wake_fd >= 0 ? 1u : 0u)) return false;
  // Output and deaths wake us at once; the timeout only paces the deadlines.
  if (poll(fds.data(), fds.size(), timeout_ms) > 0) {
    for (size_t i = 0; i < fds.size(); ++i) {
      if (owners[i].first != nullptr && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        forward(*owners[i].first, *owners[i].second, false, raw);
      }
    }
  }
  for (const Child& c : children) {
    if (c.out.fd >= 0 || c.err.fd >= 0) return true;
  }
  return false;
}

std::string how(int status) {
  if (WIFSIGNALED(status)) {
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  }
  return fmt::format("exited with status {}", WEXITSTATUS(status));
}

// mpirun stopped the job: which rank it says failed first, and that rank's last lines.
int report_mpirun_failure(const Child& mpirun) {
  const int status =
      WIFEXITED(mpirun.status) ? WEXITSTATUS(mpirun.status) : 128 + WTERMSIG(mpirun.status);
  const std::optional<MpirunFailure> failure = parse_mpirun_failure(mpirun.tail);
  if (!failure) {
    std::fprintf(stderr, "ranks run: mpirun %s\n", how(mpirun.status).c_str());
    return status;
  }
  std::string report = fmt::format("ranks run: rank {} {} first; mpirun stopped the other ranks.\n",
                                   failure->rank, failure->how);
  if (auto tail = mpirun.rank_tails.find(failure->rank); tail != mpirun.rank_tails.end()) {
    report += fmt::format("last lines of rank {}:\n", failure->rank);
    for (const auto& line : tail->second) report += "  " + line + "\n";
  }
  std::fputs(report.c_str(), stderr);
  return status;
}

// Whether the variable is set to something.
bool has_value(const char* variable) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0';
}

// How long another node's launcher waits for node 0's to write the job's secret file: how far
// apart the launchers of one job may start.
constexpr auto kSecretFileWait = std::chrono::minutes(5);

int run(const RunArgs& args) {
  // No --backend: the program's own choice, which `ranks run` starts as torchrun would.
  const bool through_mpirun =
      !args.backend.empty() && ranks::capabilities(args.backend).launcher == "mpi";
  const int port = args.master_port != 0 || through_mpirun ? args.master_port
                                                           : launch::free_rendezvous_port();
  // A fresh secret for this job's rendezvous store, which its ranks inherit, unless the caller
  // gave one. Several nodes share the caller's RANKS_STORE_TOKEN, or the file that
  // RANKS_STORE_TOKEN_FILE names on a path every node sees, which node 0 writes when it does not
  // exist (launch/job_secret.hpp); without either, only --open-store starts them (checked above).
  const bool secret_given = has_value(launch::kStoreTokenVariable);
  if (args.nnodes == 1 && !secret_given && !has_value(launch::kStoreTokenFileVariable)) {
    setenv(launch::kStoreTokenVariable, launch::new_job_secret().c_str(), 1);
  } else if (args.nnodes > 1 && !secret_given && has_value(launch::kStoreTokenFileVariable)) {
    const std::string path = std::getenv(launch::kStoreTokenFileVariable);
    try {
      if (args.node_rank == 0) {
        launch::make_job_secret_file(path);
      } else {
        launch::await_job_secret_file(path, kSecretFileWait);
      }
    } catch (const Error& e) {
      std::fprintf(stderr, "ranks run: %s\n", e.what());
      return 2;
    }
  } else if (args.nnodes > 1 && args.open_store) {
    std::fprintf(stderr,
                 "ranks run: node %d: --open-store: the job's store at %s:%d has no secret; "
                 "anyone who reaches it can read and write the job's keys\n",
                 args.node_rank, args.master_addr.c_str(), port);
  }
  // Made before any rank, so that it holds none of their pipes.
  JobGuard guard;
  if (pipe2(child_exited_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    throw std::runtime_error("pipe failed");
  struct sigaction action {};
  action.sa_handler = on_child_exit;
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &action, nullptr);
  struct sigaction forward_action {};
  forward_action.sa_handler = on_launcher_signal;
  forward_action.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &forward_action, nullptr);
  const std::vector<int> cpus =
      args.bind_to == "core" ? launch::allowed_cpus() : std::vector<int>{};
  // With mpi, one child: mpirun, which starts the ranks and tags each of their lines.
  std::vector<Child> children(through_mpirun ? 1 : static_cast<size_t>(args.nproc));
  if (through_mpirun) {
    children.front().rank = kMpirun;
    spawn(children.front(), args, port, -1);
    guard.watch(children.front().pid);
  }
  for (int i = 0; !through_mpirun && i < args.nproc; ++i) {
    children[static_cast<size_t>(i)].rank = args.node_rank * args.nproc + i;
    const int cpu = cpus.empty() ? -1 : launch::cpu_for_local_rank(cpus, i);
    spawn(children[static_cast<size_t>(i)], args, port, cpu);
    guard.watch(children[static_cast<size_t>(i)].pid);
  }
  // Several nodes: the launchers watch each other (node_watch.hpp).
  std::unique_ptr<NodeWatch> watch;
  if (args.nnodes > 1 && !through_mpirun) {
    watch = std::make_unique<NodeWatch>(NodeWatchSetup{
        args.nnodes, args.node_rank, args.nproc, args.master_addr, port,
        launch::job_secret(launch::Env::process()).value_or("")});
  }
  std::optional<int> vanished_node;
  const Child* first_failure = nullptr;
  std::chrono::steady_clock::time_point failed_at{};
  constexpr auto kBlameWindow = std::chrono::milliseconds(300);
  // A rank that stopped for a timeout or a peer's failure (exit 75) explains little, and the
  // others are then likely on their way out with their own account: a timed-out rank waits up
  // to 2 s for the ranks it waits on to say where they are stuck (real/stuck_peers.hpp).
  // Stopping them at once would lose exactly the messages that name the culprit.
  constexpr auto kSymptomWindow = std::chrono::milliseconds(3000);
  auto window = [&] {
    return blame_weight(first_failure->status) == 1 ? kSymptomWindow : kBlameWindow;
  };
  std::chrono::steady_clock::time_point kill_at{};
  bool terminated = false, killed = false;
  for (;;) {
    pump(children, 100, args.raw_output, child_exited_pipe[0]);
    char drain[64];
    while (read(child_exited_pipe[0], drain, sizeof(drain)) > 0) {
    }
    // Ranks that die together are reaped in one batch, in no particular order. A rank killed by
    // a signal is the likelier cause than one that exited with an error a moment later (the
    // others notice its closed connections), so within a batch it counts as first.
    int status = 0;
    const Child* batch_worst = nullptr;  // the failure in this batch that explains the most
    for (pid_t pid; (pid = waitpid(-1, &status, WNOHANG)) > 0;) {
      for (Child& c : children) {
        if (c.pid != pid) continue;
        c.exited = true;
        c.status = status;
        if (blame_weight(status) > (batch_worst ? blame_weight(batch_worst->status) : 0)) {
          batch_worst = &c;
        }
      }
    }
    // A process's sockets close a moment before its parent hears of its death (and exit()
    // takes a while), so a peer that noticed can exit before it is reaped. For a short while
    // after the first failure, a failure that explains more still takes the blame.
    const auto now = std::chrono::steady_clock::now();
    if (first_failure == nullptr && batch_worst) {
      first_failure = batch_worst;
      failed_at = now;
    } else if (batch_worst && first_failure && now - failed_at < window() &&
               blame_weight(batch_worst->status) > blame_weight(first_failure->status)) {
      first_failure = batch_worst;
    }
    if (launcher_signal != 0 && !terminated) {
      for (Child& c : children) {
        if (!c.exited) signal_rank(c, launcher_signal);
      }
      terminated = true;
      kill_at = now + std::chrono::milliseconds(static_cast<int>(args.grace_seconds * 1000));
    }
    bool all_exited = true;
    for (const Child& c : children) all_exited = all_exited && c.exited;
    if (all_exited) break;
    if (watch && !terminated && first_failure == nullptr && (vanished_node = watch->vanished())) {
      // Another node's launcher is gone, its ranks with it: this node's ranks would wait for
      // them until their timeout.
      for (Child& c : children) {
        if (!c.exited) stop_rank(c);
      }
      terminated = true;
      kill_at = now + std::chrono::milliseconds(static_cast<int>(args.grace_seconds * 1000));
    }
    if (first_failure != nullptr && !terminated &&
        std::chrono::steady_clock::now() - failed_at >= window()) {
      for (Child& c : children) {
        if (!c.exited) stop_rank(c);
      }
      terminated = true;
      kill_at = std::chrono::steady_clock::now() +
                std::chrono::milliseconds(static_cast<int>(args.grace_seconds * 1000));
    }
    if (terminated && !killed && std::chrono::steady_clock::now() >= kill_at) {
      for (Child& c : children) {
        if (!c.exited) signal_rank(c, SIGKILL);
      }
      killed = true;
    }
  }
  // Every rank has exited; what they started may still run and hold their pipes open. Stop
  // it (each rank's process group), forwarding its last output meanwhile, and never wait on a
  // pipe for ever: a process that left the group (setsid) keeps it open for as long as it lives.
  for (Child& c : children) kill(-c.pid, SIGTERM);
  const auto drain_until = std::chrono::steady_clock::now() +
                           std::chrono::milliseconds(static_cast<int>(args.grace_seconds * 1000));
  while (pump(children, 50, args.raw_output) && std::chrono::steady_clock::now() < drain_until) {
  }
  for (Child& c : children) kill(-c.pid, SIGKILL);
  guard.release();
  const auto last_call = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (pump(children, 50, args.raw_output) && std::chrono::steady_clock::now() < last_call) {
  }
  for (Child& c : children) {
    for (Stream* s : {&c.out, &c.err}) {
      if (s->fd >= 0) forward(c, *s, true, args.raw_output);
    }
  }
  if (launcher_signal != 0) {
    std::fprintf(stderr, "ranks run: stopped by signal %d (%s), passed on to every rank\n",
                 static_cast<int>(launcher_signal), strsignal(launcher_signal));
    return 128 + launcher_signal;
  }
  // This launcher stopped its ranks for a vanished node, or they stopped for a peer's failure
  // while a node vanished: the node is the story.
  if (watch && !vanished_node && first_failure && blame_weight(first_failure->status) == 1) {
    vanished_node = watch->vanished();
  }
  {
    if (vanished_node) {
      std::fprintf(stderr,
                   "ranks run: %s vanished: its launcher's connection closed without a word "
                   "(killed, or its host went down); this node's ranks were stopped\n",
                   watch->describe(*vanished_node).c_str());
      return detail::peer_failed_exit_status;
    }
  }
  if (first_failure == nullptr) return 0;
  if (first_failure->rank == kMpirun) return report_mpirun_failure(*first_failure);
  std::string report;
  if (blame_weight(first_failure->status) == 1) {
    // A node whose launcher stopped answering is frozen (SIGSTOP) or cut off: say so first.
    for (int node : watch ? watch->silent(kSilentNode) : std::vector<int>{}) {
      report += fmt::format(
          "ranks run: {} has not answered its launcher's pings for {} s or more: it is frozen "
          "(stopped) or cut off, and its ranks with it\n",
          watch->describe(node), kSilentNode.count() / 1000);
    }
    // Every rank that ended did so because of another: the ones still running are the suspects,
    // and a frozen one first of all.
    std::vector<int> symptoms, running, early;
    for (const Child& c : children) {
      if (c.frozen) {
        report += fmt::format(
            "ranks run: rank {} (pid {}) was frozen (stopped by SIGSTOP, SIGTSTP or a debugger) "
            "when the others stopped waiting: the likely cause\n",
            c.rank, c.pid);
      }
      if (c.stopped) running.push_back(c.rank);
      if (blame_weight(c.status) == 1) symptoms.push_back(c.rank);
      if (c.exited && !c.stopped && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0) {
        early.push_back(c.rank);
      }
    }
    report = fmt::format(
        "{}ranks run: no rank failed for a reason of its own: rank{} {} stopped on a timeout or a "
        "peer's failure (exit status {}){}.\n",
        report, symptoms.size() == 1 ? "" : "s", fmt::join(symptoms, ", "), detail::peer_failed_exit_status,
        running.empty() ? std::string()
                        : fmt::format("; rank{} {} {} still running and {} stopped by ranks run",
                                      running.size() == 1 ? "" : "s", fmt::join(running, ", "),
                                      running.size() == 1 ? "was" : "were",
                                      running.size() == 1 ? "was" : "were"));
    if (!early.empty()) {
      // In a healthy job every rank exits 0. One that did while the others failed for a peer's
      // sake returned early, with ops still to do with them: the likely cause.
      report += fmt::format(
          "ranks run: rank{} {} exited with status 0 meanwhile; a rank that returns while the "
          "others still have ops with it makes them fail\n",
          early.size() == 1 ? "" : "s", fmt::join(early, ", "));
    }
  } else {
    report = fmt::format("ranks run: rank {} (pid {}) {} first; the other ranks were stopped.\n",
                         first_failure->rank, first_failure->pid, how(first_failure->status));
  }
  if (!first_failure->tail.empty()) {
    report += fmt::format("last lines of rank {}:\n", first_failure->rank);
    for (const auto& line : first_failure->tail) report += "  " + line + "\n";
  }
  std::fputs(report.c_str(), stderr);
  if (WIFSIGNALED(first_failure->status)) return 128 + WTERMSIG(first_failure->status);
  return WEXITSTATUS(first_failure->status);
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "start N real processes of a program (torchrun-style)");
  cmd->add_option("-n,--nproc-per-node", args->nproc, "processes on this node")
      ->required()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--backend", args->backend, "RANKS_BACKEND for the processes")
      ->check(CLI::IsMember(backend_choices()));
  cmd->add_option("--nnodes", args->nnodes, "nodes in the job")->check(CLI::PositiveNumber);
  cmd->add_option("--node-rank", args->node_rank, "this node's index")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--master-addr", args->master_addr, "host of rank 0 (the store)");
  cmd->add_option("--master-port", args->master_port, "port of the store (default: a free one)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--grace", args->grace_seconds,
                  "seconds between SIGTERM and SIGKILL for the survivors of a failure")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--bind-to", args->bind_to,
                  "core: each process on one CPU, local ranks taking the allowed CPUs in turn "
                  "(as mpirun --bind-to core); none (default): unbound")
      ->check(CLI::IsMember({"none", "core"}));
  cmd->add_flag("--open-store", args->open_store,
                "with --nnodes > 1 and no RANKS_STORE_TOKEN or RANKS_STORE_TOKEN_FILE: start the "
                "job with a rendezvous store anyone who reaches it may read and write");
  cmd->add_flag("--raw-output", args->raw_output,
                "forward the processes' lines as they are, without \"[rank k] \" in front");
  cmd->add_option("program", args->program, "the program and its arguments (after --)")->required();
  cmd->positionals_at_end();
  return [args] {
    if (args->node_rank >= args->nnodes) {
      std::fprintf(stderr, "ranks run: --node-rank %d is out of range [0, %d)\n", args->node_rank,
                   args->nnodes);
      return 2;
    }
    if (!args->backend.empty() && ranks::capabilities(args->backend).launcher == "mpi" &&
        args->nnodes > 1) {
      // MPI_COMM_WORLD comes from mpirun, not from the torchrun-style variables.
      std::fprintf(stderr,
                   "ranks run: --backend mpi starts this node's ranks through mpirun; for "
                   "several nodes start the job with mpirun (and a hostfile) or srun\n");
      return 2;
    }
    if (args->nnodes > 1 && args->master_port == 0) {
      std::fprintf(stderr, "ranks run: with --nnodes > 1, give --master-addr and --master-port\n");
      return 2;
    }
    if (args->nnodes > 1 && !args->open_store && !has_value(launch::kStoreTokenVariable) &&
        !has_value(launch::kStoreTokenFileVariable)) {
      std::fprintf(
          stderr,
          "ranks run: --nnodes %d would start the job's rendezvous store open to anyone who "
          "reaches %s:%d. Give the launchers a secret: set %s to a path every node sees (node "
          "0's launcher writes a fresh secret there, mode 0600; the others read it), or %s to "
          "the same secret on every node; or pass --open-store to start without one\n",
          args->nnodes, args->master_addr.c_str(), args->master_port,
          launch::kStoreTokenFileVariable, launch::kStoreTokenVariable);
      return 2;
    }
    return run(*args);
  };
}

}  // namespace ranks::cli
