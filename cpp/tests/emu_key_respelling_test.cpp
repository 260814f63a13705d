// An update that respells a character key: the new value equals the old one under the column's
// collation but is stored as written. SQL Server facts from Microsoft's documentation:
// - 'n' and 'N' are equal under a _CI collation, and trailing spaces never count:
//   https://learn.microsoft.com/en-us/sql/relational-databases/collations/collation-and-unicode-support
//   https://learn.microsoft.com/en-us/sql/t-sql/language-elements/string-comparison-assignment
// - an update of a column in a unique constraint is a deferred update, a DELETE/INSERT pair in
//   the log:
//   https://learn.microsoft.com/en-us/troubleshoot/sql/database-engine/replication/update-statements-replicated-as-delete-insert
// - the change table's __$operation: 1 delete, 2 insert; all changes of one transaction share
//   its __$start_lsn:
//   https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/cdc-capture-instance-ct-transact-sql
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {
namespace {

struct KeyRow {
  Lsn start;
  Operation op;
  int command_id;
  std::string k;
  std::string v;
};

// dbo.t (k <type> PRIMARY KEY, v nvarchar(20)) under instance dbo_t.
std::unique_ptr<Engine> keyed_file(const std::filesystem::path& p, const std::string& type) {
  auto e = empty_file(p);
  e->create_table("dbo.t", {{"k", type}, {"v", "nvarchar(20)"}}, {"k"});
  e->enable_cdc("dbo.t", std::nullopt, std::nullopt);
  return e;
}

std::vector<KeyRow> change_rows(Engine& e) {
  std::vector<KeyRow> out;
  auto st = e.db().prepare(
      "SELECT \"__$start_lsn\", \"__$operation\", \"__$command_id\", k, v FROM \"cdc.dbo_t_CT\" "
      "ORDER BY 1, 3, 2");
  while (st.step())
    out.push_back({lsn_from_blob(st.blob(0)), static_cast<Operation>(st.i64(1)), static_cast<int>(st.i64(2)),
                   st.text(3), st.text(4)});
  return out;
}

std::vector<std::string> stored_keys(Engine& e) {
  std::vector<std::string> out;
  auto st = e.db().prepare("SELECT k FROM \"dbo.t\" ORDER BY k");
  while (st.step()) out.push_back(st.text(0));
  return out;
}

TEST(EmuKeyRespelling, ACaseInsensitiveKeyUpdatedToAnotherCaseIsStoredAsWrittenAsADeleteAndAnInsert) {
  TempFile f;
  auto e = keyed_file(f.path(), "nvarchar(20)");
  e->commit({insert("dbo.t", {{"k", S("n")}, {"v", S("old")}})}, kStart + kSecond);
  const Lsn c =
      e->commit({key_update("dbo.t", {{"k", S("N")}, {"v", S("cased")}}, {{"k", S("n")}})}, kStart + 2 * kSecond);
  EXPECT_EQ(stored_keys(*e), std::vector<std::string>{"N"});
  const auto rows = change_rows(*e);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].op, Operation::Delete);
  EXPECT_EQ(rows[1].k, "n");
  EXPECT_EQ(rows[1].v, "old");
  EXPECT_EQ(rows[2].op, Operation::Insert);
  EXPECT_EQ(rows[2].k, "N");
  EXPECT_EQ(rows[2].v, "cased");
  EXPECT_EQ(rows[1].start, c);
  EXPECT_EQ(rows[2].start, c);
  EXPECT_LT(rows[1].command_id, rows[2].command_id);
}

TEST(EmuKeyRespelling, AKeyUpdatedWithoutItsTrailingSpacesIsStoredWithoutThem) {
  TempFile f;
  auto e = keyed_file(f.path(), "nvarchar(20)");
  e->commit({insert("dbo.t", {{"k", S("a ")}, {"v", S("old")}})}, kStart + kSecond);
  e->commit({key_update("dbo.t", {{"k", S("a")}}, {{"k", S("a ")}})}, kStart + 2 * kSecond);
  EXPECT_EQ(stored_keys(*e), std::vector<std::string>{"a"});
  const auto rows = change_rows(*e);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].op, Operation::Delete);
  EXPECT_EQ(rows[1].k, "a ");
  EXPECT_EQ(rows[2].op, Operation::Insert);
  EXPECT_EQ(rows[2].k, "a");
  EXPECT_EQ(rows[2].v, "old");  // the columns the update leaves keep their values
}

TEST(EmuKeyRespelling, AnOldKeyNamedInAnotherSpellingStillRespellsTheStoredKey) {
  TempFile f;
  auto e = keyed_file(f.path(), "nvarchar(20)");
  e->commit({insert("dbo.t", {{"k", S("n")}})}, kStart + kSecond);
  e->commit({key_update("dbo.t", {{"k", S("N")}}, {{"k", S("N ")}})}, kStart + 2 * kSecond);
  EXPECT_EQ(stored_keys(*e), std::vector<std::string>{"N"});
  const auto rows = change_rows(*e);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].k, "n");  // the stored spelling, not the one the old key was named by
  EXPECT_EQ(rows[2].k, "N");
}

TEST(EmuKeyRespelling, ANewKeySpelledExactlyAsStoredIsStillRefusedAsKeepingTheKey) {
  TempFile f;
  auto e = keyed_file(f.path(), "nvarchar(20)");
  e->commit({insert("dbo.t", {{"k", S("n")}})}, kStart + kSecond);
  EXPECT_NE(error_message([&] {
              e->commit({key_update("dbo.t", {{"k", S("n")}}, {{"k", S("N")}})}, kStart + 2 * kSecond);
            }).find("keeps the key"),
            std::string::npos);
}

TEST(EmuKeyRespelling, UnderACaseSensitiveCollationAnotherCaseIsAnotherKeyThatMayBeTaken) {
  TempFile f;
  auto e = keyed_file(f.path(), "nvarchar(20) COLLATE Latin1_General_CS_AS");
  e->commit({insert("dbo.t", {{"k", S("n")}}), insert("dbo.t", {{"k", S("N")}})}, kStart + kSecond);
  EXPECT_EQ(error_number([&] {
              e->commit({key_update("dbo.t", {{"k", S("N")}}, {{"k", S("n")}})}, kStart + 2 * kSecond);
            }),
            2627);
  EXPECT_EQ(stored_keys(*e).size(), 2u);
}

TEST(EmuKeyRespelling, AnotherRowHoldingTheNewKeyUnderTheCollationIsStillADuplicate) {
  TempFile f;
  auto e = keyed_file(f.path(), "nvarchar(20)");
  e->commit({insert("dbo.t", {{"k", S("a")}}), insert("dbo.t", {{"k", S("b")}})}, kStart + kSecond);
  EXPECT_EQ(error_number([&] {
              e->commit({key_update("dbo.t", {{"k", S("B ")}}, {{"k", S("a")}})}, kStart + 2 * kSecond);
            }),
            2627);
}

}  // namespace
}  // namespace mssqlcdc::emu::test
