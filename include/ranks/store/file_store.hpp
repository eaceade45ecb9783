#pragma once
// A store in one file that every rank can open: a shared directory (NFS included) is all the
// ranks need to share. The format is in store/file_log.hpp.
//
// Stale files. A file outlives a job that crashes, and a new job that opened it would read the
// old job's keys. The file's first record holds the creating job's world size and token, and
// every FileStore that opens it appends a join record. Opening fails with RendezvousError when
//   - the world size differs from this store's,
//   - the token differs (pass a per-job token, e.g. the scheduler's job id, to catch a file
//     from any earlier job), or
//   - world_size stores have already joined, so this one would be one too many.
// When the last of world_size stores closes, it deletes the file, so a job that ends normally
// leaves nothing behind. World size -1 means "unknown": no counting and no deletion. Each rank
// should open one FileStore per file (use PrefixStore for namespaces), or the count is off.

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "ranks/store.hpp"
#include "ranks/store/defaults.hpp"
#include "ranks/store/fd.hpp"
#include "ranks/store/file_log.hpp"
#include "ranks/store/key_count.hpp"

namespace ranks {

class FileStore final : public Store, public KeyCountByPrefix {
 public:
  // Opens or creates path. world_size: how many FileStores the job opens on it (>= 1), or -1.
  // get() waits at most timeout; so do the file lock and the checks above.
  FileStore(std::string path, int world_size,
            std::chrono::milliseconds timeout = kDefaultStoreTimeout, std::string token = {});
  // Appends a leave record; the last store of the job deletes the file.
  ~FileStore() override;
  FileStore(const FileStore&) = delete;
  FileStore& operator=(const FileStore&) = delete;

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  // Polls the file with a short backoff (no inotify: it does not work on NFS).
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::vector<uint8_t> compare_set(const std::string& key, const std::vector<uint8_t>& expected,
                                   const std::vector<uint8_t>& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  int64_t num_keys_with_prefix(const std::string& prefix) override;

  const std::string& path() const { return path_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  // Opens the file and joins it; false when it was deleted under us (open again).
  bool open_and_join(std::chrono::steady_clock::time_point deadline);
  void check_not_stale() const;
  // With the file locked: replays what other processes appended since the last call.
  void catch_up();
  // With the file locked exclusively and caught up: appends record and replays it.
  void append(const store::Bytes& record);
  // Runs f on the caught-up state with the file locked.
  template <class F>
  auto locked(bool exclusive, std::chrono::steady_clock::time_point deadline, F&& f);
  // Polls until every key is present or timeout passes; copies keys[0]'s value to first_value
  // (when given) under the same lock that saw it present.
  void wait_for(const std::vector<std::string>& keys, std::chrono::milliseconds timeout,
                store::Bytes* first_value);

  const std::string path_;
  const int world_size_;
  const std::chrono::milliseconds timeout_;
  const std::string token_;
  const std::string name_;  // "file store '<path>'", the start of every message
  const std::string who_;   // "host pid N"
  store::Fd fd_;
  std::shared_ptr<std::mutex> file_mutex_;
  store::FileLog log_;
};

}  // namespace ranks
