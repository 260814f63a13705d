// What reads cost the emulator (decision 1411): a read from a key bound is a seek, one from the
// first row a scan, and rows_read counts the stored rows stepped over. Over TDS, SET STATISTICS
// IO ON sends each SELECT's counts as message 3615 in the shape Microsoft documents
// (https://learn.microsoft.com/en-us/sql/t-sql/statements/set-statistics-io-transact-sql:
// "Table 'ProductCostHistory'. Scan count 1, logical reads 5, physical reads 0, ...").
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/io_stats.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/tds/tokens.hpp"
#include "tds/src/session.hpp"
#include "tds_test_util.hpp"

namespace mssqlcdc::emu {
namespace {

using test::I;
using test::S;

class IoStats : public ::testing::Test {
 protected:
  IoStats() {
    auto engine = test::orders_file(file_.path());
    std::vector<Change> rows;
    for (int k = 1; k <= 100; ++k) rows.push_back(test::insert("dbo.orders", {{"order_id", I(k)}, {"status", S("n")}}));
    engine->commit(rows, std::nullopt);
    file_io(file_.path())->clear();
  }

  [[nodiscard]] TableIo orders() const { return file_io(file_.path())->totals()["dbo.orders"]; }

  test::TempFile file_;
};

std::int64_t drain(RowCursor& cursor, std::int64_t most) {
  std::vector<Cell> row;
  std::int64_t n = 0;
  while (n < most && cursor.next(row)) ++n;
  return n;
}

TEST_F(IoStats, ARangeReadFromAKeyIsOneSeekOverTheRowsItSteps) {
  Reader reader(file_.path());
  auto cursor = reader.table_rows("dbo.orders",
                                  CellRange{CellBound{Cell::integer(41), true}, CellBound{Cell::integer(51), false}});
  EXPECT_EQ(drain(*cursor, 1000), 10);
  EXPECT_EQ(orders(), (TableIo{0, 1, 10}));
}

TEST_F(IoStats, AReadFromTheFirstRowIsAScanAndAnEarlyStopReadsNoFurther) {
  Reader reader(file_.path());
  auto cursor = reader.table_rows("dbo.orders", CellRange{});
  EXPECT_EQ(drain(*cursor, 3), 3);
  EXPECT_EQ(orders(), (TableIo{1, 0, 3}));
}

TEST_F(IoStats, NextKeyIsASeekOfOneRowAndKeyExtentCountsEveryRow) {
  Reader reader(file_.path());
  ASSERT_TRUE(reader.next_key("dbo.orders", {I(50)}, std::nullopt).has_value());
  EXPECT_EQ(orders(), (TableIo{0, 1, 1}));
  ASSERT_TRUE(reader.key_extent("dbo.orders", std::nullopt).has_value());
  EXPECT_EQ(orders(), (TableIo{3, 1, 1 + 100 + 2}));  // count(*), then the first and the last key
}

TEST_F(IoStats, AStatementTallyGetsOnlyTheReadsStartedWhileItIsSet) {
  Reader reader(file_.path());
  auto tally = std::make_shared<IoTally>();
  reader.count_into(tally);
  auto cursor = reader.table_rows("dbo.orders", CellRange{CellBound{Cell::integer(99), true}, std::nullopt});
  reader.count_into(nullptr);
  (void)reader.next_key("dbo.orders", {I(1)}, std::nullopt);
  EXPECT_EQ(drain(*cursor, 1000), 2);
  EXPECT_EQ(tally->totals()["dbo.orders"], (TableIo{0, 1, 2}));
  EXPECT_EQ(orders(), (TableIo{0, 2, 3}));
}

}  // namespace
}  // namespace mssqlcdc::emu

namespace mssqlcdc::tds {
namespace {

bool contains_text(const Bytes& reply, const std::string& text) {
  Bytes utf16;
  append_utf16le(utf16, text);
  return std::search(reply.begin(), reply.end(), utf16.begin(), utf16.end()) != reply.end();
}

class StatisticsIo : public ::testing::Test {
 protected:
  StatisticsIo() {
    auto engine = emu::test::orders_file(file_.path());
    std::vector<emu::Change> rows;
    for (int k = 1; k <= 20; ++k) {
      rows.push_back(emu::test::insert("dbo.orders", {{"order_id", emu::test::I(k)}, {"status", emu::test::S("n")}}));
    }
    engine->commit(rows, std::nullopt);
  }

  Bytes batch(const std::string& sql) {
    Session s(file_.path(), "shop", 51);
    EXPECT_FALSE(s.handle(Message{PacketType::PreLogin, prelogin_response(Encryption::Off), false}).close);
    EXPECT_FALSE(s.handle(Message{PacketType::Login7, test::login7("sa", "pw", "shop"), false}).close);
    return s.handle(Message{PacketType::SqlBatch, test::sql_batch(sql), false}).payload;
  }

  emu::test::TempFile file_;
};

TEST_F(StatisticsIo, OnASelectSendsTheTablesScanCountAndReadsAfterItsRows) {
  const Bytes reply =
      batch("SET STATISTICS IO ON; SELECT TOP (1) order_id FROM dbo.orders WHERE order_id > 5 ORDER BY order_id");
  const std::string text =
      "Table 'orders'. Scan count 1, logical reads 1, physical reads 0, read-ahead reads 0, lob logical reads 0, "
      "lob physical reads 0, lob read-ahead reads 0.";
  EXPECT_TRUE(contains_text(reply, text));
  EXPECT_NE(std::find(reply.begin(), reply.end(), static_cast<std::uint8_t>(Token::Info)), reply.end());
}

TEST_F(StatisticsIo, AWholeTableAggregateReadsEveryRow) {
  EXPECT_TRUE(contains_text(batch("SET STATISTICS IO ON; SELECT MAX(order_id) AS m FROM dbo.orders"),
                            "Table 'orders'. Scan count 1, logical reads 20,"));
}

TEST_F(StatisticsIo, AnUpperBoundThatAdmitsNullStopsTheReadOfANotNullKeyAtTheBound) {
  // The backends' `k IS NULL OR k < v`: on a NOT NULL key the read seeks to 6 and stops before 8.
  EXPECT_TRUE(contains_text(batch("SET STATISTICS IO ON; SELECT order_id FROM dbo.orders WHERE order_id > 5 AND "
                                  "(order_id IS NULL OR order_id < 8)"),
                            "Table 'orders'. Scan count 1, logical reads 2,"));
}

TEST_F(StatisticsIo, OffOrNeverSetSendsNoMessage) {
  EXPECT_FALSE(contains_text(batch("SELECT MAX(order_id) AS m FROM dbo.orders"), "Scan count"));
  EXPECT_FALSE(contains_text(batch("SET STATISTICS IO ON; SET STATISTICS IO OFF; SELECT MAX(order_id) AS m FROM "
                                   "dbo.orders"),
                             "Scan count"));
}

}  // namespace
}  // namespace mssqlcdc::tds
