#include "ranks/launch/job_secret.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "ranks/errors.hpp"
#include "ranks/store/fd.hpp"
#include "ranks/store/wire.hpp"

namespace ranks::launch {

namespace {

[[noreturn]] void bad_file(const std::string& path, const std::string& why) {
  throw RendezvousError(fmt::format("{}={}: {}; the file must hold the job's secret and be "
                                    "readable by its owner only (chmod 600)",
                                    kStoreTokenFileVariable, path, why));
}

std::string read_secret_file(const std::string& path) {
  // O_NOFOLLOW: a link could point anyone's file in; fstat on what was opened, not on the name.
  store::Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) bad_file(path, std::strerror(errno));
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) bad_file(path, std::strerror(errno));
  if (!S_ISREG(info.st_mode)) bad_file(path, "it is not a regular file");
  if (info.st_uid != ::geteuid()) bad_file(path, "it belongs to another user");
  if ((info.st_mode & 077) != 0) {
    bad_file(path, fmt::format("its mode is {:04o}: others may read it", info.st_mode & 07777));
  }
  std::string secret;
  char buffer[512];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) bad_file(path, std::strerror(errno));
    if (n == 0) break;
    secret.append(buffer, static_cast<size_t>(n));
    if (secret.size() > store::wire::kMaxTokenBytes + 1) break;
  }
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty()) bad_file(path, "it is empty");
  if (secret.size() > store::wire::kMaxTokenBytes) {
    bad_file(path, fmt::format("the secret is longer than {} bytes", store::wire::kMaxTokenBytes));
  }
  return secret;
}

}  // namespace

std::optional<std::string> job_secret(const Env& env) {
  if (auto token = env.get(kStoreTokenVariable); token && !token->empty()) {
    if (token->size() > store::wire::kMaxTokenBytes) {
      throw RendezvousError(fmt::format("{} is longer than {} bytes", kStoreTokenVariable,
                                        store::wire::kMaxTokenBytes));
    }
    return token;
  }
  if (auto path = env.get(kStoreTokenFileVariable); path && !path->empty()) {
    return read_secret_file(*path);
  }
  return std::nullopt;
}

std::string new_job_secret() {
  std::array<unsigned char, 32> random{};
  size_t got = 0;
  while (got < random.size()) {
    const ssize_t n = ::getrandom(random.data() + got, random.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw RendezvousError(fmt::format("cannot draw a job secret: {}", std::strerror(errno)));
    }
    got += static_cast<size_t>(n);
  }
  std::string hex;
  hex.reserve(2 * random.size());
  for (unsigned char byte : random) hex += fmt::format("{:02x}", byte);
  return hex;
}

namespace {

bool exists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

}  // namespace

std::string make_job_secret_file(const std::string& path) {
  if (!exists(path)) {
    // Written whole under a name of its own, then linked in: a reader sees all of it or nothing,
    // and a file someone else linked in first is never overwritten.
    std::string draft = path + ".XXXXXX";
    store::Fd fd(::mkstemp(draft.data()));  // mode 0600
    if (!fd) bad_file(path, fmt::format("cannot create it: {}", std::strerror(errno)));
    const std::string text = new_job_secret() + "\n";
    const bool written =
        ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
        ::fsync(fd.get()) == 0;
    const int error = errno;
    const bool linked = written && (::link(draft.c_str(), path.c_str()) == 0 || errno == EEXIST);
    const int link_error = errno;
    ::unlink(draft.c_str());
    if (!written) bad_file(path, fmt::format("cannot write it: {}", std::strerror(error)));
    if (!linked) bad_file(path, fmt::format("cannot create it: {}", std::strerror(link_error)));
  }
  return read_secret_file(path);
}

std::string await_job_secret_file(const std::string& path, std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (!exists(path)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      throw RendezvousError(fmt::format(
          "{}={}: the file did not appear within {} s; node 0's launcher writes the job's "
          "secret there, so the path must name the same file on every node (a shared directory)",
          kStoreTokenFileVariable, path,
          std::chrono::duration_cast<std::chrono::seconds>(within).count()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a file has no wait to poll
  }
  return read_secret_file(path);
}

}  // namespace ranks::launch
