#include "ranks/launch/job_secret.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

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

}  // namespace ranks::launch
