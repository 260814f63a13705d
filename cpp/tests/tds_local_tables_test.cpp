// Table variables, CTEs and ranking windows over the TDS front end. The oracle is Microsoft's
// T-SQL reference: table (https://learn.microsoft.com/en-us/sql/t-sql/data-types/table-transact-sql),
// INSERT ... VALUES | SELECT | EXECUTE
// (https://learn.microsoft.com/en-us/sql/t-sql/statements/insert-transact-sql: 213 when the
// values do not match the columns), WITH common_table_expression
// (https://learn.microsoft.com/en-us/sql/t-sql/queries/with-common-table-expression-transact-sql),
// and RANK (https://learn.microsoft.com/en-us/sql/t-sql/functions/rank-transact-sql: ties share a
// rank and the next rank skips; DENSE_RANK does not skip). Expected values are worked by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "emu_test_util.hpp"
#include "mssqlcdc/tds/tokens.hpp"
#include "tds/src/session.hpp"
#include "tds_test_util.hpp"

namespace mssqlcdc::tds {
namespace {

using emu::test::I;
using emu::test::S;

std::int32_t error_number(const Bytes& reply) {
  const auto at = std::find(reply.begin(), reply.end(), static_cast<std::uint8_t>(Token::Error));
  if (at == reply.end()) return 0;
  Reader r(std::span<const std::uint8_t>(reply).subspan(static_cast<std::size_t>(at - reply.begin()) + 3));
  return static_cast<std::int32_t>(r.u32le());
}

bool contains_text(const Bytes& reply, const std::string& text) {
  Bytes utf16;
  append_utf16le(utf16, text);
  return std::search(reply.begin(), reply.end(), utf16.begin(), utf16.end()) != reply.end();
}

class TdsLocalTables : public ::testing::Test {
 protected:
  TdsLocalTables() {
    auto engine = emu::test::orders_file(file_.path());
    engine->commit({emu::test::insert("dbo.orders", {{"order_id", I(1)}, {"status", S("new")}}),
                    emu::test::insert("dbo.orders", {{"order_id", I(2)}, {"status", S("paid")}}),
                    emu::test::insert("dbo.orders", {{"order_id", I(3)}, {"status", S("new")}})},
                   std::nullopt);
  }

  Bytes batch(const std::string& sql) {
    Session s(file_.path(), "shop", 51);
    EXPECT_FALSE(s.handle(Message{PacketType::PreLogin, prelogin_response(Encryption::Off), false}).close);
    EXPECT_FALSE(s.handle(Message{PacketType::Login7, test::login7("sa", "pw", "shop"), false}).close);
    return s.handle(Message{PacketType::SqlBatch, test::sql_batch(sql), false}).payload;
  }

  emu::test::TempFile file_;
};

TEST_F(TdsLocalTables, ATableVariableTakesValuesAndASelectAndIsReadBack) {
  const Bytes reply = batch(
      "DECLARE @t TABLE (id int NOT NULL, label nvarchar(20)); "
      "INSERT INTO @t VALUES (10, N'ten'), (20, N'twenty'); "
      "INSERT INTO @t (id, label) SELECT order_id, N'order-' + status FROM dbo.orders WHERE order_id = 2; "
      "SELECT N'n=' + CAST(COUNT(*) AS nvarchar(5)) + N' max=' + CAST(MAX(id) AS nvarchar(5)) AS s FROM @t; "
      "SELECT x.label FROM @t AS x WHERE x.id = 2");
  EXPECT_EQ(error_number(reply), 0);
  EXPECT_TRUE(contains_text(reply, "n=3 max=20"));
  EXPECT_TRUE(contains_text(reply, "order-paid"));
}

TEST_F(TdsLocalTables, InsertExecPutsAProceduresRowsInATableVariable) {
  const Bytes reply = batch(
      "DECLARE @cols TABLE (source_schema sysname, source_table sysname, capture_instance sysname, "
      "column_name sysname, column_id int, column_ordinal int, data_type sysname, character_maximum_length int, "
      "numeric_precision tinyint, numeric_precision_radix smallint, numeric_scale int, datetime_precision smallint); "
      "INSERT INTO @cols EXEC sys.sp_cdc_get_captured_columns @capture_instance = N'dbo_orders'; "
      "SELECT N'cols=' + CAST(COUNT(*) AS nvarchar(5)) AS c FROM @cols");
  EXPECT_EQ(error_number(reply), 0);
  EXPECT_TRUE(contains_text(reply, "cols=3"));  // order_id, status and amount
}

TEST_F(TdsLocalTables, ValuesThatDoNotMatchTheColumnsAre213AndNullInANotNullColumnIs515) {
  EXPECT_EQ(error_number(batch("DECLARE @t TABLE (a int, b int); INSERT INTO @t VALUES (1)")), 213);
  EXPECT_EQ(error_number(batch("DECLARE @t TABLE (a int NOT NULL); INSERT INTO @t VALUES (NULL)")), 515);
  EXPECT_EQ(error_number(batch("INSERT INTO @nope VALUES (1)")), 1087);
  EXPECT_EQ(error_number(batch("SELECT * FROM @nope")), 1087);
}

TEST_F(TdsLocalTables, ACteIsReadByTheStatementAfterIt) {
  const Bytes reply = batch(
      "WITH fresh (id, s) AS (SELECT order_id, status FROM dbo.orders WHERE status = N'new'), "
      "counted AS (SELECT COUNT(*) AS n FROM fresh) "
      "SELECT N'fresh=' + CAST(n AS nvarchar(5)) AS r FROM counted");
  EXPECT_EQ(error_number(reply), 0);
  EXPECT_TRUE(contains_text(reply, "fresh=2"));
  EXPECT_EQ(error_number(batch("WITH x AS (SELECT 1 AS a) SELECT a FROM x; SELECT a FROM x")), 208);
}

TEST_F(TdsLocalTables, RankTiesShareARankAndDenseRankDoesNotSkip) {
  // Statuses ordered: new (1, 3), paid (2): RANK 1, 1, 3; DENSE_RANK 1, 1, 2.
  const Bytes reply = batch(
      "WITH r AS (SELECT order_id, RANK() OVER (ORDER BY status) AS rk, DENSE_RANK() OVER (ORDER BY status) AS dr, "
      "ROW_NUMBER() OVER (PARTITION BY status ORDER BY order_id DESC) AS rn FROM dbo.orders) "
      "SELECT N'o' + CAST(order_id AS nvarchar(3)) + N':' + CAST(rk AS nvarchar(3)) + N'/' + CAST(dr AS nvarchar(3)) "
      "+ N'/' + CAST(rn AS nvarchar(3)) AS v FROM r");
  EXPECT_EQ(error_number(reply), 0);
  EXPECT_TRUE(contains_text(reply, "o1:1/1/2"));
  EXPECT_TRUE(contains_text(reply, "o3:1/1/1"));
  EXPECT_TRUE(contains_text(reply, "o2:3/2/1"));
}

}  // namespace
}  // namespace mssqlcdc::tds
