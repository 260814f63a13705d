// Identity columns and the other schema features of issue 21 item 5, on the engine itself.
#include <gtest/gtest.h>

#include "emu_test_util.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {
namespace {

std::unique_ptr<Engine> tickets_file(const std::filesystem::path& p, const std::string& id_type) {
  auto e = empty_file(p);
  e->create_table("dbo.tickets", {{"ticket_id", id_type}, {"title", "nvarchar(40)"}}, {"ticket_id"});
  e->enable_cdc("dbo.tickets", std::nullopt, std::nullopt);
  return e;
}

std::vector<std::int64_t> int_column(Engine& e, const std::string& relation, const std::string& column) {
  std::vector<std::int64_t> out;
  auto st = e.db().prepare("SELECT " + quote_ident(column) + " FROM " + quote_ident(relation) + " ORDER BY 1");
  while (st.step()) out.push_back(st.i64(0));
  return out;
}

TEST(EmuSchema, InsertsThatOmitTheIdentityTakeSeedThenSteps) {
  TempFile f;
  auto e = tickets_file(f.path(), "int identity(100, 10)");
  e->commit({insert("dbo.tickets", {{"title", S("a")}}), insert("dbo.tickets", {{"title", S("b")}})}, kStart + kSecond);
  e->commit({insert("dbo.tickets", {{"title", S("c")}})}, kStart + 2 * kSecond);
  EXPECT_EQ(int_column(*e, "dbo.tickets", "ticket_id"), (std::vector<std::int64_t>{100, 110, 120}));
  EXPECT_EQ(int_column(*e, "cdc.dbo_tickets_CT", "ticket_id"), (std::vector<std::int64_t>{100, 110, 120}));
}

TEST(EmuSchema, ADeleteLeavesAGapTheIdentityNeverRefills) {
  TempFile f;
  auto e = tickets_file(f.path(), "bigint IDENTITY");
  e->commit({insert("dbo.tickets", {{"title", S("a")}}), insert("dbo.tickets", {{"title", S("b")}})}, kStart + kSecond);
  e->commit({del("dbo.tickets", {{"ticket_id", I(2)}})}, kStart + 2 * kSecond);
  e->commit({insert("dbo.tickets", {{"title", S("c")}})}, kStart + 3 * kSecond);
  EXPECT_EQ(int_column(*e, "dbo.tickets", "ticket_id"), (std::vector<std::int64_t>{1, 3}));
}

TEST(EmuSchema, AnExplicitIdentityValueIsError544AndAnUpdateOfItError8102) {
  TempFile f;
  auto e = tickets_file(f.path(), "int identity");
  EXPECT_EQ(error_number([&] { e->commit({insert("dbo.tickets", {{"ticket_id", I(5)}})}, kStart + kSecond); }), 544);
  e->commit({insert("dbo.tickets", {{"title", S("a")}})}, kStart + kSecond);
  EXPECT_EQ(error_number([&] {
              e->commit({key_update("dbo.tickets", {{"ticket_id", I(9)}}, {{"ticket_id", I(1)}})}, kStart + kSecond);
            }),
            8102);
  EXPECT_EQ(int_column(*e, "dbo.tickets", "ticket_id"), (std::vector<std::int64_t>{1}));
}

TEST(EmuSchema, AnIdentityPastItsTypeIsError8115AndChangesNothing) {
  TempFile f;
  auto e = tickets_file(f.path(), "tinyint identity(254, 1)");
  e->commit({insert("dbo.tickets", {{"title", S("a")}}), insert("dbo.tickets", {{"title", S("b")}})}, kStart + kSecond);
  EXPECT_EQ(error_number([&] { e->commit({insert("dbo.tickets", {{"title", S("c")}})}, kStart + kSecond); }), 8115);
  EXPECT_EQ(int_column(*e, "dbo.tickets", "ticket_id"), (std::vector<std::int64_t>{254, 255}));
}

TEST(EmuSchema, BadIdentityDefinitionsAreRefusedWithSqlServersNumbers) {
  TempFile f;
  const auto file = empty_file(f.path());
  Engine& e = *file;
  EXPECT_EQ(error_number([&] { e.create_table("dbo.a", {{"x", "int identity"}, {"y", "int identity"}}, {}); }), 2744);
  EXPECT_EQ(error_number([&] { e.create_table("dbo.b", {{"x", "nvarchar(5) identity"}}, {}); }), 2749);
  EXPECT_THROW(e.create_table("dbo.c", {{"x", "int identity(1)"}}, {}), Error);
  EXPECT_THROW(e.create_table("dbo.d", {{"x", "int identity(1, 0)"}}, {}), Error);
  EXPECT_THROW(e.create_table("dbo.e", {{"x", "tinyint identity(-1, 1)"}}, {}), Error);
  EXPECT_EQ(table_names(e.db()), std::vector<std::string>{});
}

TEST(EmuSchema, AComputedColumnHoldsItsValueInTheSourceAndNullInChangeRows) {
  TempFile f;
  const auto file = empty_file(f.path());
  Engine& e = *file;
  e.create_table("dbo.lines", {{"line_id", "int"}, {"qty", "int"}, {"twice", "bigint AS ((qty + 1) * 2 - -1)"}},
                 {"line_id"});
  e.enable_cdc("dbo.lines", std::nullopt, std::nullopt);
  e.commit({insert("dbo.lines", {{"line_id", I(1)}, {"qty", I(4)}})}, kStart + kSecond);
  e.commit({update("dbo.lines", {{"line_id", I(1)}, {"qty", I(10)}})}, kStart + 2 * kSecond);
  EXPECT_EQ(int_column(e, "dbo.lines", "twice"), (std::vector<std::int64_t>{23}));
  auto st = e.db().prepare("SELECT count(*), count(\"twice\") FROM \"cdc.dbo_lines_CT\"");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.i64(0), 3);  // insert, update old and new images
  EXPECT_EQ(st.i64(1), 0);
  EXPECT_EQ(error_number([&] {
              e.commit({update("dbo.lines", {{"line_id", I(1)}, {"twice", I(3)}})}, kStart + 3 * kSecond);
            }),
            271);
}

TEST(EmuSchema, AComputedDivisionByZeroIsError8134AndRollsBackTheTransaction) {
  TempFile f;
  const auto file = empty_file(f.path());
  Engine& e = *file;
  e.create_table("dbo.r", {{"id", "int"}, {"n", "int"}, {"d", "int"}, {"q", "int AS (n / d)"}}, {"id"});
  e.commit({insert("dbo.r", {{"id", I(1)}, {"n", I(7)}, {"d", I(-2)}})}, kStart + kSecond);
  EXPECT_EQ(int_column(e, "dbo.r", "q"), (std::vector<std::int64_t>{-3}));  // truncates toward zero
  EXPECT_EQ(error_number([&] {
              e.commit({insert("dbo.r", {{"id", I(2)}, {"n", I(1)}, {"d", I(0)}})}, kStart + 2 * kSecond);
            }),
            8134);
  EXPECT_EQ(int_column(e, "dbo.r", "id"), (std::vector<std::int64_t>{1}));
}

}  // namespace
}  // namespace mssqlcdc::emu::test
