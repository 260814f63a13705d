// NULL / NOT NULL changes and sp_rename on the engine (decisions 1260 and 1261).
#include <gtest/gtest.h>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/catalog.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {
namespace {

std::unique_ptr<Engine> orders_file(const std::filesystem::path& p, const std::string& note_type) {
  auto e = empty_file(p);
  e->create_table("dbo.orders", {{"order_id", "int"}, {"note", note_type}, {"qty", "int"}}, {"order_id"});
  return e;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::int64_t count(Engine& e, const std::string& sql) {
  auto st = e.db().prepare(sql);
  st.step();
  return st.i64(0);
}

bool nullable(Engine& e, const std::string& table, const std::string& column) {
  return load_table(e.db(), table).find(column)->nullable;
}

TEST(EmuSchemaChanges, ANullIntoANotNullColumnIsError515WithSqlServersText) {
  TempFile f;
  auto e = orders_file(f.path(), "nvarchar(20) NOT NULL");
  const auto [number, text] = failure([&] {
    e->commit({insert("dbo.orders", {{"order_id", I(1)}})}, kStart + kSecond);
  });
  EXPECT_EQ(number, 515);
  EXPECT_TRUE(contains(text,
                       "Cannot insert the value NULL into column 'note', table 'e.dbo.orders'; column does not "
                       "allow nulls. INSERT fails."))
      << text;
  e->commit({insert("dbo.orders", {{"order_id", I(1)}, {"note", S("x")}})}, kStart + kSecond);
  const auto [update_number, update_text] = failure([&] {
    e->commit({update("dbo.orders", {{"order_id", I(1)}, {"note", N()}})}, kStart + 2 * kSecond);
  });
  EXPECT_EQ(update_number, 515);
  EXPECT_TRUE(contains(update_text, "column does not allow nulls. UPDATE fails.")) << update_text;
  EXPECT_EQ(count(*e, "SELECT count(*) FROM \"dbo.orders\" WHERE note = 'x'"), 1);
}

TEST(EmuSchemaChanges, NotNullOverStoredNullsIsError515AndTheAlterChangesNothing) {
  TempFile f;
  auto e = orders_file(f.path(), "nvarchar(20)");
  e->enable_cdc("dbo.orders", std::nullopt, std::nullopt);
  e->commit({insert("dbo.orders", {{"order_id", I(1)}})}, kStart + kSecond);
  const auto [number, text] =
      failure([&] { (void)e->alter_column("dbo.orders", "note", "nvarchar(20) NOT NULL", std::nullopt); });
  EXPECT_EQ(number, 515);
  EXPECT_TRUE(contains(text,
                       "Cannot insert the value NULL into column 'note', table 'e.dbo.orders'; column does "
                       "not allow nulls. UPDATE fails."))
      << text;
  EXPECT_TRUE(nullable(*e, "dbo.orders", "note"));
  EXPECT_EQ(count(*e, "SELECT count(*) FROM \"cdc.ddl_history\""), 0);
}

TEST(EmuSchemaChanges, AnAlterWithoutNullOrNotNullMakesTheColumnNullable) {
  TempFile f;
  auto e = orders_file(f.path(), "nvarchar(20) not null");
  EXPECT_FALSE(nullable(*e, "dbo.orders", "note"));
  (void)e->alter_column("dbo.orders", "note", "nvarchar(30)", kStart + kSecond);
  EXPECT_TRUE(nullable(*e, "dbo.orders", "note"));
  e->commit({insert("dbo.orders", {{"order_id", I(1)}})}, kStart + 2 * kSecond);
  EXPECT_EQ(count(*e, "SELECT count(*) FROM \"dbo.orders\" WHERE note IS NULL"), 1);
}

TEST(EmuSchemaChanges, ANullabilityOnlyAlterOfACapturedColumnNeedsNoChangeTableUpdate) {
  TempFile f;
  auto e = orders_file(f.path(), "nvarchar(20)");
  e->enable_cdc("dbo.orders", std::nullopt, std::nullopt);
  e->commit({insert("dbo.orders", {{"order_id", I(1)}, {"note", S("a")}})}, kStart + kSecond);
  (void)e->alter_column("dbo.orders", "note", "nvarchar(20) NOT NULL", std::nullopt);
  (void)e->alter_column("dbo.orders", "qty", "bigint", std::nullopt);
  auto st = e->db().prepare(
      "SELECT column_name, required_column_update, ddl_command FROM \"cdc.ddl_history\" ORDER BY ddl_lsn");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.text(0), "note");
  EXPECT_EQ(st.i64(1), 0);
  EXPECT_EQ(st.text(2), "ALTER TABLE [dbo].[orders] ALTER COLUMN [note] nvarchar(20) NOT NULL");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.text(0), "qty");
  EXPECT_EQ(st.i64(1), 1);
  EXPECT_FALSE(nullable(*e, "dbo.orders", "note"));
}

TEST(EmuSchemaChanges, KeyIdentityAndAddedColumnsKeepSqlServersNullabilityRules) {
  TempFile f;
  const auto file = empty_file(f.path());
  Engine& e = *file;
  EXPECT_EQ(failure([&] { e.create_table("dbo.a", {{"id", "int NULL"}}, {"id"}); }).first, 8111);
  EXPECT_EQ(failure([&] { e.create_table("dbo.b", {{"id", "int identity NULL"}}, {}); }).first, 8147);
  e.create_table("dbo.c", {{"id", "int NOT NULL"}, {"v", "int identity not null"}}, {"id"});
  EXPECT_FALSE(nullable(e, "dbo.c", "id"));
  EXPECT_FALSE(nullable(e, "dbo.c", "v"));
  (void)e.add_column("dbo.c", "empty_ok", "int NOT NULL", kStart + kSecond);
  EXPECT_FALSE(nullable(e, "dbo.c", "empty_ok"));
  e.commit({insert("dbo.c", {{"id", I(1)}, {"empty_ok", I(0)}})}, kStart + 2 * kSecond);
  EXPECT_EQ(failure([&] { (void)e.add_column("dbo.c", "late", "int NOT NULL", kStart + 3 * kSecond); }).first, 4901);
  (void)e.add_column("dbo.c", "late", "int NULL", kStart + 3 * kSecond);
  EXPECT_TRUE(nullable(e, "dbo.c", "late"));
}

TEST(EmuSchemaChanges, RenamingACapturedColumnIsError4928AndChangesNothing) {
  TempFile f;
  auto e = orders_file(f.path(), "nvarchar(20)");
  e->enable_cdc("dbo.orders", std::nullopt, std::vector<std::string>{"order_id", "note"});
  const auto [number, text] = failure([&] { e->rename_column("dbo.orders", "note", "remark"); });
  EXPECT_EQ(number, 4928);
  EXPECT_TRUE(contains(text, "Cannot alter column 'note' because it is 'REPLICATED'")) << text;
  EXPECT_NE(load_table(e->db(), "dbo.orders").find("note"), nullptr);
}

TEST(EmuSchemaChanges, AnUncapturedColumnRenamesAndCaptureCarriesOn) {
  TempFile f;
  auto e = orders_file(f.path(), "nvarchar(20)");
  e->enable_cdc("dbo.orders", std::nullopt, std::vector<std::string>{"order_id", "note"});
  e->commit({insert("dbo.orders", {{"order_id", I(1)}, {"note", S("a")}, {"qty", I(3)}})}, kStart + kSecond);
  e->rename_column("dbo.orders", "qty", "quantity");
  e->commit({insert("dbo.orders", {{"order_id", I(2)}, {"note", S("b")}, {"quantity", I(4)}})}, kStart + 2 * kSecond);
  EXPECT_EQ(load_table(e->db(), "dbo.orders").column_list(), "order_id, note, quantity");
  EXPECT_EQ(count(*e, "SELECT sum(quantity) FROM \"dbo.orders\""), 7);
  EXPECT_EQ(count(*e, "SELECT count(*) FROM \"cdc.dbo_orders_CT\""), 2);
  EXPECT_EQ(count(*e, "SELECT count(*) FROM \"cdc.ddl_history\""), 0);
}

TEST(EmuSchemaChanges, ARenamedTableKeepsItsCaptureInstanceAndObjectId) {
  TempFile f;
  auto e = orders_file(f.path(), "nvarchar(20)");
  e->enable_cdc("dbo.orders", std::nullopt, std::nullopt);
  const std::int64_t id = load_table(e->db(), "dbo.orders").object_id;
  e->commit({insert("dbo.orders", {{"order_id", I(1)}, {"note", S("a")}})}, kStart + kSecond);
  e->rename_table("dbo.orders", "purchases");
  e->commit({insert("dbo.purchases", {{"order_id", I(2)}, {"note", S("b")}})}, kStart + 2 * kSecond);
  EXPECT_EQ(load_table(e->db(), "dbo.purchases").object_id, id);
  EXPECT_EQ(failure([&] { (void)load_table(e->db(), "dbo.orders"); }).first, 208);
  EXPECT_EQ(count(*e,
                  "SELECT count(*) FROM \"cdc.change_tables\" WHERE capture_instance = 'dbo_orders' AND "
                  "source_object_id = " +
                      std::to_string(id)),
            1);
  EXPECT_EQ(count(*e, "SELECT count(*) FROM \"cdc.dbo_orders_CT\""), 2);
  EXPECT_EQ(count(*e, "SELECT count(*) FROM \"cdc.ddl_history\""), 0);
}

TEST(EmuSchemaChanges, RenamesToATakenNameOrOfAMissingColumnFailWithSqlServersNumbers) {
  TempFile f;
  auto e = orders_file(f.path(), "nvarchar(20)");
  e->create_table("dbo.other", {{"id", "int"}}, {"id"});
  EXPECT_EQ(failure([&] { e->rename_column("dbo.orders", "qty", "NOTE"); }).first, 15335);
  EXPECT_EQ(failure([&] { e->rename_column("dbo.orders", "nope", "x"); }).first, 15248);
  EXPECT_EQ(failure([&] { e->rename_table("dbo.orders", "other"); }).first, 15335);
  EXPECT_EQ(failure([&] { e->rename_table("dbo.orders", "sales.orders"); }).first, 0);
  EXPECT_NE(load_table(e->db(), "dbo.orders").find("qty"), nullptr);
}

}  // namespace
}  // namespace mssqlcdc::emu::test
