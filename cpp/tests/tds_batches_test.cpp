// T-SQL batches over the TDS front end: DECLARE, SET @v, SELECT @v =, PRINT, @@ROWCOUNT and
// variables as arguments. The oracle is Microsoft's documentation: DECLARE @local_variable
// (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/declare-local-variable-transact-sql),
// SET @local_variable, SELECT @local_variable (the last row's value; no row leaves it as it
// was), PRINT (an informational message), ISNULL.
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

class TdsBatches : public ::testing::Test {
 protected:
  TdsBatches() {
    auto engine = emu::test::orders_file(file_.path());
    engine->commit({emu::test::insert("dbo.orders", {{"order_id", I(1)}, {"status", S("new")}})}, std::nullopt);
  }

  Bytes batch(const std::string& sql) {
    Session s(file_.path(), "shop", 51);
    EXPECT_FALSE(s.handle(Message{PacketType::PreLogin, prelogin_response(Encryption::Off), false}).close);
    EXPECT_FALSE(s.handle(Message{PacketType::Login7, test::login7("sa", "pw", "shop"), false}).close);
    return s.handle(Message{PacketType::SqlBatch, test::sql_batch(sql), false}).payload;
  }

  emu::test::TempFile file_;
};

TEST_F(TdsBatches, ADeclaredVariableSetFromAnExpressionIsReadBack) {
  const Bytes reply = batch(
      "DECLARE @a nvarchar(20) = N'first', @b int; SET @b = 40 + 2; "
      "SELECT @a + N'-' + CAST(@b AS nvarchar(10)) AS v");
  EXPECT_EQ(error_number(reply), 0);
  EXPECT_TRUE(contains_text(reply, "first-42"));
}

TEST_F(TdsBatches, SelectAssignmentTakesTheQuerysRowAndNoRowLeavesTheValue) {
  const Bytes reply = batch(
      "DECLARE @s nvarchar(20) = N'unchanged'; "
      "SELECT @s = status FROM dbo.orders WHERE order_id = 2; SELECT @s AS a; "
      "SELECT @s = status FROM dbo.orders WHERE order_id = 1; SELECT N'now ' + @s AS b");
  EXPECT_EQ(error_number(reply), 0);
  EXPECT_TRUE(contains_text(reply, "unchanged"));
  EXPECT_TRUE(contains_text(reply, "now new"));
}

TEST_F(TdsBatches, AnUndeclaredVariableIs137AndARedeclaredOneIs134) {
  EXPECT_EQ(error_number(batch("SET @nope = 1")), 137);
  EXPECT_EQ(error_number(batch("DECLARE @x int; DECLARE @x int")), 134);
}

TEST_F(TdsBatches, PrintSendsItsTextAsAnInfoMessage) {
  const Bytes reply = batch("DECLARE @n int = 7; PRINT N'count ' + CAST(@n AS nvarchar(5))");
  EXPECT_EQ(error_number(reply), 0);
  EXPECT_NE(std::find(reply.begin(), reply.end(), static_cast<std::uint8_t>(Token::Info)), reply.end());
  EXPECT_TRUE(contains_text(reply, "count 7"));
}

TEST_F(TdsBatches, RowcountIsTheLastWritesRows) {
  const Bytes reply = batch(
      "UPDATE dbo.orders SET status = N'paid' WHERE order_id = 1; "
      "SELECT CASE WHEN @@ROWCOUNT = 1 THEN N'one row' ELSE N'other' END AS r");
  EXPECT_EQ(error_number(reply), 0);
  EXPECT_TRUE(contains_text(reply, "one row"));
}

TEST_F(TdsBatches, IsNullAndCoalesceTakeANullLiteral) {
  const Bytes reply = batch("SELECT ISNULL(NULL, 'isnull-x') AS a, COALESCE(NULL, N'coalesce-y') AS b");
  EXPECT_EQ(error_number(reply), 0);
  const std::string raw(reply.begin(), reply.end());
  EXPECT_NE(raw.find("isnull-x"), std::string::npos);
  EXPECT_TRUE(contains_text(reply, "coalesce-y"));
}

// CONCAT's page (https://learn.microsoft.com/en-us/sql/t-sql/functions/concat-transact-sql):
// its example A gives 'Happy Birthday 11/25'; a NULL argument is an empty string.
TEST_F(TdsBatches, ConcatJoinsTextAndNumbersAndSkipsNulls) {
  const Bytes reply = batch("SELECT CONCAT('Happy ', 'Birthday ', 11, '/', '25', NULL) AS r");
  EXPECT_EQ(error_number(reply), 0);
  const std::string raw(reply.begin(), reply.end());
  EXPECT_NE(raw.find("Happy Birthday 11/25"), std::string::npos);  // varchar: single bytes
  EXPECT_EQ(error_number(batch("SELECT CONCAT('only one') AS r")), 189);
}

TEST_F(TdsBatches, VariablesAreLsnArgumentsOfTheChangeFunction) {
  const Bytes reply = batch(
      "DECLARE @from_lsn binary(10), @to_lsn binary(10); "
      "SET @from_lsn = sys.fn_cdc_get_min_lsn('dbo_orders'); SET @to_lsn = sys.fn_cdc_get_max_lsn(); "
      "SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_orders(@from_lsn, @to_lsn, N'all');");
  EXPECT_EQ(error_number(reply), 0);
  EXPECT_TRUE(contains_text(reply, "new"));
}

TEST_F(TdsBatches, IfRunsTheBranchItsConditionTakes) {
  const Bytes reply = batch(
      "DECLARE @n int = 2; IF @n > 1 SELECT N'then-branch' AS x ELSE SELECT N'else-branch' AS x; "
      "IF @n > 5 SELECT N'not-this' AS y; IF @@TRANCOUNT > 0 ROLLBACK");
  EXPECT_EQ(error_number(reply), 0);
  EXPECT_TRUE(contains_text(reply, "then-branch"));
  EXPECT_FALSE(contains_text(reply, "else-branch"));
  EXPECT_FALSE(contains_text(reply, "not-this"));
}

TEST_F(TdsBatches, AVariableIsAProcedureArgument) {
  const Bytes reply =
      batch("DECLARE @ci nvarchar(128) = N'dbo_orders'; EXEC sys.sp_cdc_get_captured_columns @capture_instance = @ci");
  EXPECT_EQ(error_number(reply), 0);
  EXPECT_TRUE(contains_text(reply, "status"));
}

}  // namespace
}  // namespace mssqlcdc::tds
