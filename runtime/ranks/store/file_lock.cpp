#include "ranks/store/file_lock.hpp"

#include <fcntl.h>
#include <fmt/format.h>

#include <cerrno>
#include <map>
#include <thread>
#include <utility>

#include "ranks/errors.hpp"
#include "ranks/store/socket.hpp"

namespace ranks::store {

namespace {
constexpr auto kFirstPause = std::chrono::microseconds(200);
constexpr auto kMaxPause = std::chrono::milliseconds(20);

int set_lock(int fd, short type) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = 0;
  lock.l_len = 0;  // the whole file, however long it grows
  return ::fcntl(fd, F_SETLK, &lock);
}
}  // namespace

std::shared_ptr<std::mutex> file_mutex(dev_t device, ino_t inode) {
  static std::mutex registry_mutex;
  static std::map<std::pair<dev_t, ino_t>, std::weak_ptr<std::mutex>> registry;
  std::lock_guard lock(registry_mutex);
  std::weak_ptr<std::mutex>& slot = registry[{device, inode}];
  std::shared_ptr<std::mutex> mutex = slot.lock();
  if (!mutex) {
    mutex = std::make_shared<std::mutex>();
    slot = mutex;
  }
  // Forget files nobody has open any more, so the map does not grow with every job.
  std::erase_if(registry, [](const auto& entry) { return entry.second.expired(); });
  return mutex;
}

FileLock::FileLock(int fd, std::mutex& mutex, bool exclusive, Clock::time_point deadline,
                   const std::string& store)
    : fd_(fd), hold_(mutex, std::defer_lock) {
  const auto start = Clock::now();
  auto pause = std::chrono::duration_cast<std::chrono::nanoseconds>(kFirstPause);
  // Sleeps before the next try; throws once the deadline has passed.
  const auto back_off = [&](const char* holder) {
    if (Clock::now() >= deadline) {
      throw Timeout(fmt::format(
          "{}: could not lock the file within {} ms; {} holds it (a hung or stopped process?)",
          store,
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count(),
          holder));
    }
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(pause, deadline - Clock::now()));
    pause = std::min<std::chrono::nanoseconds>(pause * 2, kMaxPause);
  };
  while (!hold_.try_lock()) back_off("another thread of this process");
  while (set_lock(fd_, exclusive ? F_WRLCK : F_RDLCK) != 0) {
    if (errno == EINTR) continue;
    if (errno != EACCES && errno != EAGAIN) {
      throw RendezvousError(fmt::format("{}: cannot lock the file: {}{}", store, errno_text(errno),
                                        errno == ENOLCK ? " (is the file system mounted without "
                                                          "lock support, e.g. NFS with nolock?)"
                                                        : ""));
    }
    back_off("another process");
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) set_lock(fd_, F_UNLCK);
}

void FileLock::unlock_and_close(Fd& fd) {
  if (fd_ >= 0) set_lock(fd_, F_UNLCK);
  fd_ = -1;
  fd.reset();
}

}  // namespace ranks::store
