// Subqueries in the query engine: a scalar (SELECT ...) as a value, EXISTS (SELECT ...) and
// x IN (SELECT ...), uncorrelated and correlated with the outer row. The oracle is Microsoft's
// T-SQL reference: https://learn.microsoft.com/en-us/sql/relational-databases/performance/subqueries
// (a correlated subquery runs for each outer row; a subquery used as an expression that returns
// more than one value is error 512), EXISTS
// (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/exists-transact-sql) and IN
// (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/in-transact-sql). Expected
// values are worked out by hand over the three rows committed here.
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

class TdsSubqueries : public ::testing::Test {
 protected:
  TdsSubqueries() {
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

TEST_F(TdsSubqueries, AScalarSubqueryIsAValueAndAnEmptyOneIsNull) {
  const Bytes reply = batch(
      "SELECT N'max=' + CAST((SELECT MAX(order_id) FROM dbo.orders) AS nvarchar(5)) + N' none=' + "
      "ISNULL(CAST((SELECT order_id FROM dbo.orders WHERE order_id = 9) AS nvarchar(5)), N'null') AS v");
  EXPECT_EQ(error_number(reply), 0);
  EXPECT_TRUE(contains_text(reply, "max=3 none=null"));
}

TEST_F(TdsSubqueries, ACorrelatedSubqueryReadsTheOuterRow) {
  // Orders with the same status as order o, o included: 1 -> 2, 2 -> 1, 3 -> 2.
  const Bytes reply = batch(
      "SELECT N'o' + CAST(o.order_id AS nvarchar(3)) + N'=' + CAST((SELECT COUNT(*) FROM dbo.orders AS p "
      "WHERE p.status = o.status) AS nvarchar(3)) AS v FROM dbo.orders AS o");
  EXPECT_EQ(error_number(reply), 0);
  EXPECT_TRUE(contains_text(reply, "o1=2"));
  EXPECT_TRUE(contains_text(reply, "o2=1"));
  EXPECT_TRUE(contains_text(reply, "o3=2"));
}

TEST_F(TdsSubqueries, ExistsAndInSelectRowsByAnotherQuery) {
  const Bytes reply = batch(
      "SELECT N'exists-' + CAST(order_id AS nvarchar(3)) AS v FROM dbo.orders AS o WHERE EXISTS "
      "(SELECT 1 FROM dbo.orders AS p WHERE p.order_id > o.order_id AND p.status = N'paid'); "
      "SELECT N'in-' + CAST(order_id AS nvarchar(3)) AS w FROM dbo.orders WHERE order_id NOT IN "
      "(SELECT order_id FROM dbo.orders WHERE status = N'new'); "
      "IF NOT EXISTS (SELECT 1 FROM dbo.orders WHERE order_id = 7) SELECT N'no-seven' AS x");
  EXPECT_EQ(error_number(reply), 0);
  EXPECT_TRUE(contains_text(reply, "exists-1"));  // only order 1 has a paid order after it
  EXPECT_FALSE(contains_text(reply, "exists-2"));
  EXPECT_FALSE(contains_text(reply, "exists-3"));
  EXPECT_TRUE(contains_text(reply, "in-2"));
  EXPECT_FALSE(contains_text(reply, "in-1"));
  EXPECT_TRUE(contains_text(reply, "no-seven"));
}

TEST_F(TdsSubqueries, ASubqueryOfManyValuesAsAValueIs512) {
  EXPECT_EQ(error_number(batch("SELECT (SELECT order_id FROM dbo.orders) AS v")), 512);
  EXPECT_EQ(error_number(batch("SELECT (SELECT order_id, status FROM dbo.orders WHERE order_id = 1) AS v")), 116);
}

}  // namespace
}  // namespace mssqlcdc::tds
