// The query engine over a fake catalog: in-memory relations with literal rows are the oracle.
// Each backend statement (python/mssql_cdc/sqlserver/tsql/) appears here as the T-SQL it renders.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "mssqlcdc/error.hpp"
#include "tds/src/builtins.hpp"
#include "tds/src/select.hpp"
#include "tds/src/tsql.hpp"

namespace mssqlcdc::tds {
namespace {

const ColumnType kLsn{SqlKind::Binary, 10};
const ColumnType kInt{SqlKind::Int};
const ColumnType kBig{SqlKind::BigInt};
const ColumnType kDateTime{SqlKind::DateTime, 0, 0, 3, false};
const ColumnType kName{SqlKind::NVarChar, 128};

Bytes lsn(int n) {
  Bytes b(10, 0);
  b[9] = static_cast<std::uint8_t>(n);
  return b;
}
// 2026-01-0d hh:00:00 as a datetime2 value.
DateTime2 at(int day, int hour) {
  return DateTime2{static_cast<std::int32_t>(739615 + day), hour * 36000000000LL};  // 739616: 2026-01-01
}

struct Counters {
  int rows_read = 0;
  ScanHints hints;                // the last scan's with ranges
  std::vector<ScanHints> ranged;  // every fake scan's with ranges, in order
};

// A relation over literal rows; it counts what it hands out, so a test can see streaming.
class FakeRelation final : public Relation {
 public:
  FakeRelation(std::vector<RelColumn> columns, std::vector<std::vector<Value>> rows, std::vector<std::string> order,
               std::shared_ptr<Counters> counters)
      : columns_(std::move(columns)),
        rows_(std::move(rows)),
        order_(std::move(order)),
        counters_(std::move(counters)) {}
  const std::vector<RelColumn>& columns() const override { return columns_; }
  std::vector<std::string> ordered_by() const override { return order_; }
  std::unique_ptr<RowStream> scan(const ScanHints& hints) override {
    if (!hints.ranges.empty()) {
      counters_->hints = hints;
      counters_->ranged.push_back(hints);
    }
    struct Stream final : RowStream {
      const std::vector<std::vector<Value>>* rows;
      std::shared_ptr<Counters> counters;
      std::size_t at = 0;
      bool next(std::vector<Value>& row) override {
        if (at >= rows->size()) return false;
        row = (*rows)[at++];
        ++counters->rows_read;
        return true;
      }
    };
    auto s = std::make_unique<Stream>();
    s->rows = &rows_;
    s->counters = counters_;
    return s;
  }

 private:
  std::vector<RelColumn> columns_;
  std::vector<std::vector<Value>> rows_;
  std::vector<std::string> order_;
  std::shared_ptr<Counters> counters_;
};

// A relation of n generated rows (id 1..n), never held: the streaming test's million rows.
class Generated final : public Relation {
 public:
  Generated(std::int64_t n, std::shared_ptr<Counters> c) : n_(n), counters_(std::move(c)) {}
  const std::vector<RelColumn>& columns() const override { return columns_; }
  std::vector<std::string> ordered_by() const override { return {"id"}; }
  std::unique_ptr<RowStream> scan(const ScanHints& hints) override {
    counters_->hints = hints;
    struct Stream final : RowStream {
      std::int64_t n, i = 0;
      std::shared_ptr<Counters> counters;
      bool next(std::vector<Value>& row) override {
        if (i >= n) return false;
        row.assign({Value{++i}});
        ++counters->rows_read;
        return true;
      }
    };
    auto s = std::make_unique<Stream>();
    s->n = n_;
    s->counters = counters_;
    return s;
  }

 private:
  std::int64_t n_;
  std::shared_ptr<Counters> counters_;
  std::vector<RelColumn> columns_{{"id", ColumnType{SqlKind::BigInt}, false}};
};

class FakeCatalog final : public Catalog {
 public:
  std::shared_ptr<Counters> counters = std::make_shared<Counters>();

  std::unique_ptr<Relation> relation(const ObjectName& name) override {
    const std::string n = lower(joined(name));
    if (n == "cdc.lsn_time_mapping") {
      return std::make_unique<FakeRelation>(
          std::vector<RelColumn>{{"start_lsn", kLsn}, {"tran_begin_time", kDateTime}, {"tran_end_time", kDateTime}},
          std::vector<std::vector<Value>>{
              {lsn(1), at(1, 10), at(1, 10)}, {lsn(2), at(2, 11), at(2, 11)}, {lsn(3), at(3, 12), at(3, 12)}},
          std::vector<std::string>{"start_lsn"}, counters);
    }
    if (n == "cdc.dbo_orders_ct") {
      const ColumnType guid{SqlKind::UniqueIdentifier, 16};
      const ColumnType time{SqlKind::Time, 0, 0, 7, false};
      const ColumnType dto{SqlKind::DateTimeOffset, 0, 0, 7, false};
      Bytes g{0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF};
      return std::make_unique<FakeRelation>(
          std::vector<RelColumn>{{"__$start_lsn", kLsn},
                                 {"__$seqval", kLsn},
                                 {"__$operation", kInt},
                                 {"__$command_id", kInt},
                                 {"order_id", kInt},
                                 {"note", kName},
                                 {"t", time},
                                 {"g", guid},
                                 {"ts", dto}},
          std::vector<std::vector<Value>>{
              {lsn(1), lsn(1), std::int64_t{2}, std::int64_t{1}, std::int64_t{1}, std::string("one"),
               DateTime2{0, 452961234560LL}, g, DateTimeOffset{at(1, 8), 120}},
              {lsn(2), lsn(2), std::int64_t{2}, std::int64_t{1}, std::int64_t{2}, std::monostate{}, std::monostate{},
               std::monostate{}, std::monostate{}},
              {lsn(3), lsn(3), std::int64_t{4}, std::int64_t{1}, std::int64_t{1}, std::string("uno"), std::monostate{},
               std::monostate{}, std::monostate{}},
              {lsn(4), lsn(4), std::int64_t{1}, std::int64_t{1}, std::int64_t{2}, std::monostate{}, std::monostate{},
               std::monostate{}, std::monostate{}}},
          std::vector<std::string>{"__$start_lsn", "__$command_id", "__$seqval", "__$operation"}, counters);
    }
    if (n == "dbo.orders") {
      std::vector<std::vector<Value>> rows;
      for (std::int64_t id = 1; id <= 5; ++id) {
        rows.push_back({id, std::string(id % 2 == 0 ? "even" : "odd"), Decimal{id * 150}});
      }
      return std::make_unique<FakeRelation>(
          std::vector<RelColumn>{
              {"order_id", kInt}, {"note", kName}, {"amount", ColumnType{SqlKind::Decimal, 17, 10, 2}}},
          rows, std::vector<std::string>{"order_id"}, counters);
    }
    if (n == "sys.partitions") {
      return std::make_unique<FakeRelation>(
          std::vector<RelColumn>{{"object_id", kInt}, {"index_id", kInt}, {"rows", kBig}},
          std::vector<std::vector<Value>>{{std::int64_t{1001}, std::int64_t{1}, std::int64_t{5}},
                                          {std::int64_t{1001}, std::int64_t{2}, std::int64_t{5}},
                                          {std::int64_t{7}, std::int64_t{0}, std::int64_t{9}}},
          std::vector<std::string>{}, counters);
    }
    if (n == "sys.columns") {
      return std::make_unique<FakeRelation>(
          std::vector<RelColumn>{{"object_id", kInt},
                                 {"name", kName},
                                 {"column_id", kInt},
                                 {"system_type_id", ColumnType{SqlKind::TinyInt}},
                                 {"max_length", ColumnType{SqlKind::SmallInt}},
                                 {"precision", ColumnType{SqlKind::TinyInt}},
                                 {"scale", ColumnType{SqlKind::TinyInt}},
                                 {"is_computed", ColumnType{SqlKind::Bit}},
                                 {"collation_name", kName}},
          std::vector<std::vector<Value>>{
              {std::int64_t{1001}, std::string("note"), std::int64_t{2}, std::int64_t{231}, std::int64_t{100},
               std::int64_t{0}, std::int64_t{0}, false, std::string("SQL_Latin1_General_CP1_CI_AS")},
              {std::int64_t{1001}, std::string("order_id"), std::int64_t{1}, std::int64_t{56}, std::int64_t{4},
               std::int64_t{10}, std::int64_t{0}, false, std::monostate{}},
              {std::int64_t{7}, std::string("other"), std::int64_t{1}, std::int64_t{56}, std::int64_t{4},
               std::int64_t{10}, std::int64_t{0}, false, std::monostate{}}},
          std::vector<std::string>{}, counters);
    }
    if (n == "sys.time_zone_info") {
      return std::make_unique<FakeRelation>(
          std::vector<RelColumn>{{"name", kName}},
          std::vector<std::vector<Value>>{{std::string("UTC")}, {std::string("Pacific Standard Time")}},
          std::vector<std::string>{}, counters);
    }
    if (n == "sys.dm_exec_session_wait_stats") {
      return std::make_unique<FakeRelation>(
          std::vector<RelColumn>{
              {"session_id", ColumnType{SqlKind::SmallInt}}, {"wait_type", kName}, {"wait_time_ms", kBig}},
          std::vector<std::vector<Value>>{{std::int64_t{51}, std::string("ASYNC_NETWORK_IO"), std::int64_t{12}},
                                          {std::int64_t{52}, std::string("ASYNC_NETWORK_IO"), std::int64_t{99}}},
          std::vector<std::string>{}, counters);
    }
    if (n == "big") return std::make_unique<Generated>(1000000, counters);
    return nullptr;
  }

  std::unique_ptr<Relation> function(const ObjectName& name, const std::vector<TypedValue>& args) override {
    if (lower(joined(name)) != "cdc.fn_cdc_get_all_changes_dbo_orders") return nullptr;
    // The change table's rows between two LSNs: enough to show a function in FROM.
    auto all = relation({"cdc", "dbo_orders_CT"});
    std::vector<std::vector<Value>> rows;
    auto stream = all->scan({});
    for (std::vector<Value> r; stream->next(r);) {
      const TypedValue l{kLsn, r[0]};
      if (compare(l, args[0]) >= 0 && compare(l, args[1]) <= 0) rows.push_back({r[0], r[2], r[4]});
    }
    return std::make_unique<FakeRelation>(
        std::vector<RelColumn>{{"__$start_lsn", kLsn}, {"__$operation", kInt}, {"order_id", kInt}}, rows,
        std::vector<std::string>{"__$start_lsn"}, counters);
  }

  std::optional<TypedValue> scalar(const ObjectName& name, const std::vector<TypedValue>& args) override {
    const std::string n = lower(joined(name));
    if (n == "sys.fn_cdc_get_max_lsn") return TypedValue{kLsn, lsn(4)};
    if (n == "sys.fn_cdc_get_min_lsn")
      return TypedValue{kLsn, text_of(args[0], 0) == "dbo_orders" ? Value{lsn(1)} : Value{}};
    if (n == "object_id") {
      return TypedValue{kInt, is_null(args[0].value) || lower(text_of(args[0], 0)) != "[dbo].[orders]"
                                  ? Value{}
                                  : Value{std::int64_t{1001}}};
    }
    if (n == "type_name") {
      if (is_null(args[0].value)) return TypedValue{kName, std::monostate{}};
      return TypedValue{kName, std::string(std::get<std::int64_t>(args[0].value) == 56 ? "int" : "nvarchar")};
    }
    if (n == "has_perms_by_name") return TypedValue{kInt, std::int64_t{1}};
    if (n == "col_length") return TypedValue{ColumnType{SqlKind::SmallInt}, std::int64_t{4}};
    if (n == "current_timezone_id") return TypedValue{kName, std::string("UTC")};
    return std::nullopt;
  }
};

struct Result {
  std::vector<Column> columns;
  std::vector<std::vector<Value>> rows;
};

class Select : public ::testing::Test {
 protected:
  FakeCatalog catalog;

  Result run(const std::string& sql, Params params = {}) {
    auto statements = split_statements(lex(sql));
    EXPECT_EQ(statements.size(), 1u);
    RowSource src = run_select(parse_select(statements.at(0)), catalog, std::move(params));
    Result r{src.columns, {}};
    for (std::vector<Value> row; src.next(row);) r.rows.push_back(row);
    return r;
  }

  // The error number a statement raises, 0 when it runs.
  int error_of(const std::string& sql, Params params = {}) {
    try {
      run(sql, std::move(params));
    } catch (const Error& e) {
      last_message = e.what();
      return e.number();
    }
    return 0;
  }
  std::string last_message;
};

Params text_params(const std::vector<std::string>& values) {
  Params p;
  for (std::size_t i = 0; i < values.size(); ++i) {
    p["@p" + std::to_string(i + 1)] = TypedValue{ColumnType{SqlKind::NVarChar, 4000}, values[i]};
  }
  return p;
}

std::vector<std::string> names(const Result& r) {
  std::vector<std::string> out;
  for (const auto& c : r.columns) out.push_back(c.name);
  return out;
}

Value text(const char* s) { return std::string(s); }
Value i64(std::int64_t v) { return v; }

// --- the backends' statements (statements.py) ---

TEST_F(Select, MaxLsnIsTheCatalogsLsnAsVarchar22Text) {
  const Result r = run("SELECT CONVERT(varchar(22), sys.fn_cdc_get_max_lsn(), 1) AS max_lsn;");
  EXPECT_EQ(names(r), std::vector<std::string>{"max_lsn"});
  EXPECT_EQ(r.columns[0].type.kind, SqlKind::VarChar);
  EXPECT_EQ(r.columns[0].type.length, 22);
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{text("0x00000000000000000004")}}));
}

TEST_F(Select, MinLsnTakesItsCaptureInstanceAsAParameter) {
  const Result r =
      run("SELECT CONVERT(varchar(22), sys.fn_cdc_get_min_lsn(@P1), 1) AS min_lsn;", text_params({"dbo_orders"}));
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{text("0x00000000000000000001")}}));
  const Result none =
      run("SELECT CONVERT(varchar(22), sys.fn_cdc_get_min_lsn(@P1), 1) AS min_lsn;", text_params({"x"}));
  EXPECT_EQ(none.rows, (std::vector<std::vector<Value>>{{Value{}}}));
}

TEST_F(Select, CommitTimeInUtcIsTheNewestMappingAtOrBelowTheLsn) {
  const Result r =
      run("SELECT TOP (1) CONVERT(datetime2(3), m.tran_end_time) AS commit_ts FROM cdc.lsn_time_mapping AS m WHERE "
          "m.start_lsn <= CONVERT(binary(10), @P1, 1) ORDER BY m.start_lsn DESC;",
          text_params({"0x00000000000000000002"}));
  EXPECT_EQ(names(r), std::vector<std::string>{"commit_ts"});
  EXPECT_EQ(r.columns[0].type.kind, SqlKind::DateTime2);
  EXPECT_EQ(r.columns[0].type.scale, 3);
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{at(2, 11)}}));
  // The hint carries the upper bound, as binary(10).
  ASSERT_EQ(catalog.counters->hints.ranges.size(), 1u);
  EXPECT_EQ(catalog.counters->hints.ranges[0].column, "start_lsn");
  EXPECT_FALSE(catalog.counters->hints.ranges[0].lo);
  EXPECT_EQ(catalog.counters->hints.ranges[0].hi->value, Value{lsn(2)});
}

TEST_F(Select, CommitTimeWithAFixedOffsetSubtractsItsMinutes) {
  Params p = text_params({"", "0x00000000000000000003"});
  p["@p1"] = TypedValue{kInt, std::int64_t{120}};
  const Result r =
      run("SELECT TOP (1) DATEADD(minute, -@P1, CONVERT(datetime2(3), m.tran_end_time)) AS commit_ts FROM "
          "cdc.lsn_time_mapping AS m WHERE m.start_lsn <= CONVERT(binary(10), @P2, 1) ORDER BY m.start_lsn DESC;",
          p);
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{at(3, 10)}}));
}

TEST_F(Select, CommitTimeInAZoneAppliesTheZonesRulesOfThatDate) {
  // 2026-01-03 12:00 in New York (EST, -05:00) is 17:00 UTC.
  const Result r =
      run("SELECT TOP (1) CONVERT(datetime2(3), (m.tran_end_time AT TIME ZONE @P1) AT TIME ZONE 'UTC') AS commit_ts "
          "FROM cdc.lsn_time_mapping AS m WHERE m.start_lsn <= CONVERT(binary(10), @P2, 1) ORDER BY m.start_lsn DESC;",
          text_params({"Eastern Standard Time", "0x00000000000000000009"}));
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{at(3, 17)}}));
}

TEST_F(Select, AtTimeZoneMovesAGapTimeAheadAndGivesARepeatedTimeTheOffsetBeforeTheChange) {
  // learn.microsoft.com/sql/t-sql/queries/at-time-zone-transact-sql: in Central Europe 2022-03-27
  // 02:01 (in the gap) is 03:01 +02:00 and 2022-10-30 02:01 (repeated) is 02:01 +02:00.
  const Result r = run(
      "SELECT CONVERT(datetime2(0), '2022-03-27T02:01:00', 126) AT TIME ZONE 'Central European Standard Time' AS gap, "
      "CONVERT(datetime2(0), '2022-10-30T02:01:00', 126) AT TIME ZONE 'Central European Standard Time' AS repeated;");
  const std::int64_t minute = 600000000LL;
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{DateTimeOffset{DateTime2{738240, 61 * minute}, 120},
                                                      DateTimeOffset{DateTime2{738457, 1 * minute}, 120}}}));
}

TEST_F(Select, NthCommitAfterSkipsWithOffsetAndFetch) {
  const Result r =
      run("SELECT CONVERT(varchar(22), m.start_lsn, 1) AS lsn FROM cdc.lsn_time_mapping AS m WHERE m.start_lsn > "
          "CONVERT(binary(10), @P1, 1) ORDER BY m.start_lsn OFFSET 1 ROWS FETCH NEXT 1 ROWS ONLY;",
          text_params({"0x00000000000000000001"}));
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{text("0x00000000000000000003")}}));
  EXPECT_FALSE(catalog.counters->hints.ranges.at(0).lo->inclusive);
}

TEST_F(Select, SplitPointsGiveEachNtileItsLastLsnAndRowCount) {
  const Result r =
      run("SELECT x.t AS tile, CONVERT(varchar(22), MAX(x.l), 1) AS last_lsn, COUNT_BIG(*) AS row_count FROM (SELECT "
          "[__$start_lsn] AS l, NTILE(2) OVER (ORDER BY [__$start_lsn]) AS t FROM cdc.[dbo_orders_CT] WHERE "
          "[__$start_lsn] BETWEEN CONVERT(binary(10), @P1, 1) AND CONVERT(binary(10), @P2, 1)) AS x GROUP BY x.t ORDER "
          "BY x.t;",
          text_params({"0x00000000000000000001", "0x00000000000000000003"}));
  EXPECT_EQ(names(r), (std::vector<std::string>{"tile", "last_lsn", "row_count"}));
  EXPECT_EQ(r.columns[0].type.kind, SqlKind::BigInt);
  EXPECT_EQ(r.columns[2].type.kind, SqlKind::BigInt);
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{i64(1), text("0x00000000000000000002"), i64(2)},
                                                     {i64(2), text("0x00000000000000000003"), i64(1)}}));
}

TEST_F(Select, ChangeRowsJoinTheMappingAndConvertEachColumnAsSqlServerPrintsIt) {
  const Result r =
      run("SELECT CONVERT(varchar(22), ct.[__$start_lsn], 1) AS [_start_lsn], CONVERT(varchar(22), ct.[__$seqval], 1) "
          "AS [_seqval], ct.[__$operation] AS [_operation], ct.[__$command_id] AS [_command_id], CONVERT(datetime2(3), "
          "m.tran_end_time) AS [_commit_ts], ct.[order_id] AS [order_id], ct.[note] AS [note], CONVERT(nvarchar(max), "
          "ct.[t]) AS [t], CONVERT(nvarchar(max), ct.[g]) AS [g], CONVERT(datetime2(6), SWITCHOFFSET(ct.[ts], "
          "'+00:00')) AS [ts] FROM cdc.[dbo_orders_CT] AS ct LEFT JOIN cdc.lsn_time_mapping AS m ON m.start_lsn = "
          "ct.[__$start_lsn] WHERE ct.[__$start_lsn] BETWEEN CONVERT(binary(10), @P1, 1) AND CONVERT(binary(10), @P2, "
          "1) ORDER BY ct.[__$start_lsn], ct.[__$command_id], ct.[__$seqval], ct.[__$operation];",
          text_params({"0x00000000000000000001", "0x00000000000000000004"}));
  EXPECT_EQ(names(r), (std::vector<std::string>{"_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts",
                                                "order_id", "note", "t", "g", "ts"}));
  EXPECT_EQ(r.columns[2].type.kind, SqlKind::Int);
  EXPECT_EQ(r.columns[6].type.kind, SqlKind::NVarChar);
  EXPECT_EQ(r.columns[6].type.length, 128);
  EXPECT_EQ(r.columns[7].type.length, kMax);
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0], (std::vector<Value>{text("0x00000000000000000001"), text("0x00000000000000000001"), i64(2),
                                           i64(1), at(1, 10), i64(1), text("one"), text("12:34:56.1234560"),
                                           text("00112233-4455-6677-8899-AABBCCDDEEFF"), at(1, 8)}));
  // The fourth change has no mapping entry: LEFT JOIN keeps it with a NULL commit time.
  EXPECT_EQ(r.rows[3][0], text("0x00000000000000000004"));
  EXPECT_EQ(r.rows[3][4], Value{});
  // The change table reads the WHERE's range; the mapping, joined on start_lsn, reads the same
  // range rather than every entry, as a server seeks the mapping for each change row.
  const auto& ranged = catalog.counters->ranged;
  ASSERT_EQ(ranged.size(), 2u);
  ASSERT_EQ(ranged[0].ranges.size(), 1u);
  EXPECT_EQ(ranged[0].ranges[0].column, "__$start_lsn");
  ASSERT_EQ(ranged[1].ranges.size(), 1u);
  EXPECT_EQ(ranged[1].ranges[0].column, "start_lsn");
  ASSERT_TRUE(ranged[1].ranges[0].lo && ranged[1].ranges[0].hi);
  EXPECT_EQ(ranged[1].ranges[0].lo->value, ranged[0].ranges[0].lo->value);
  EXPECT_EQ(ranged[1].ranges[0].hi->value, ranged[0].ranges[0].hi->value);
  EXPECT_TRUE(ranged[1].ranges[0].lo->inclusive && ranged[1].ranges[0].hi->inclusive);
}

TEST_F(Select, TableColumnsReadSysColumnsOfTheObject) {
  const Result r =
      run("SELECT c.name AS name, c.column_id AS column_id, TYPE_NAME(c.system_type_id) AS base_type, c.max_length AS "
          "max_length, c.precision AS precision, c.scale AS scale, c.is_computed AS is_computed, c.collation_name AS "
          "collation_name FROM sys.columns AS c WHERE c.object_id = OBJECT_ID(@P1) ORDER BY c.column_id;",
          text_params({"[dbo].[orders]"}));
  EXPECT_EQ(r.columns[2].type.kind, SqlKind::NVarChar);
  EXPECT_EQ(r.columns[3].type.kind, SqlKind::SmallInt);
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{
                        {text("order_id"), i64(1), text("int"), i64(4), i64(10), i64(0), false, Value{}},
                        {text("note"), i64(2), text("nvarchar"), i64(100), i64(0), i64(0), false,
                         text("SQL_Latin1_General_CP1_CI_AS")}}));
}

TEST_F(Select, ChangeTableAccessCallsTheCatalogsScalars) {
  const Result r =
      run("SELECT HAS_PERMS_BY_NAME(@P1, 'OBJECT', 'SELECT') AS can_select, COL_LENGTH(@P2, '__$command_id') AS "
          "command_id_length;",
          text_params({"cdc.[dbo_orders_CT]", "cdc.[dbo_orders_CT]"}));
  EXPECT_EQ(names(r), (std::vector<std::string>{"can_select", "command_id_length"}));
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{i64(1), i64(4)}}));
}

TEST_F(Select, TheServerZoneAndItsOffsetAreAnswered) {
  EXPECT_EQ(run("SELECT CURRENT_TIMEZONE_ID() AS zone;").rows, (std::vector<std::vector<Value>>{{text("UTC")}}));
  const Result offset = run("SELECT DATEPART(TZOFFSET, SYSDATETIMEOFFSET()) AS offset_minutes;");
  EXPECT_EQ(offset.columns[0].type.kind, SqlKind::Int);
  EXPECT_EQ(offset.rows, (std::vector<std::vector<Value>>{{i64(0)}}));
}

TEST_F(Select, TimeZoneExistsCountsMatchingNamesCaseInsensitively) {
  const Result r = run("SELECT COUNT(*) AS found FROM sys.time_zone_info WHERE name = @P1;", text_params({"utc"}));
  EXPECT_EQ(r.columns[0].type.kind, SqlKind::Int);
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{i64(1)}}));
  EXPECT_EQ(run("SELECT COUNT(*) AS found FROM sys.time_zone_info WHERE name = @P1;", text_params({"Mars"})).rows,
            (std::vector<std::vector<Value>>{{i64(0)}}));
}

TEST_F(Select, PingAndNetworkWait) {
  EXPECT_EQ(run("SELECT 1 AS one;").rows, (std::vector<std::vector<Value>>{{i64(1)}}));
  const Result r =
      run("SELECT wait_time_ms FROM sys.dm_exec_session_wait_stats WHERE session_id = @@SPID AND wait_type = "
          "'ASYNC_NETWORK_IO';");
  EXPECT_EQ(names(r), std::vector<std::string>{"wait_time_ms"});
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{i64(12)}}));
}

// --- snapshot.py and chunks.py ---

TEST_F(Select, KeyExtentIsMinAndMax) {
  const Result r = run("SELECT MIN([order_id]) AS lo, MAX([order_id]) AS hi FROM [dbo].[orders];");
  EXPECT_EQ(r.columns[0].type.kind, SqlKind::Int);
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{i64(1), i64(5)}}));
}

TEST_F(Select, KeyTilesGiveTheFirstKeyOfEachTileAfterTheFirst) {
  const Result r =
      run("SELECT y.t AS tile, CONVERT(nvarchar(4000), y.[order_id]) AS [k0] FROM (SELECT x.*, ROW_NUMBER() OVER "
          "(PARTITION BY x.t ORDER BY x.[order_id]) AS p FROM (SELECT [order_id], NTILE(2) OVER (ORDER BY [order_id]) "
          "AS t FROM [dbo].[orders]) AS x) AS y WHERE y.p = 1 AND y.t > 1 ORDER BY y.t;");
  EXPECT_EQ(names(r), (std::vector<std::string>{"tile", "k0"}));
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{i64(2), text("4")}}));
}

TEST_F(Select, TableRowsAreAUnionOfSeekablePieces) {
  Params p;
  p["@p1"] = TypedValue{ColumnType{SqlKind::VarChar, 1}, std::string("2")};
  p["@p2"] = TypedValue{ColumnType{SqlKind::VarChar, 1}, std::string("4")};
  p["@p3"] = TypedValue{ColumnType{SqlKind::VarChar, 1}, std::string("2")};
  p["@p4"] = TypedValue{ColumnType{SqlKind::VarChar, 1}, std::string("4")};
  const Result r =
      run("SELECT t.[order_id] AS [order_id], t.[note] AS [note] FROM [dbo].[orders] AS t WHERE t.[order_id] > "
          "CAST(@P1 AS int) AND (((t.[order_id] IS NULL OR t.[order_id] < CAST(@P2 AS int)))) UNION ALL SELECT "
          "t.[order_id] AS [order_id], t.[note] AS [note] FROM [dbo].[orders] AS t WHERE t.[order_id] = CAST(@P3 AS "
          "int) AND (((t.[order_id] IS NULL OR t.[order_id] < CAST(@P4 AS int))));",
          p);
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{i64(3), text("odd")}, {i64(2), text("even")}}));
}

TEST_F(Select, KeyBucketsCountRowsPerBucketInDecimalArithmetic) {
  // Buckets(1, 5, 2): width 2, no extra; keys 1..4 fall in buckets 0, 0, 1, 1.
  Params p;
  const std::vector<std::string> values{"1", "1", "1", "3", "3", "0", "1", "1", "2", "2", "1", "4"};
  for (std::size_t i = 0; i < values.size(); ++i) {
    p["@p" + std::to_string(i + 1)] = TypedValue{ColumnType{SqlKind::VarChar, 10}, values[i]};
  }
  const Result r = run(
      "SELECT b.j AS bucket, COUNT_BIG(*) AS row_count FROM (SELECT CONVERT(decimal(38,0), CASE WHEN "
      "CONVERT(decimal(38,0), t.[order_id]) < CONVERT(decimal(38,0), @P1) THEN ((CONVERT(decimal(38,0), "
      "t.[order_id]) - CONVERT(decimal(38,0), @P2)) - (CONVERT(decimal(38,0), t.[order_id]) - CONVERT(decimal(38,0), "
      "@P3)) % CONVERT(decimal(38,0), @P4)) / CONVERT(decimal(38,0), @P5) ELSE CONVERT(decimal(38,0), @P6) + "
      "((CONVERT(decimal(38,0), t.[order_id]) - CONVERT(decimal(38,0), @P7)) - (CONVERT(decimal(38,0), t.[order_id]) "
      "- CONVERT(decimal(38,0), @P8)) % CONVERT(decimal(38,0), @P9)) / CONVERT(decimal(38,0), @P10) END) AS j FROM "
      "[dbo].[orders] AS t WHERE t.[order_id] >= CAST(@P11 AS int) AND t.[order_id] <= CAST(@P12 AS int)) AS b "
      "GROUP BY b.j ORDER BY b.j;",
      p);
  EXPECT_EQ(names(r), (std::vector<std::string>{"bucket", "row_count"}));
  EXPECT_EQ(r.columns[0].type.kind, SqlKind::Decimal);
  EXPECT_EQ(r.columns[0].type.precision, 38);
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{Decimal{0}, i64(2)}, {Decimal{1}, i64(2)}}));
}

TEST_F(Select, KeyAtUpToACeilingReadsOnePiece) {
  Params p = text_params({"3", "3"});
  const Result r = run(
      "SELECT CONVERT(nvarchar(4000), v.[order_id]) AS [k0] FROM (SELECT u.*, ROW_NUMBER() OVER (ORDER BY "
      "u.[order_id]) AS r FROM (SELECT * FROM (SELECT TOP (1) t.[order_id] FROM [dbo].[orders] AS t WHERE 1 = 1 AND "
      "(((t.[order_id] IS NULL OR t.[order_id] < CAST(@P1 AS int))) OR (t.[order_id] = CAST(@P2 AS int))) ORDER BY "
      "t.[order_id]) AS p0) AS u) AS v WHERE v.r = 1;",
      p);
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{text("1")}}));
}

TEST_F(Select, KeyAtNumbersTheUnionOfTopPieces) {
  Params p;
  p["@p1"] = TypedValue{ColumnType{SqlKind::VarChar, 1}, std::string("2")};
  const Result r =
      run("SELECT CONVERT(nvarchar(4000), v.[order_id]) AS [k0] FROM (SELECT u.*, ROW_NUMBER() OVER (ORDER BY "
          "u.[order_id]) AS r FROM (SELECT * FROM (SELECT TOP (2) t.[order_id] FROM [dbo].[orders] AS t WHERE "
          "t.[order_id] > CAST(@P1 AS int) ORDER BY t.[order_id]) AS p0) AS u) AS v WHERE v.r = 2;",
          p);
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{text("4")}}));
}

TEST_F(Select, KeyMaxReadsTheHighestKeyDescending) {
  const Result r =
      run("SELECT TOP (1) CONVERT(nvarchar(4000), t.[order_id]) AS [k0] FROM [dbo].[orders] AS t ORDER BY t.[order_id] "
          "DESC;");
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{text("5")}}));
}

TEST_F(Select, RowCountSumsThePartitionsOfTheHeapOrClusteredIndex) {
  const Result r =
      run("SELECT SUM(p.rows) AS row_count FROM sys.partitions AS p WHERE p.object_id = OBJECT_ID(@P1) AND p.index_id "
          "IN (0, 1);",
          text_params({"[dbo].[orders]"}));
  EXPECT_EQ(r.columns[0].type.kind, SqlKind::BigInt);
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{i64(5)}}));
}

// --- what a person types ---

TEST_F(Select, AFunctionInFromAndStarExpandToItsColumns) {
  const Result r = run(
      "SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_orders(0x00000000000000000002, sys.fn_cdc_get_max_lsn(), N'all') "
      "AS c WHERE c.__$operation <> 1");
  EXPECT_EQ(names(r), (std::vector<std::string>{"__$start_lsn", "__$operation", "order_id"}));
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{lsn(2), i64(2), i64(2)}, {lsn(3), i64(4), i64(1)}}));
}

TEST_F(Select, ExpressionsFollowSqlServersTypesAndThreeValuedLogic) {
  const Result r =
      run("SELECT 7 / 2, 7 % 3, 1.50 * 2, 'a' + N'b', CASE WHEN NULL = NULL THEN 'yes' ELSE 'no' END, "
          "ISNULL(NULL, 3), COALESCE(NULL, NULL, 'z'), CAST('12' AS bigint) + 1, CONVERT(varchar(10), 0x0A0B, 2), "
          "CASE WHEN 'ABC' = 'abc' THEN 1 ELSE 0 END, CASE WHEN 'abcd' LIKE 'a_c%' THEN 1 END, "
          "CASE WHEN NOT (NULL > 1) THEN 1 ELSE 0 END, CASE WHEN 2 BETWEEN 1 AND 3 AND 4 NOT IN (1, 2) THEN 1 END");
  EXPECT_EQ(names(r), std::vector<std::string>(13, ""));
  EXPECT_EQ(r.columns[2].type.kind, SqlKind::Decimal);
  EXPECT_EQ(r.columns[7].type.kind, SqlKind::BigInt);
  EXPECT_EQ(r.rows.at(0), (std::vector<Value>{i64(3), i64(1), Decimal{300}, text("ab"), text("no"), i64(3), text("z"),
                                              i64(13), text("0A0B"), i64(1), i64(1), i64(0), i64(1)}));
}

TEST_F(Select, DatesAndTimesPrintAsSqlServerPrintsThem) {
  const Result r =
      run("SELECT CONVERT(nvarchar(max), CAST('2026-01-02 03:04:05.1234567' AS datetime2(7))), "
          "CONVERT(nvarchar(30), CAST('2026-01-02 03:04:05.5' AS datetime), 126), "
          "CONVERT(nvarchar(max), CAST('2026-01-02 03:04:05 +02:00' AS datetimeoffset(0))), "
          "DATEPART(TZOFFSET, CAST('2026-01-02 03:04:05 -05:30' AS datetimeoffset)), "
          "CONVERT(nvarchar(max), DATEADD(day, 30, CAST('2026-01-02' AS date)))");
  EXPECT_EQ(r.rows.at(0), (std::vector<Value>{text("2026-01-02 03:04:05.1234567"), text("2026-01-02T03:04:05.500"),
                                              text("2026-01-02 03:04:05 +02:00"), i64(-330), text("2026-02-01")}));
}

TEST_F(Select, InnerJoinMatchesOnlyRowsWithAPartner) {
  const Result r =
      run("SELECT ct.order_id, m.start_lsn FROM cdc.dbo_orders_CT AS ct INNER JOIN cdc.lsn_time_mapping AS m ON "
          "m.start_lsn = ct.__$start_lsn WHERE ct.__$operation = 2");
  EXPECT_EQ(r.rows, (std::vector<std::vector<Value>>{{i64(1), lsn(1)}, {i64(2), lsn(2)}}));
}

TEST_F(Select, AChangeTableReadStreamsItsRowsWithoutHoldingThem) {
  RowSource src =
      run_select(parse_select(lex("SELECT b.id FROM big AS b WHERE b.id >= 10 ORDER BY b.id")), catalog, {});
  std::vector<Value> row;
  ASSERT_TRUE(src.next(row));
  EXPECT_EQ(row, std::vector<Value>{i64(10)});
  // Ten rows were read to find the first match; none of the million was collected.
  EXPECT_EQ(catalog.counters->rows_read, 10);
  std::int64_t count = 1;
  while (src.next(row)) ++count;
  EXPECT_EQ(count, 999991);
  EXPECT_EQ(catalog.counters->hints.ranges.at(0).lo->value, Value{i64(10)});
}

TEST_F(Select, AnOrderByOutsideTheRelationsOrderSortsAllRows) {
  RowSource src = run_select(parse_select(lex("SELECT TOP (2) b.id FROM big AS b ORDER BY b.id DESC")), catalog, {});
  std::vector<Value> row;
  ASSERT_TRUE(src.next(row));
  EXPECT_EQ(row, std::vector<Value>{i64(1000000)});
  EXPECT_EQ(catalog.counters->rows_read, 1000000);
}

// --- errors, as SQL Server numbers them ---

TEST_F(Select, EachBadInputGetsSqlServersErrorNumber) {
  EXPECT_EQ(error_of("SELECT x FROM dbo.nothing"), 208);
  EXPECT_EQ(last_message, "Invalid object name 'dbo.nothing'.");
  EXPECT_EQ(error_of("SELECT nope FROM dbo.orders"), 207);
  EXPECT_EQ(last_message, "Invalid column name 'nope'.");
  EXPECT_EQ(error_of("SELECT start_lsn FROM cdc.lsn_time_mapping a JOIN cdc.lsn_time_mapping b ON 1 = 1"), 209);
  EXPECT_EQ(error_of("SELECT z.order_id FROM dbo.orders AS t"), 4104);
  EXPECT_EQ(last_message, "The multi-part identifier \"z.order_id\" could not be bound.");
  EXPECT_EQ(error_of("SELECT 1 +"), 102);
  EXPECT_EQ(last_message, "Incorrect syntax near '+'.");
  EXPECT_EQ(error_of("SELECT note, COUNT(*) FROM dbo.orders"), 8120);
  EXPECT_EQ(error_of("SELECT CAST('abc' AS int)"), 245);
  EXPECT_EQ(last_message, "Conversion failed when converting the varchar value 'abc' to data type int.");
  EXPECT_EQ(error_of("SELECT CAST('abc' AS bigint)"), 8114);
  EXPECT_EQ(error_of("SELECT CONVERT(binary(10), 'zz', 1)"), 8114);
  EXPECT_EQ(error_of("SELECT 1 / 0"), 8134);
  EXPECT_EQ(last_message, "Divide by zero error encountered.");
  EXPECT_EQ(error_of("SELECT nosuch(1)"), 195);
  EXPECT_EQ(error_of("SELECT dbo.nosuch(1)"), 4121);
  EXPECT_EQ(error_of("SELECT ISNULL(1)"), 174);
  EXPECT_EQ(error_of("SELECT @nope"), 137);
  EXPECT_EQ(error_of("SELECT * FROM cdc.fn_cdc_get_all_changes_nothing(1, 2, 'all')"), 208);
}

TEST_F(Select, AStatementNestedTooDeeplyGetsError191NotACrash) {
  const auto repeat = [](const std::string& part, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += part;
    return out;
  };
  EXPECT_EQ(error_of("SELECT " + repeat("(", 100000) + "1" + repeat(")", 100000)), 191);
  EXPECT_EQ(error_of("SELECT 1" + repeat(" + 1", 100000)), 191);
  EXPECT_EQ(error_of("SELECT 1 WHERE " + repeat("NOT ", 100000) + "1 = 1"), 191);
  EXPECT_EQ(error_of("SELECT " + repeat("- ", 100000) + "1"), 191);
  EXPECT_EQ(error_of("SELECT * FROM " + repeat("(SELECT * FROM ", 1000) + "t" + repeat(") AS x", 1000)), 191);
  EXPECT_EQ(error_of("SELECT " + repeat("ABS(", 100000) + "1" + repeat(")", 100000)), 191);
  // Within the bound, nesting works.
  EXPECT_EQ(error_of("SELECT " + repeat("(", 50) + "1" + repeat(")", 50)), 0) << last_message;
  EXPECT_EQ(error_of("SELECT 1" + repeat(" + 1", 50)), 0) << last_message;
}

TEST_F(Select, AnErrorInALaterRowSurfacesWhileStreaming) {
  RowSource src = run_select(parse_select(lex("SELECT 10 / (3 - o.order_id) FROM dbo.orders AS o")), catalog, {});
  std::vector<Value> row;
  ASSERT_TRUE(src.next(row));
  EXPECT_EQ(row, std::vector<Value>{i64(5)});
  ASSERT_TRUE(src.next(row));
  try {
    (void)src.next(row);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.number(), 8134);
  }
}

}  // namespace
}  // namespace mssqlcdc::tds
