#pragma once
// Locking the file store's file across processes (fcntl record locks, which NFS supports) and
// across threads and stores of one process.
//
// fcntl locks belong to a process, not to a descriptor: two FileStores of one process on one
// file would not exclude each other, and closing either descriptor would silently drop the
// other's lock. So every lock also takes one mutex per file (device, inode) shared by the whole
// process, and descriptors of the file are closed only while holding it.

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <string>

#include "ranks/store/deadline.hpp"
#include "ranks/store/fd.hpp"

namespace ranks::store {

// The process-wide mutex of the file with this device and inode.
std::shared_ptr<std::mutex> file_mutex(dev_t device, ino_t inode);

// Holds the file's process mutex and an fcntl lock on the whole file until destroyed. Tries
// both with a short backoff, never past deadline (a hung process that holds the lock cannot
// hang us), and throws Timeout naming `store` then.
class FileLock {
 public:
  FileLock(int fd, std::mutex& mutex, bool exclusive, Clock::time_point deadline,
           const std::string& store);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  // Unlocks the file, then closes fd while the process mutex is still held, so that no other
  // store of this process loses its lock to the close.
  void unlock_and_close(Fd& fd);
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;  // -1 once unlocked
  std::unique_lock<std::mutex> hold_;
};

}  // namespace ranks::store
