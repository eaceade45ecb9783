#include "job_guard.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <vector>

namespace ranks::cli {

namespace {

constexpr int32_t kRelease = 0;

bool write_record(int fd, int32_t value) {
  for (;;) {
    const ssize_t n = ::write(fd, &value, sizeof value);
    if (n == static_cast<ssize_t>(sizeof value)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;  // writes of 4 bytes to a pipe are atomic: none of it went
  }
}

// The guard's life: groups to kill until the launcher releases it or is gone.
[[noreturn]] void guard(int from_launcher) {
  std::vector<pid_t> groups;
  for (;;) {
    int32_t record = 0;
    const ssize_t n = ::read(from_launcher, &record, sizeof record);
    if (n < 0 && errno == EINTR) continue;
    if (n == static_cast<ssize_t>(sizeof record) && record == kRelease) ::_exit(0);
    if (n == static_cast<ssize_t>(sizeof record) && record > 0) {
      groups.push_back(static_cast<pid_t>(record));
      continue;
    }
    break;  // end of file (or a torn record): the launcher is gone
  }
  for (pid_t group : groups) ::kill(-group, SIGKILL);
  ::_exit(0);
}

}  // namespace

JobGuard::JobGuard() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  // The signals the launcher forwards wait, blocked, until the guard has put back the default
  // actions and then ignored them: it must outlive a Ctrl-C that the launcher handles.
  sigset_t all, previous;
  sigfillset(&all);
  ::sigprocmask(SIG_BLOCK, &all, &previous);
  const pid_t middle = ::fork();
  if (middle == 0) {
    ::setsid();
    if (::fork() != 0) ::_exit(0);
    for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(sig, SIG_IGN);
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    // Holds nothing of the launcher's: no terminal, no pipe that a reader waits to see closed.
    const int null = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
    ::dup2(fds[0], 3);
    ::syscall(SYS_close_range, 4u, ~0u, 0u);
    guard(3);
  }
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  ::close(fds[0]);
  if (middle < 0) {
    ::close(fds[1]);
    return;
  }
  while (::waitpid(middle, nullptr, 0) < 0 && errno == EINTR) {
  }
  pipe_ = fds[1];
}

JobGuard::~JobGuard() {
  if (pipe_ >= 0) ::close(pipe_);
}

void JobGuard::watch(pid_t group) {
  if (pipe_ >= 0) write_record(pipe_, static_cast<int32_t>(group));
}

void JobGuard::release() {
  if (pipe_ < 0) return;
  write_record(pipe_, kRelease);
  ::close(pipe_);
  pipe_ = -1;
}

}  // namespace ranks::cli
