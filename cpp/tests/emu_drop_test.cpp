// DROP TABLE, TRUNCATE TABLE and CREATE INDEX in the engine (decision 1436). SQL Server facts
// from Microsoft's documentation:
// - TRUNCATE TABLE of a table enabled for CDC is error 4711:
//   https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/database-engine-events-and-errors-4000-to-4999
// - TRUNCATE TABLE resets an identity column to its seed:
//   https://learn.microsoft.com/en-us/sql/t-sql/statements/truncate-table-transact-sql
// - a dropped CDC-enabled table's CDC metadata is removed with it:
//   https://learn.microsoft.com/en-us/sql/relational-databases/track-changes/about-change-data-capture-sql-server
// - an index name is unique per table (1913), its columns exist (1911):
//   https://learn.microsoft.com/en-us/sql/t-sql/statements/create-index-transact-sql
#include <gtest/gtest.h>

#include <string>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/catalog.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {
namespace {

int number_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.number();
  }
  return 0;
}

std::int64_t count(Engine& e, const std::string& sql) {
  auto st = e.db().prepare(sql);
  EXPECT_TRUE(st.step());
  return st.i64(0);
}

TEST(EmuDrop, TruncateOfACapturedTableIsRefusedWith4711AndKeepsItsRows) {
  TempFile f;
  auto e = empty_file(f.path());
  e->create_table("dbo.t", {{"k", "int"}, {"v", "int"}}, {"k"});
  e->enable_cdc("dbo.t", std::nullopt, std::nullopt);
  e->commit({insert("dbo.t", {{"k", I(1)}, {"v", I(2)}})}, kStart + kSecond);
  EXPECT_EQ(number_of([&] { e->truncate_table("dbo.t"); }), 4711);
  EXPECT_EQ(count(*e, "SELECT COUNT(*) FROM \"dbo.t\""), 1);
}

TEST(EmuDrop, TruncateEmptiesAnUncapturedTableAndReseedsItsIdentity) {
  TempFile f;
  auto e = empty_file(f.path());
  e->create_table("dbo.t", {{"k", "int identity(10, 5) NOT NULL"}, {"v", "int"}}, {"k"});
  e->commit({insert("dbo.t", {{"v", I(1)}}), insert("dbo.t", {{"v", I(2)}})}, kStart + kSecond);
  e->truncate_table("dbo.t");
  EXPECT_EQ(count(*e, "SELECT COUNT(*) FROM \"dbo.t\""), 0);
  e->commit({insert("dbo.t", {{"v", I(3)}})}, kStart + 2 * kSecond);
  EXPECT_EQ(count(*e, "SELECT k FROM \"dbo.t\""), 10);
}

TEST(EmuDrop, DropTableRemovesItsCaptureInstancesAndFreesTheName) {
  TempFile f;
  auto e = empty_file(f.path());
  e->create_table("dbo.t", {{"k", "int"}, {"v", "int NOT NULL"}}, {"k"});
  e->enable_cdc("dbo.t", std::nullopt, std::nullopt);
  e->create_index("dbo.t", "ix_v", {"v"}, true);
  e->drop_table("dbo.t");
  EXPECT_FALSE(find_table(e->db(), "dbo.t"));
  EXPECT_EQ(count(*e, "SELECT COUNT(*) FROM \"cdc.change_tables\""), 0);
  EXPECT_EQ(count(*e, "SELECT COUNT(*) FROM emu_meta WHERE key LIKE 'index.%' OR key LIKE 'not_null.%'"), 0);
  e->create_table("dbo.t", {{"k", "int"}}, {"k"});
  EXPECT_TRUE(find_table(e->db(), "dbo.t"));
}

TEST(EmuDrop, CreateIndexRecordsTheIndexAndRefusesADuplicateNameOrAMissingColumn) {
  TempFile f;
  auto e = empty_file(f.path());
  e->create_table("dbo.t", {{"k", "int"}, {"v", "int"}, {"w", "int"}}, {"k"});
  e->create_index("dbo.t", "ix_vw", {"v", "W"}, false);
  const Table t = load_table(e->db(), "dbo.t");
  const auto ix = find_index(e->db(), t, "IX_VW");
  ASSERT_TRUE(ix);
  EXPECT_FALSE(ix->unique);
  EXPECT_EQ(ix->columns, (std::vector<std::string>{"v", "w"}));
  const auto pk = find_index(e->db(), t, "PK_t");
  ASSERT_TRUE(pk);
  EXPECT_TRUE(pk->primary_key);
  EXPECT_EQ(number_of([&] { e->create_index("dbo.t", "ix_vw", {"w"}, true); }), 1913);
  EXPECT_EQ(number_of([&] { e->create_index("dbo.t", "ix_x", {"x"}, true); }), 1911);
  EXPECT_FALSE(find_index(e->db(), t, "ix_none"));
}

}  // namespace
}  // namespace mssqlcdc::emu::test
