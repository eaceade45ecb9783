#include "ranks/store/file_store.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <thread>

#include "ranks/errors.hpp"
#include "ranks/store/deadline.hpp"
#include "ranks/store/file_lock.hpp"
#include "ranks/store/messages.hpp"
#include "ranks/store/socket.hpp"

namespace ranks {

namespace {

using store::Clock;

constexpr auto kFirstPoll = std::chrono::milliseconds(1);
constexpr auto kMaxPoll = std::chrono::milliseconds(50);

std::string this_process() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return fmt::format("{} pid {}", host, ::getpid());
}

std::string utc_time(int64_t unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The file holds the job's token and every rank's address: a file another user made (in a shared
// directory, before this job) would hand them to that user, and one that others may read or write
// hands them to everyone. A store joins only a regular file of this user's that no one else can
// open.
void refuse_if_not_private(const struct stat& file, const std::string& name) {
  if (!S_ISREG(file.st_mode)) {
    throw RendezvousError(fmt::format(
        "{}: the path is not a regular file; give the job a path for a file of its own", name));
  }
  if (file.st_uid != ::geteuid()) {
    throw RendezvousError(fmt::format(
        "{}: the file belongs to user id {}, not to this job's user ({}): someone else made it "
        "(it could read the job's token and keys, or feed it its own); give the job a path in a "
        "directory only you can write",
        name, file.st_uid, ::geteuid()));
  }
  if ((file.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    throw RendezvousError(fmt::format(
        "{}: others may {} the file (mode {:04o}): it holds the job's token and every rank's "
        "address; make it 0600 (chmod 600) or delete it and let the job create it",
        name, (file.st_mode & (S_IWGRP | S_IWOTH)) != 0 ? "write" : "read",
        file.st_mode & 07777));
  }
}

}  // namespace

FileStore::FileStore(std::string path, int world_size, std::chrono::milliseconds timeout,
                     std::string token)
    : path_(std::move(path)),
      world_size_(world_size),
      timeout_(timeout),
      token_(std::move(token)),
      name_(fmt::format("file store '{}'", path_)),
      who_(this_process()) {
  if (path_.empty()) throw InvalidArgument("file store: the path is empty");
  if (world_size_ == 0 || world_size_ < -1) {
    throw InvalidArgument(fmt::format(
        "{}: world size {} is invalid; give the number of ranks (>= 1), or -1 if unknown", name_,
        world_size_));
  }
  if (timeout_.count() <= 0) {
    throw InvalidArgument(
        fmt::format("{}: the timeout is {} ms; it must be positive", name_, timeout_.count()));
  }
  const auto deadline = store::deadline_after(timeout_);
  while (!open_and_join(deadline)) {
    if (Clock::now() >= deadline) {
      throw Timeout(
          fmt::format("{}: the file kept being deleted while this store opened it "
                      "(the last store of an earlier job removing it?)",
                      name_));
    }
  }
}

bool FileStore::open_and_join(Clock::time_point deadline) {
  // 0600: the keys are the job's (the rendezvous, every rank's address); O_NOFOLLOW: a link
  // planted at the path could point the job at a file someone else controls.
  store::Fd fd(::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd && errno == ELOOP) {
    throw RendezvousError(fmt::format(
        "{}: the path is a symbolic link; a file store opens only a file of its own", name_));
  }
  if (!fd) {
    throw RendezvousError(
        fmt::format("{}: cannot open the file: {}; the directory must exist and "
                    "be writable by every rank",
                    name_, store::errno_text(errno)));
  }
  struct stat opened {};
  ::fstat(fd.get(), &opened);
  refuse_if_not_private(opened, name_);
  file_mutex_ = store::file_mutex(opened.st_dev, opened.st_ino);
  fd_ = std::move(fd);
  log_ = store::FileLog();
  store::FileLock lock(fd_.get(), *file_mutex_, true, deadline, name_);
  // The last store of an earlier job may have deleted the file between open() and the lock;
  // joining the deleted file would leave this job talking to a file nobody else can open.
  struct stat named {};
  if (::stat(path_.c_str(), &named) != 0 || named.st_ino != opened.st_ino ||
      named.st_dev != opened.st_dev) {
    lock.unlock_and_close(fd_);
    return false;
  }
  try {
    catch_up();
    if (log_.offset() == 0) {
      store::FileHeader header;
      header.world_size = world_size_;
      header.token = token_;
      header.created_ms = unix_ms_now();
      header.creator = who_;
      append(store::header_record(header));
    } else {
      check_not_stale();
    }
    append(store::join_record(who_));
  } catch (...) {
    lock.unlock_and_close(fd_);
    throw;
  }
  return true;
}

void FileStore::check_not_stale() const {
  if (!log_.header()) {
    throw RendezvousError(
        fmt::format("{}: the file is corrupt: it has no header record; delete "
                    "it and restart the job",
                    name_));
  }
  const store::FileHeader& h = *log_.header();
  const std::string origin = fmt::format("created {} by {}", utc_time(h.created_ms), h.creator);
  const std::string advice = "delete it or give this job a fresh path";
  if (h.world_size != world_size_) {
    throw RendezvousError(fmt::format(
        "{}: the file belongs to a job of world size {} ({}) and this store's world size is {}; "
        "it was probably left by an earlier job: {}",
        name_, h.world_size, origin, world_size_, advice));
  }
  if (h.token != token_) {
    throw RendezvousError(fmt::format(
        "{}: the file was made with a different job token ({}); it was left by an earlier job: "
        "{}",
        name_, origin, advice));
  }
  if (world_size_ > 0 && static_cast<int>(log_.joined().size()) >= world_size_) {
    throw RendezvousError(fmt::format(
        "{}: all {} stores of the job that made the file ({}) have already joined it, so it was "
        "left by an earlier job (or a rank opened more than one FileStore on it): {}",
        name_, world_size_, origin, advice));
  }
}

FileStore::~FileStore() {
  if (!fd_) return;
  try {
    store::FileLock lock(fd_.get(), *file_mutex_, true, store::deadline_after(timeout_), name_);
    catch_up();
    append(store::leave_record(who_));
    if (world_size_ > 0 && log_.leaves() >= world_size_ &&
        static_cast<int>(log_.joined().size()) >= world_size_) {
      ::unlink(path_.c_str());
    }
    lock.unlock_and_close(fd_);
  } catch (const std::exception& e) {
    const std::string line =
        fmt::format("ranks: could not record that a file store left: {}\n", e.what());
    std::fputs(line.c_str(), stderr);
    std::lock_guard hold(*file_mutex_);
    fd_.reset();
  }
}

void FileStore::catch_up() {
  const auto corrupt = [&](const std::string& why) {
    return RendezvousError(fmt::format(
        "{}: the file is corrupt: {}; it was not written by a ranks file store, or something "
        "else wrote to it: delete it and restart the job",
        name_, why));
  };
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) {
    throw RendezvousError(
        fmt::format("{}: cannot stat the file: {}", name_, store::errno_text(errno)));
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < log_.offset()) {
    throw corrupt(fmt::format("it shrank from {} to {} bytes", log_.offset(), size));
  }
  std::vector<uint8_t> data(size - log_.offset());
  std::size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = ::pread(fd_.get(), data.data() + got, data.size() - got,
                              static_cast<off_t>(log_.offset() + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw RendezvousError(fmt::format("{}: cannot read the file: {}", name_,
                                        n == 0 ? "it ended early" : store::errno_text(errno)));
    }
    got += static_cast<std::size_t>(n);
  }
  const uint64_t start = log_.offset();
  std::size_t used = 0;
  try {
    used = log_.replay(data);
  } catch (const store::DecodeError& e) {
    throw corrupt(e.what());
  }
  if (used < data.size()) {
    // Writers append under the exclusive lock that we hold now, so nobody is mid-write.
    throw corrupt(fmt::format("it ends in an incomplete record at byte {}", start + used));
  }
}

void FileStore::append(const store::Bytes& record) {
  const uint64_t at = log_.offset();
  std::size_t put = 0;
  while (put < record.size()) {
    const ssize_t n =
        ::pwrite(fd_.get(), record.data() + put, record.size() - put, static_cast<off_t>(at + put));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      // Leave no half record behind for the other ranks to trip over.
      [[maybe_unused]] int rc = ::ftruncate(fd_.get(), static_cast<off_t>(at));
      throw RendezvousError(
          fmt::format("{}: cannot write the file: {}", name_, store::errno_text(error)));
    }
    put += static_cast<std::size_t>(n);
  }
  log_.replay(record);
}

template <class F>
auto FileStore::locked(bool exclusive, Clock::time_point deadline, F&& f) {
  store::FileLock lock(fd_.get(), *file_mutex_, exclusive, deadline, name_);
  catch_up();
  return f();
}

void FileStore::wait_for(const std::vector<std::string>& keys, std::chrono::milliseconds timeout,
                         store::Bytes* first_value) {
  const auto deadline = store::deadline_after(timeout);
  auto pause = kFirstPoll;
  while (true) {
    const std::vector<std::string> missing = locked(false, deadline, [&] {
      std::vector<std::string> out = log_.map().missing(keys);
      if (out.empty() && first_value != nullptr) *first_value = *log_.map().find(keys[0]);
      return out;
    });
    if (missing.empty()) return;
    if (Clock::now() >= deadline) throw Timeout(store::timeout_message(name_, timeout, missing));
    std::this_thread::sleep_for(std::min(pause, store::remaining(deadline)));
    pause = std::min(pause * 2, kMaxPoll);
  }
}

void FileStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  locked(true, store::deadline_after(timeout_), [&] { append(store::set_record(key, value)); });
}

std::vector<uint8_t> FileStore::get(const std::string& key) {
  store::Bytes value;
  wait_for({key}, timeout_, &value);
  return value;
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  return locked(true, store::deadline_after(timeout_), [&] {
    const int64_t sum = log_.map().counter_after_add(name_, key, delta);
    append(store::set_record(key, store::encode_counter(sum)));
    return sum;
  });
}

std::vector<uint8_t> FileStore::compare_set(const std::string& key,
                                            const std::vector<uint8_t>& expected,
                                            const std::vector<uint8_t>& desired) {
  return locked(true, store::deadline_after(timeout_), [&] {
    store::KvMap::CompareSet outcome = log_.map().compare_set_outcome(key, expected, desired);
    if (outcome.store_desired) append(store::set_record(key, desired));
    return outcome.current;
  });
}

bool FileStore::check(const std::vector<std::string>& keys) {
  return locked(false, store::deadline_after(timeout_),
                [&] { return log_.map().missing(keys).empty(); });
}

void FileStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  store::check_wait_timeout(name_, timeout);
  wait_for(keys, timeout, nullptr);
}

bool FileStore::delete_key(const std::string& key) {
  return locked(true, store::deadline_after(timeout_), [&] {
    if (!log_.map().contains(key)) return false;
    append(store::delete_record(key));
    return true;
  });
}

int64_t FileStore::num_keys() { return num_keys_with_prefix(""); }

int64_t FileStore::num_keys_with_prefix(const std::string& prefix) {
  return locked(false, store::deadline_after(timeout_),
                [&] { return log_.map().count_prefix(prefix); });
}

}  // namespace ranks
