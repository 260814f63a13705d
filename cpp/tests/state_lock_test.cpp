#include "mssqlcdc/state_lock.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <chrono>
#include <string>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/generation.hpp"
#include "temp_dir.hpp"

namespace mssqlcdc::checkpoint {
namespace {

using std::chrono::milliseconds;
using testing::read_file;
using testing::TempDir;
using testing::write_file;

std::int64_t now_ms() {
  return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string this_host() {
  char buf[256] = {};
  (void)::gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string holder(std::int64_t pid, const std::string& host, std::int64_t at_ms) {
  return "{\"pid\":" + std::to_string(pid) + ",\"host\":\"" + host + "\",\"at_ms\":" + std::to_string(at_ms) +
         ",\"token\":\"0123456789abcdef\"}\n";
}

// The pid of a process that has exited and been reaped: certainly not running.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

const LockTiming kShort{milliseconds{300}, milliseconds{60'000}};

TEST(StateLock, IsRemovedWhenItsHolderEnds) {
  TempDir dir;
  {
    const StateLock lock = StateLock::acquire(dir.path() / "ckpt", kShort);
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "ckpt" / kLockFileName));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "ckpt" / kLockFileName));
}

TEST(StateLock, WaitsForALiveHolderThenFailsNamingTheFileAndTheHolder) {
  TempDir dir;
  const std::string live = holder(::getpid(), this_host(), now_ms());
  write_file(dir.path() / kLockFileName, live);
  const auto started = std::chrono::steady_clock::now();
  try {
    (void)StateLock::acquire(dir.path(), kShort);
    FAIL() << "took a lock a live run holds";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::State);
    const std::string m = e.what();
    EXPECT_NE(m.find((dir.path() / kLockFileName).string()), std::string::npos) << m;
    EXPECT_NE(m.find("pid " + std::to_string(::getpid()) + " on host " + this_host()), std::string::npos) << m;
    EXPECT_NE(m.find("Run one job per stream"), std::string::npos) << m;
  }
  EXPECT_GE(std::chrono::steady_clock::now() - started, milliseconds{300});
  EXPECT_EQ(read_file(dir.path() / kLockFileName), live);  // a live holder's lock is never removed
}

TEST(StateLock, TakesOverALockOlderThanTheAgeLimit) {
  TempDir dir;
  write_file(dir.path() / kLockFileName, holder(::getpid(), "another-host", now_ms() - 61'000));
  {
    const StateLock lock = StateLock::acquire(dir.path(), kShort);
    EXPECT_EQ(read_file(dir.path() / kLockFileName).find("another-host"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / kLockFileName));
}

TEST(StateLock, TakesOverAtOnceALockOfAProcessOfThisHostThatIsGone) {
  TempDir dir;
  write_file(dir.path() / kLockFileName, holder(dead_pid(), this_host(), now_ms()));
  const StateLock lock = StateLock::acquire(dir.path(), LockTiming{milliseconds{0}, milliseconds{60'000}});
  EXPECT_NE(read_file(dir.path() / kLockFileName).find(std::to_string(::getpid())), std::string::npos);
}

TEST(StateLock, WaitsOutAnEmptyLockFileOfAHolderThatCrashedBeforeWritingIt) {
  TempDir dir;
  write_file(dir.path() / kLockFileName, "");
  EXPECT_THROW((void)StateLock::acquire(dir.path(), kShort), Error);  // fresh: it may be writing
  const StateLock lock = StateLock::acquire(dir.path(), LockTiming{milliseconds{300}, milliseconds{0}});
  EXPECT_NE(read_file(dir.path() / kLockFileName).find(std::to_string(::getpid())), std::string::npos);
}

TEST(StateLock, AStateWriteWaitsForTheLockAndLeavesTheFileAsItWas) {
  TempDir dir;
  write_file(dir.path() / kLockFileName, holder(::getpid(), this_host(), now_ms()));
  EXPECT_THROW((void)replace_state(dir.path(), State{}, State{}, kShort), Error);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / kStateFileName));
}

}  // namespace
}  // namespace mssqlcdc::checkpoint
