// The job secret's sources: RANKS_STORE_TOKEN, and RANKS_STORE_TOKEN_FILE, which must be a
// regular file of this user's that no one else may read.

#include "ranks/launch/job_secret.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ranks/errors.hpp"

namespace ranks::testing {
namespace {

namespace fs = std::filesystem;
using launch::Env;

class SecretFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ranks-secret-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text, mode_t mode) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path.string();
  }
  std::string refusal(const std::string& path) {
    try {
      launch::job_secret(Env{{"RANKS_STORE_TOKEN_FILE", path}});
    } catch (const RendezvousError& e) {
      return e.what();
    }
    return "no error";
  }
  fs::path dir_;
};

TEST(JobSecret, NoneWithoutEitherVariable) {
  EXPECT_EQ(launch::job_secret(Env{}), std::nullopt);
  EXPECT_EQ(launch::job_secret(Env{{"RANKS_STORE_TOKEN", ""}}), std::nullopt);
}

TEST(JobSecret, TheVariableWinsOverTheFile) {
  EXPECT_EQ(launch::job_secret(Env{{"RANKS_STORE_TOKEN", "s3cret"},
                                   {"RANKS_STORE_TOKEN_FILE", "/nonexistent"}}),
            "s3cret");
}

TEST_F(SecretFile, AFileOnlyItsOwnerReadsGivesItsFirstLine) {
  const std::string path = write("secret", "from-the-file\n", 0600);
  EXPECT_EQ(launch::job_secret(Env{{"RANKS_STORE_TOKEN_FILE", path}}), "from-the-file");
  ::chmod(path.c_str(), 0400);
  EXPECT_EQ(launch::job_secret(Env{{"RANKS_STORE_TOKEN_FILE", path}}), "from-the-file");
}

TEST_F(SecretFile, AFileOthersMayReadIsRefused) {
  const std::string path = write("open", "x", 0644);
  EXPECT_NE(refusal(path).find("its mode is 0644: others may read it"), std::string::npos)
      << refusal(path);
}

TEST_F(SecretFile, ALinkAMissingFileAndAnEmptyOneAreRefused) {
  const std::string target = write("target", "x", 0600);
  const fs::path link = dir_ / "link";
  fs::create_symlink(target, link);
  EXPECT_NE(refusal(link.string()), "no error");
  EXPECT_NE(refusal((dir_ / "missing").string()).find("No such file"), std::string::npos);
  EXPECT_NE(refusal(write("empty", "\n", 0600)).find("it is empty"), std::string::npos);
  EXPECT_NE(refusal(dir_.string()).find("not a regular file"), std::string::npos);
}

TEST(JobSecret, FreshSecretsAre64HexDigitsAndDiffer) {
  const std::string a = launch::new_job_secret();
  const std::string b = launch::new_job_secret();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
}

TEST_F(SecretFile, NodeZeroWritesAFreshSecretOnlyItsOwnerReadsAndTheOthersReadTheSame) {
  const std::string path = (dir_ / "job.token").string();
  const std::string made = launch::make_job_secret_file(path);
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_EQ(made.size(), 64u);
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, made);
  EXPECT_EQ(launch::await_job_secret_file(path, std::chrono::milliseconds(0)), made);
  // Nothing but the file itself is left in the directory (the draft it was written under).
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);
}

TEST_F(SecretFile, AFileThatExistsIsTheJobsAsItIsAndStillChecked) {
  const std::string path = write("given", "the-users-secret\n", 0600);
  EXPECT_EQ(launch::make_job_secret_file(path), "the-users-secret");
  const std::string open = write("open", "x", 0644);
  EXPECT_THROW(launch::make_job_secret_file(open), RendezvousError);
}

TEST_F(SecretFile, ANodeThatNeverSeesTheFileGivesUpAtItsDeadlineNamingIt) {
  const std::string path = (dir_ / "never").string();
  try {
    launch::await_job_secret_file(path, std::chrono::milliseconds(200));
    FAIL() << "no error";
  } catch (const RendezvousError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": the file did not appear within 0 s"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ranks::testing
