// Fault hooks in reads the TDS front end serves (decision 0760): the backends' change and
// snapshot reads, run as the T-SQL they send, claim and fire the hooks read_changes and
// read_table fire; planning queries and what a person types never do. Oracles are the commit
// LSNs the engine returned and the emulator's own reader.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/emu/hooks.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "tds/src/catalog.hpp"
#include "tds/src/select.hpp"
#include "tds/src/tsql.hpp"
#include "tds_catalog_test_util.hpp"

namespace mssqlcdc::tds {
namespace {

using emu::test::I;
using emu::test::insert;
using emu::test::kSecond;
using emu::test::kStart;
using emu::test::S;

// dbo.orders with six commits, one insert each (order_id 0..5).
struct Orders : test::OrdersCatalog {
  Orders() {
    for (int i = 0; i < 6; ++i) {
      commits.push_back(engine->commit({insert("dbo.orders", {{"order_id", I(i)}, {"status", S("new")}})},
                                       kStart + (i + 1) * kSecond));
    }
  }

  void hook(const std::string& kind, const std::string& read_kind, std::optional<Lsn> mark = std::nullopt,
            std::int64_t after_rows = 0) {
    emu::Hook h;
    h.kind = kind;
    h.read_kind = read_kind;
    if (mark) {
      h.capture_instance = "dbo_orders";
      h.mark = *mark;
    }
    h.after_rows = after_rows;
    emu::register_hook(*engine, h);
  }

  std::size_t pending() {
    auto db = emu::open_file(file.path());
    return emu::pending_hooks(*db).size();
  }

  Lsn min_lsn() { return reader.min_lsn("dbo_orders").lsn; }

  RowSource run(const std::string& sql) { return run_select(parse_select(lex(sql)), *catalog, {}); }

  std::vector<std::vector<Value>> rows(const std::string& sql) {
    RowSource src = run(sql);
    std::vector<std::vector<Value>> out;
    for (std::vector<Value> row; src.next(row);) out.push_back(row);
    return out;
  }

  // TsqlChangeReader's statement (statements.change_rows) with pymssql's inlined literals.
  std::string change_read(const Lsn& from, const Lsn& to) const {
    return "SELECT CONVERT(varchar(22), ct.[__$start_lsn], 1) AS [_start_lsn], ct.[__$operation] AS [_operation], "
           "CONVERT(datetime2(3), m.tran_end_time) AS [_commit_ts], ct.[order_id] AS [order_id] "
           "FROM cdc.[dbo_orders_CT] AS ct LEFT JOIN cdc.lsn_time_mapping AS m ON m.start_lsn = ct.[__$start_lsn] "
           "WHERE ct.[__$start_lsn] BETWEEN CONVERT(binary(10), '" +
           from.to_string() + "', 1) AND CONVERT(binary(10), '" + to.to_string() +
           "', 1) ORDER BY ct.[__$start_lsn], ct.[__$command_id], ct.[__$seqval], ct.[__$operation]";
  }
};

// The snapshot reader's statement (snapshot.table_rows) over the whole key range.
const char* const kTableRead =
    "SELECT t.[order_id] AS [order_id], t.[status] AS [status] FROM [dbo].[orders] AS t "
    "WHERE 1 = 1";

std::vector<Value> column(const std::vector<std::vector<Value>>& rows, std::size_t i) {
  std::vector<Value> out;
  for (const auto& r : rows) out.push_back(r[i]);
  return out;
}

Value text(const Lsn& l) { return l.to_string(); }

TEST(TdsHooks, AChangeReadRacingAMidReadCleanupMissesTheLaterRowsBelowTheNewMark) {
  Orders o;
  const Lsn first = o.min_lsn();
  o.hook("cleanup_mid_read", "changes", o.commits[4], 2);
  const auto rows = o.rows(o.change_read(first, o.commits[5]));
  EXPECT_EQ(column(rows, 0),
            (std::vector<Value>{text(o.commits[0]), text(o.commits[1]), text(o.commits[4]), text(o.commits[5])}));
  EXPECT_EQ(o.min_lsn(), o.commits[4]);  // what the executor's guard reads after the rows
  EXPECT_EQ(o.pending(), 0u);
}

TEST(TdsHooks, ADuringReadCleanupLeavesTheRowsCompleteAndMovesMinLsnBeforeTheEndIsReported) {
  Orders o;
  const Lsn first = o.min_lsn();
  o.hook("cleanup_during_read", "changes", o.commits[3]);
  RowSource src = o.run(o.change_read(first, o.commits[5]));
  std::vector<Value> row;
  std::vector<Value> read;
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(src.next(row));
    read.push_back(row[0]);
  }
  EXPECT_EQ(o.min_lsn(), first);  // every row was sent, the end not yet
  EXPECT_FALSE(src.next(row));
  EXPECT_EQ(o.min_lsn(), o.commits[3]);
  EXPECT_EQ(read.front(), text(o.commits[0]));
  EXPECT_EQ(read.back(), text(o.commits[5]));
}

TEST(TdsHooks, ABeforeReadCleanupMakesTheChangeReadStartAtTheNewMarkAsATableReadOnSqlServerDoes) {
  Orders o;
  const Lsn first = o.min_lsn();
  o.hook("cleanup_before_read", "changes", o.commits[3]);
  const auto rows = o.rows(o.change_read(first, o.commits[5]));
  EXPECT_EQ(column(rows, 0), (std::vector<Value>{text(o.commits[3]), text(o.commits[4]), text(o.commits[5])}));
  EXPECT_EQ(o.min_lsn(), o.commits[3]);
}

TEST(TdsHooks, PlanningQueriesAndWhatAPersonTypesLeaveTheHooksPending) {
  Orders o;
  const Lsn first = o.min_lsn();
  o.hook("cleanup_before_read", "changes", o.commits[3]);
  o.hook("inject_null_row", "table");
  const std::string range = "CONVERT(binary(10), '" + first.to_string() + "', 1) AND CONVERT(binary(10), '" +
                            o.commits[5].to_string() + "', 1)";
  const std::vector<std::string> untouched{
      // the backends' planning: split_points, key_extent, key_tiles, nth_commit_after
      "SELECT x.t AS tile, CONVERT(varchar(22), MAX(x.l), 1) AS last_lsn, COUNT_BIG(*) AS row_count FROM "
      "(SELECT [__$start_lsn] AS l, NTILE(2) OVER (ORDER BY [__$start_lsn]) AS t FROM cdc.[dbo_orders_CT] "
      "WHERE [__$start_lsn] BETWEEN " +
          range + ") AS x GROUP BY x.t ORDER BY x.t",
      "SELECT MIN([order_id]) AS lo, MAX([order_id]) AS hi FROM [dbo].[orders]",
      "SELECT y.t AS tile, y.[order_id] AS [k0] FROM (SELECT x.*, ROW_NUMBER() OVER (PARTITION BY x.t ORDER BY "
      "x.[order_id]) AS p FROM (SELECT [order_id], NTILE(3) OVER (ORDER BY [order_id]) AS t FROM [dbo].[orders]) "
      "AS x) AS y WHERE y.p = 1 AND y.t > 1 ORDER BY y.t",
      "SELECT CONVERT(varchar(22), m.start_lsn, 1) AS lsn FROM cdc.lsn_time_mapping AS m WHERE m.start_lsn > "
      "CONVERT(binary(10), '" +
          first.to_string() + "', 1) ORDER BY m.start_lsn OFFSET 1 ROWS FETCH NEXT 1 ROWS ONLY",
      // a person's looks
      "SELECT * FROM cdc.dbo_orders_CT",
      "SELECT * FROM dbo.orders",
      "SELECT TOP (2) * FROM dbo.orders WHERE order_id > 0",
      "SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_orders(" + std::string("CONVERT(binary(10), '") +
          first.to_string() + "', 1), sys.fn_cdc_get_max_lsn(), N'all')",
  };
  for (const auto& sql : untouched) {
    EXPECT_FALSE(o.rows(sql).empty()) << sql;
    EXPECT_EQ(o.pending(), 2u) << sql;
  }
  EXPECT_EQ(o.min_lsn(), first);

  const auto table = o.rows(kTableRead);  // the snapshot read: one all-NULL row first
  ASSERT_EQ(table.size(), 7u);
  EXPECT_EQ(table[0], (std::vector<Value>{Value{}, Value{}}));
  EXPECT_EQ(table[1][0], Value{std::int64_t{0}});
  EXPECT_EQ(o.pending(), 1u);
  EXPECT_EQ(o.rows(o.change_read(first, o.commits[5])).size(), 3u);
  EXPECT_EQ(o.pending(), 0u);
}

TEST(TdsHooks, ACommitBeforeTheSnapshotReadIsInTheRowsItReturns) {
  Orders o;
  emu::Hook h;
  h.kind = "commit_before_read";
  h.read_kind = "table";
  h.changes = {insert("dbo.orders", {{"order_id", I(100)}, {"status", S("late")}})};
  emu::register_hook(*o.engine, h);
  const auto before = o.reader.max_lsn();
  const auto rows = o.rows(kTableRead);
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows.back(), (std::vector<Value>{std::int64_t{100}, std::string("late")}));
  EXPECT_NE(o.reader.max_lsn(), before);
}

}  // namespace
}  // namespace mssqlcdc::tds
