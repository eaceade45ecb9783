// FileStore beyond the shared contract: several processes on one file, files left by an
// earlier job, corrupt files, a lock held by a hung process, and cleanup by the last store.
// Children are forked from this single-threaded test process and report through exit codes,
// pipes and the store itself.

#include <fcntl.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<uint8_t>;

Bytes bytes(std::string_view s) { return {s.begin(), s.end()}; }

class FileStoreTest : public ::testing::Test {
 protected:
  FileStoreTest() {
    std::string pattern = ::testing::TempDir() + "store_file_XXXXXX";
    dir_ = ::mkdtemp(pattern.data());
  }
  ~FileStoreTest() override { std::filesystem::remove_all(dir_); }

  std::string path() const { return (dir_ / "store").string(); }

  // Runs body in a child process; the child exits 0 when body returns, 1 when it throws.
  static pid_t spawn(const std::function<void()>& body) {
    const pid_t pid = ::fork();
    if (pid != 0) return pid;
    int code = 0;
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      code = 1;
    }
    ::_exit(code);
  }
  static void expect_success(pid_t pid) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  // Stores of an earlier job that died without closing them: opened in a child that exits
  // without running destructors.
  void leave_behind(int stores, int world_size, const std::string& token = {}) {
    expect_success(spawn([&] {
      for (int i = 0; i < stores; ++i) {
        auto* store = new FileStore(path(), world_size, 5s, token);
        store->set("old-key", bytes("from the earlier job"));
      }
      ::_exit(0);
    }));
  }
  std::string open_error(int world_size, const std::string& token = {}) {
    try {
      FileStore store(path(), world_size, 1s, token);
    } catch (const RendezvousError& e) {
      return e.what();
    }
    ADD_FAILURE() << "the file opened without an error";
    return {};
  }

 private:
  std::filesystem::path dir_;
};

TEST_F(FileStoreTest, ProcessesAddingToOneCounterGetAnExactTotal) {
  constexpr int kChildren = 4;
  constexpr int kAdds = 200;
  std::vector<pid_t> children;
  for (int i = 0; i < kChildren; ++i) {
    children.push_back(spawn([&] {
      FileStore store(path(), kChildren + 1, 30s);
      for (int a = 0; a < kAdds; ++a) store.add("counter", 1);
    }));
  }
  {
    FileStore store(path(), kChildren + 1, 30s);
    for (int a = 0; a < kAdds; ++a) store.add("counter", 1);
    for (pid_t pid : children) expect_success(pid);
    EXPECT_EQ(store.get("counter"), bytes(std::to_string((kChildren + 1) * kAdds)));
  }
  // Every store of the job has closed: the last one removed the file.
  EXPECT_FALSE(std::filesystem::exists(path()));
}

TEST_F(FileStoreTest, AGetInAnotherProcessWaitsForALaterSet) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = spawn([&] {
    FileStore store(path(), 2, 30s);
    store.add("child-started", 1);
    const Bytes value = store.get("go");
    if (::write(fds[1], value.data(), value.size()) != static_cast<ssize_t>(value.size())) {
      throw std::runtime_error("pipe write failed");
    }
  });
  ::close(fds[1]);
  FileStore store(path(), 2, 30s);
  store.wait({"child-started"}, 30s);
  store.set("go", bytes("now"));
  char got[8] = {};
  EXPECT_EQ(::read(fds[0], got, sizeof got), 3);
  EXPECT_EQ(std::string(got), "now");
  ::close(fds[0]);
  expect_success(child);
}

TEST_F(FileStoreTest, AFileAllOfWhoseStoresJoinedIsStale) {
  leave_behind(2, 2);
  const std::string error = open_error(2);
  EXPECT_TRUE(Contains(error, path()));
  EXPECT_TRUE(Contains(error, "all 2 stores"));
  EXPECT_TRUE(Contains(error, "earlier job"));
  EXPECT_TRUE(Contains(error, "delete it"));
}

TEST_F(FileStoreTest, AFileOfAnotherWorldSizeIsStale) {
  leave_behind(1, 4);
  const std::string error = open_error(2);
  EXPECT_TRUE(Contains(error, "world size 4"));
  EXPECT_TRUE(Contains(error, "this store's world size is 2"));
}

TEST_F(FileStoreTest, AFileOfAnotherJobTokenIsStale) {
  leave_behind(1, 2, "job-41");
  const std::string error = open_error(2, "job-42");
  EXPECT_TRUE(Contains(error, "different job token"));
  // The same token is the same job: its second store joins.
  FileStore second(path(), 2, 1s, "job-41");
  EXPECT_EQ(second.get("old-key"), bytes("from the earlier job"));
}

TEST_F(FileStoreTest, AJobThatClosesEveryStoreLeavesNoFileAndTheNextJobStartsFresh) {
  {
    FileStore a(path(), 2, 1s);
    FileStore b(path(), 2, 1s);
    a.set("k", bytes("job 1"));
    EXPECT_EQ(b.get("k"), bytes("job 1"));
  }
  EXPECT_FALSE(std::filesystem::exists(path()));
  FileStore next(path(), 2, 1s);
  EXPECT_FALSE(next.check({"k"}));
}

TEST_F(FileStoreTest, TheFileIsItsOwnersAloneAndNeverALink) {
  {
    FileStore store(path(), 2, 5s);
    struct stat info {};
    ASSERT_EQ(::stat(path().c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u);
  }
  const std::filesystem::path folder = std::filesystem::path(path()).parent_path();
  const std::string target = (folder / "elsewhere").string();
  std::ofstream(target) << "someone else's";
  const std::filesystem::path link = folder / "planted";
  std::filesystem::create_symlink(target, link);
  try {
    FileStore store(link.string(), 2, 1s);
    ADD_FAILURE() << "a file store opened a symbolic link";
  } catch (const RendezvousError& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
}

// A file another user made, or one others may open, would give them the job's token and every
// rank's address (or let them write keys): refused by name before anything is read or written.
TEST_F(FileStoreTest, AFileOfAnotherUserOrOpenToOthersIsRefused) {
  auto refused = [&] {
    const auto size = std::filesystem::file_size(path());
    const std::string error = open_error(2);
    EXPECT_EQ(std::filesystem::file_size(path()), size) << "the store wrote into the file";
    return error;
  };
  std::ofstream(path()).flush();
  ::chmod(path().c_str(), 0666);
  EXPECT_TRUE(Contains(refused(), "others may write the file (mode 0666)"));
  ::chmod(path().c_str(), 0644);
  EXPECT_TRUE(Contains(refused(), "others may read the file (mode 0644)"));
  ::chmod(path().c_str(), 0600);
  if (::geteuid() == 0) {  // only root can give a file away; as another user the test has no peer
    ASSERT_EQ(::chown(path().c_str(), 65534, 65534), 0);
    const std::string error = refused();
    EXPECT_TRUE(Contains(error, "belongs to user id 65534")) << error;
    EXPECT_TRUE(Contains(error, path())) << error;
  }
  std::filesystem::remove(path());
  ::mkfifo(path().c_str(), 0600);
  EXPECT_TRUE(Contains(open_error(2), "not a regular file"));
}

TEST_F(FileStoreTest, AFileThatIsNotAStoreIsReportedAsCorrupt) {
  std::ofstream(path()) << "hello, world\n";
  ::chmod(path().c_str(), 0600);
  const std::string error = open_error(2);
  EXPECT_TRUE(Contains(error, "corrupt"));
  EXPECT_TRUE(Contains(error, "magic"));
  EXPECT_TRUE(Contains(error, path()));
}

TEST_F(FileStoreTest, GarbageAppendedToALiveFileIsReportedWithItsOffset) {
  FileStore store(path(), -1, 1s);
  store.set("k", bytes("v"));
  const auto size = std::filesystem::file_size(path());
  std::ofstream(path(), std::ios::app) << "garbage bytes here";
  try {
    store.check({"k"});
    FAIL() << "a corrupt file was read without an error";
  } catch (const RendezvousError& e) {
    EXPECT_TRUE(Contains(e.what(), "corrupt"));
    EXPECT_TRUE(Contains(e.what(), "byte " + std::to_string(size)));
  }
}

TEST_F(FileStoreTest, ARecordCutShortIsReportedAsCorrupt) {
  FileStore store(path(), -1, 1s);
  store.set("k", bytes("v"));
  // The first 6 bytes of a record: length and half a checksum.
  std::ofstream(path(), std::ios::app) << std::string("\0\0\0\x10\x01\x02", 6);
  try {
    store.get("k");
    FAIL() << "a truncated record was read without an error";
  } catch (const RendezvousError& e) {
    EXPECT_TRUE(Contains(e.what(), "incomplete record"));
  }
}

TEST_F(FileStoreTest, AFlippedByteFailsTheChecksum) {
  {
    FileStore store(path(), -1, 1s);
    store.set("key", bytes("value"));
  }
  std::fstream file(path(), std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(-1, std::ios::end);
  file.put('X');
  file.close();
  const std::string error = open_error(-1);
  EXPECT_TRUE(Contains(error, "checksum"));
}

TEST_F(FileStoreTest, ALockHeldByAHungProcessEndsInATimeout) {
  FileStore store(path(), -1, 200ms);
  int locked[2];
  int release[2];
  ASSERT_EQ(::pipe(locked), 0);
  ASSERT_EQ(::pipe(release), 0);
  const pid_t child = spawn([&] {
    const int fd = ::open(path().c_str(), O_RDWR);
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    if (fd < 0 || ::fcntl(fd, F_SETLKW, &lock) != 0) throw std::runtime_error("lock failed");
    char c = 'L';
    if (::write(locked[1], &c, 1) != 1 || ::read(release[0], &c, 1) != 1) {
      throw std::runtime_error("pipe failed");
    }
  });
  char c = 0;
  ASSERT_EQ(::read(locked[0], &c, 1), 1);
  try {
    store.set("k", bytes("v"));
    ADD_FAILURE() << "set() went through a lock held by another process";
  } catch (const Timeout& e) {
    EXPECT_TRUE(Contains(e.what(), "could not lock the file"));
    EXPECT_TRUE(Contains(e.what(), "another process"));
  }
  ASSERT_EQ(::write(release[1], &c, 1), 1);
  expect_success(child);
  store.set("k", bytes("v"));
  EXPECT_EQ(store.get("k"), bytes("v"));
  for (int fd : {locked[0], locked[1], release[0], release[1]}) ::close(fd);
}

TEST_F(FileStoreTest, BadArgumentsAreInvalidArgument) {
  EXPECT_THROW(FileStore("", 2), InvalidArgument);
  EXPECT_THROW(FileStore(path(), 0), InvalidArgument);
  EXPECT_THROW(FileStore(path(), -2), InvalidArgument);
  EXPECT_THROW(FileStore(path(), 2, 0ms), InvalidArgument);
  try {
    FileStore(path() + "/no/such/dir", 2, 1s);
    FAIL() << "a store opened in a missing directory";
  } catch (const RendezvousError& e) {
    EXPECT_TRUE(Contains(e.what(), "cannot open"));
  }
}

}  // namespace
}  // namespace ranks::testing
