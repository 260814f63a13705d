// Read connections come from a pool of idle ones per file (format.hpp pooled_file): a file
// replaced at the same path is never read through a connection to the old one, and readers
// opened one after another reuse one connection.
#include <gtest/gtest.h>

#include <filesystem>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/emu/reader.hpp"

namespace mssqlcdc::emu::test {
namespace {

std::size_t open_descriptors() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

void remove_file(const std::filesystem::path& p) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p.string() + suffix);
}

TEST(EmuConnectionPool, AFileReplacedAtItsPathIsReadAfreshNotThroughTheOldFilesConnection) {
  TempFile f;
  {
    auto e = empty_file(f.path());
    e->create_table("dbo.before", {{"id", "int"}}, {"id"});
  }
  {
    Reader r(f.path());
    EXPECT_EQ(r.tables(), (std::vector<std::string>{"dbo.before"}));
  }  // its connection is idle in the pool now
  remove_file(f.path());
  {
    auto e = empty_file(f.path());
    e->create_table("dbo.after", {{"id", "int"}}, {"id"});
  }
  Reader r(f.path());
  EXPECT_EQ(r.tables(), (std::vector<std::string>{"dbo.after"}));
}

TEST(EmuConnectionPool, ReadersOpenedOneAfterAnotherReuseConnectionsInsteadOfOpeningMore) {
  TempFile f;
  {
    auto e = empty_file(f.path());
    e->create_table("dbo.orders", {{"id", "int"}}, {"id"});
  }
  { Reader warm(f.path()); }
  const std::size_t before = open_descriptors();
  for (int i = 0; i < 50; ++i) {
    Reader r(f.path());
    EXPECT_EQ(r.tables().size(), 1u);
  }
  EXPECT_LE(open_descriptors(), before + 1);
}

}  // namespace
}  // namespace mssqlcdc::emu::test
