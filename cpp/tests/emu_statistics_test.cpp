// The statistics the emulator keeps on a primary key (decision 1448). The oracle is Microsoft's
// documentation and plain counting:
// - a histogram has at most 200 steps over the statistics' first key column; the lowest value
//   is the first step's upper bound; RANGE_ROWS counts the rows strictly between two bounds,
//   EQ_ROWS the rows equal to a bound, DISTINCT_RANGE_ROWS the distinct values between, and
//   AVG_RANGE_ROWS is RANGE_ROWS / DISTINCT_RANGE_ROWS, 1 when there are none
//   (https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-db-stats-histogram-transact-sql,
//   https://learn.microsoft.com/en-us/sql/t-sql/database-console-commands/dbcc-show-statistics-transact-sql);
// - AUTO_UPDATE_STATISTICS's threshold from SQL Server 2016 (compatibility level 130):
//   MIN(500 + 0.20 * n, SQRT(1000 * n)) changes for n rows, 500 for 500 rows or fewer
//   (https://learn.microsoft.com/en-us/sql/relational-databases/statistics/statistics).
#include <gtest/gtest.h>

#include <map>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/emu/statistics.hpp"

namespace mssqlcdc::emu::test {
namespace {

// A histogram of `counts` (value -> rows), built from the values in order.
std::vector<HistogramStep> build(const std::map<std::int64_t, std::int64_t>& counts) {
  std::int64_t total = 0;
  for (const auto& [v, n] : counts) total += n;
  HistogramBuilder b(total);
  for (const auto& [v, n] : counts) b.add(Cell::integer(v), n);
  return b.finish();
}

// Checks `steps` against the rows in `counts`: every row is in exactly one step, each step's
// counts are those of the values between its bounds.
void expect_consistent(const std::vector<HistogramStep>& steps, const std::map<std::int64_t, std::int64_t>& counts) {
  ASSERT_FALSE(steps.empty());
  ASSERT_LE(steps.size(), kMaxHistogramSteps);
  EXPECT_EQ(steps.front().range_hi_key.i, counts.begin()->first);
  EXPECT_EQ(steps.back().range_hi_key.i, counts.rbegin()->first);
  std::optional<std::int64_t> previous;
  for (const auto& s : steps) {
    std::int64_t between = 0;
    std::int64_t distinct = 0;
    for (const auto& [v, n] : counts) {
      if ((!previous || v > *previous) && v < s.range_hi_key.i) {
        between += n;
        ++distinct;
      }
    }
    EXPECT_EQ(s.range_rows, static_cast<double>(between));
    EXPECT_EQ(s.eq_rows, static_cast<double>(counts.at(s.range_hi_key.i)));
    EXPECT_EQ(s.distinct_range_rows, distinct);
    EXPECT_DOUBLE_EQ(s.avg_range_rows,
                     distinct > 0 ? static_cast<double>(between) / static_cast<double>(distinct) : 1.0);
    previous = s.range_hi_key.i;
  }
}

TEST(EmuStatistics, FewDistinctValuesAreEachAStep) {
  const std::map<std::int64_t, std::int64_t> counts{{1, 3}, {5, 1}, {9, 7}};
  const auto steps = build(counts);
  ASSERT_EQ(steps.size(), 3U);
  expect_consistent(steps, counts);
}

TEST(EmuStatistics, AMillionUniqueKeysFitIn200StepsOfAboutEqualRows) {
  std::map<std::int64_t, std::int64_t> counts;
  for (std::int64_t v = 0; v < 1'000'000; ++v) counts.emplace(v * 3, 1);
  const auto steps = build(counts);
  EXPECT_LE(steps.size(), 200U);
  EXPECT_GE(steps.size(), 190U);
  expect_consistent(steps, counts);
  for (std::size_t i = 1; i + 1 < steps.size(); ++i) EXPECT_LE(steps[i].range_rows + steps[i].eq_rows, 5051.0);
}

TEST(EmuStatistics, AFrequentValueIsAStepOfItsOwn) {
  std::map<std::int64_t, std::int64_t> counts;
  for (std::int64_t v = 0; v < 1000; ++v) counts.emplace(v, v == 500 ? 5000 : 1);
  const auto steps = build(counts);
  expect_consistent(steps, counts);
  bool found = false;
  for (const auto& s : steps) found = found || (s.range_hi_key.i == 500 && s.eq_rows == 5000);
  EXPECT_TRUE(found);
}

TEST(EmuStatistics, NoValuesGiveNoSteps) { EXPECT_TRUE(HistogramBuilder(0).finish().empty()); }

TEST(EmuStatistics, StaleAtSqlServer2016sThreshold) {
  EXPECT_FALSE(statistics_stale(100, 499));
  EXPECT_TRUE(statistics_stale(100, 500));
  EXPECT_FALSE(statistics_stale(1'000'000, 31'622));  // SQRT(1000 * 1,000,000) = 31,622.8
  EXPECT_TRUE(statistics_stale(1'000'000, 31'623));
  EXPECT_FALSE(statistics_stale(1000, 699));  // 500 + 0.20 * 1000 = 700 < SQRT(1,000,000)
  EXPECT_TRUE(statistics_stale(1000, 700));
}

// A file whose dbo.orders holds ids 1..n.
std::unique_ptr<Engine> orders(const TempFile& f, int n) {
  auto e = orders_file(f.path());
  std::vector<Change> rows;
  for (int i = 1; i <= n; ++i) rows.push_back(insert("dbo.orders", {{"order_id", I(i)}, {"status", S("new")}}));
  e->commit(rows, kStart + kSecond);
  return e;
}

TEST(EmuStatistics, AReadBuildsMissingStatisticsAndCountsTheBuildApart) {
  TempFile f;
  auto e = orders(f, 1000);
  Reader r(f.path());
  file_io(f.path())->clear();
  const auto stats = r.statistics("dbo.orders");
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->rows, 1000);
  EXPECT_EQ(stats->rows_sampled, 1000);
  EXPECT_EQ(stats->modification_counter, 0);
  std::map<std::int64_t, std::int64_t> counts;
  for (std::int64_t i = 1; i <= 1000; ++i) counts.emplace(i, 1);
  expect_consistent(stats->histogram, counts);
  const auto io = file_io(f.path())->totals();
  EXPECT_EQ(io.count("dbo.orders"), 0U);
  EXPECT_EQ(io.at("dbo.orders (statistics)").rows_read, 2000);  // the count, then the scan
  // Stored: a second read builds nothing.
  file_io(f.path())->clear();
  EXPECT_EQ(r.statistics("dbo.orders")->histogram, stats->histogram);
  EXPECT_TRUE(file_io(f.path())->totals().empty());
}

TEST(EmuStatistics, WritesRaiseTheCounterUntilTheThresholdRebuilds) {
  TempFile f;
  auto e = orders(f, 1000);
  Reader r(f.path());
  r.update_statistics("dbo.orders");
  std::vector<Change> more;
  for (int i = 1001; i <= 1699; ++i) more.push_back(insert("dbo.orders", {{"order_id", I(i)}, {"status", S("new")}}));
  e->commit(more, kStart + 2 * kSecond);
  e->commit({update("dbo.orders", {{"order_id", I(5)}, {"status", S("paid")}})}, kStart + 3 * kSecond);
  EXPECT_EQ(r.statistics("dbo.orders", false)->modification_counter, 699);  // the update changed no key
  EXPECT_EQ(r.statistics("dbo.orders")->rows, 1000);                        // 699 < 700: not stale
  e->commit({del("dbo.orders", {{"order_id", I(1)}})}, kStart + 4 * kSecond);
  const auto rebuilt = r.statistics("dbo.orders");
  EXPECT_EQ(rebuilt->rows, 1698);
  EXPECT_EQ(rebuilt->modification_counter, 0);
}

TEST(EmuStatistics, AHeapHasNone) {
  TempFile f;
  auto e = empty_file(f.path());
  e->create_table("dbo.h", {{"x", "int"}}, {});
  Reader r(f.path());
  EXPECT_FALSE(r.statistics("dbo.h").has_value());
  EXPECT_EQ(error_number([&] { r.update_statistics("dbo.h"); }), 0);
}

}  // namespace
}  // namespace mssqlcdc::emu::test
