#include "ranks/store/fd.hpp"

#include <unistd.h>

namespace ranks::store {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) reset(std::exchange(other.fd_, -1));
  return *this;
}

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

}  // namespace ranks::store
