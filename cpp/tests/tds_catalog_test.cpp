// The emulator catalog: relations, table-valued CDC functions and scalar functions, read the way
// the query engine reads them. Oracles are literal values and the emulator's own reader calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "tds/src/builtins.hpp"
#include "tds/src/catalog.hpp"
#include "tds/src/stored.hpp"
#include "tds_catalog_test_util.hpp"

namespace mssqlcdc::tds {
namespace {

using emu::test::D;
using emu::test::I;
using emu::test::insert;
using emu::test::kSecond;
using emu::test::kStart;
using emu::test::S;
using emu::test::TempFile;
using Rows = std::vector<std::vector<Value>>;

Rows rows_of(Relation& r, const ScanHints& hints = {}) {
  Rows out;
  auto stream = r.scan(hints);
  std::vector<Value> row;
  while (stream->next(row)) out.push_back(row);
  return out;
}

std::vector<std::string> names_of(const Relation& r) {
  std::vector<std::string> out;
  for (const auto& c : r.columns()) out.push_back(c.name);
  return out;
}

std::vector<std::string> types_of(const Relation& r) {
  std::vector<std::string> out;
  for (const auto& c : r.columns()) out.push_back(type_name(c.type) + (c.nullable ? "" : " not null"));
  return out;
}

Value lsn(const Lsn& l) { return Bytes(l.bytes().begin(), l.bytes().end()); }
TypedValue text(std::string s) { return {ColumnType{SqlKind::NVarChar, 128}, std::move(s)}; }
TypedValue binary(const Lsn& l) { return {ColumnType{SqlKind::Binary, 10}, lsn(l)}; }
TypedValue integer(std::int64_t n) { return {ColumnType{SqlKind::Int}, n}; }
Value dec(__int128 unscaled) { return Decimal{unscaled}; }

// dbo.orders with three commits: insert 1 and 2, update 1, delete 2; the emulator's clock
// starts at kStart, commits one second apart.
struct Orders : test::OrdersCatalog {
  Orders() {
    commits.push_back(
        engine->commit({insert("dbo.orders", {{"order_id", I(1)}, {"status", S("new")}, {"amount", D("10.50")}}),
                        insert("dbo.orders", {{"order_id", I(2)}, {"status", S("new")}})},
                       kStart + kSecond));
    commits.push_back(engine->commit({emu::test::update("dbo.orders", {{"order_id", I(1)}, {"status", S("paid")}})},
                                     kStart + 2 * kSecond));
    commits.push_back(engine->commit({emu::test::del("dbo.orders", {{"order_id", I(2)}})}, kStart + 3 * kSecond));
  }

  std::unique_ptr<Relation> relation(ObjectName name) {
    auto r = catalog->relation(name);
    if (r == nullptr) throw std::runtime_error("no relation");
    return r;
  }
  TypedValue scalar(ObjectName name, std::vector<TypedValue> args = {}) {
    auto v = catalog->scalar(name, args);
    if (!v) throw std::runtime_error("no scalar");
    return *v;
  }
};

TEST(TdsCatalog, TheMappingTableHasSqlServersColumnsAndTheReadersEntriesInLsnOrder) {
  Orders o;
  auto r = o.relation({"cdc", "lsn_time_mapping"});
  EXPECT_EQ(names_of(*r),
            (std::vector<std::string>{"start_lsn", "tran_begin_time", "tran_end_time", "tran_id", "tran_begin_lsn"}));
  EXPECT_EQ(types_of(*r),
            (std::vector<std::string>{"binary(10) not null", "datetime", "datetime", "varbinary(10)", "binary(10)"}));
  EXPECT_EQ(r->ordered_by(), std::vector<std::string>{"start_lsn"});
  const auto entries = o.reader.lsn_time_mapping();
  const Rows rows = rows_of(*r);
  ASSERT_EQ(rows.size(), entries.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][0], lsn(entries[i].start_lsn));
    EXPECT_EQ(rows[i][1], Value{micros_to_datetime2(entries[i].begin_time)});
    EXPECT_EQ(rows[i][2], Value{micros_to_datetime2(entries[i].end_time)});
    EXPECT_EQ(rows[i][3], Value{Bytes(entries[i].tran_id.begin(), entries[i].tran_id.end())});
    EXPECT_EQ(rows[i][4], lsn(entries[i].tran_begin_lsn));
  }
}

TEST(TdsCatalog, ARangeHintOnStartLsnReadsOnlyThatRangeOfTheMapping) {
  Orders o;
  auto r = o.relation({"CDC", "LSN_TIME_MAPPING"});  // names resolve case-insensitively
  ScanHints hints;
  hints.ranges.push_back({"start_lsn", Bound{lsn(o.commits[1]), true}, Bound{lsn(o.commits[2]), false}});
  const Rows rows = rows_of(*r, hints);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], lsn(o.commits[1]));
}

TEST(TdsCatalog, AChangeTableStreamsItsRowsWithSqlServersColumnsInTheBackendsOrder) {
  Orders o;
  auto r = o.relation({"cdc", "dbo_orders_CT"});
  EXPECT_EQ(names_of(*r),
            (std::vector<std::string>{"__$start_lsn", "__$end_lsn", "__$seqval", "__$operation", "__$update_mask",
                                      "order_id", "status", "amount", "__$command_id"}));
  EXPECT_EQ(types_of(*r),
            (std::vector<std::string>{"binary(10) not null", "binary(10)", "binary(10) not null", "int not null",
                                      "varbinary(128)", "int", "nvarchar(20)", "decimal(18,2)", "int"}));
  EXPECT_EQ(r->ordered_by(), (std::vector<std::string>{"__$start_lsn", "__$command_id", "__$seqval", "__$operation"}));
  const Rows rows = rows_of(*r);
  ASSERT_EQ(rows.size(), 5u);  // two inserts, an update's two images, a delete
  const std::vector<std::int64_t> ops{2, 2, 3, 4, 1};
  for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i][3], Value{ops[i]}) << i;
  EXPECT_EQ(rows[0][0], lsn(o.commits[0]));
  EXPECT_EQ(rows[0][1], Value{});
  EXPECT_EQ(rows[0][5], Value{std::int64_t{1}});
  EXPECT_EQ(rows[0][6], Value{std::string("new")});
  EXPECT_EQ(rows[0][7], dec(1050));
  EXPECT_EQ(rows[0][8], Value{std::int64_t{1}});
  EXPECT_EQ(rows[1][8], Value{std::int64_t{2}});
  EXPECT_EQ(rows[1][7], Value{});  // amount was never given
  EXPECT_EQ(rows[3][6], Value{std::string("paid")});
  EXPECT_EQ(rows[4][5], Value{std::int64_t{2}});
}

TEST(TdsCatalog, ARangeHintOnTheChangeTablesStartLsnReadsOnlyThoseCommits) {
  Orders o;
  auto r = o.relation({"cdc", "dbo_orders_CT"});
  ScanHints hints;
  hints.ranges.push_back({"__$start_lsn", Bound{lsn(o.commits[1]), true}, Bound{lsn(o.commits[1]), true}});
  const Rows rows = rows_of(*r, hints);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][3], Value{std::int64_t{3}});
  EXPECT_EQ(rows[1][3], Value{std::int64_t{4}});
}

TEST(TdsCatalog, ACapturedTableReadsByKeyInTheDefaultSchemaToo) {
  Orders o;
  o.engine->commit({insert("dbo.orders", {{"order_id", I(-5)}, {"status", S("early")}})}, kStart + 4 * kSecond);
  auto r = o.relation({"orders"});
  EXPECT_EQ(types_of(*r), (std::vector<std::string>{"int not null", "nvarchar(20)", "decimal(18,2)"}));
  EXPECT_EQ(r->ordered_by(), std::vector<std::string>{"order_id"});
  const Rows rows = rows_of(*r);
  EXPECT_EQ(rows, (Rows{{std::int64_t{-5}, std::string("early"), Value{}},
                        {std::int64_t{1}, std::string("paid"), dec(1050)}}));
  ScanHints hints;
  hints.ranges.push_back({"order_id", Bound{std::int64_t{0}, false}, std::nullopt});
  EXPECT_EQ(rows_of(*o.relation({"dbo", "orders"}), hints).size(), 1u);
  EXPECT_TRUE(o.catalog->relation({"dbo", "missing"}) == nullptr);
  EXPECT_TRUE(o.catalog->relation({"sales", "orders"}) == nullptr);
}

TEST(TdsCatalog, SysColumnsDescribesTheSourceTableAsTableColumnsReadsIt) {
  Orders o;
  const auto id = std::get<std::int64_t>(o.scalar({"OBJECT_ID"}, {text("[dbo].[orders]")}).value);
  auto r = o.relation({"sys", "columns"});
  const auto names = names_of(*r);
  ASSERT_GE(names.size(), 14u);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 10),
            (std::vector<std::string>{"object_id", "name", "column_id", "system_type_id", "user_type_id", "max_length",
                                      "precision", "scale", "collation_name", "is_nullable"}));
  Rows mine;
  for (auto& row : rows_of(*r)) {
    if (row[0] == Value{id}) mine.push_back(std::vector<Value>(row.begin() + 1, row.begin() + 10));
  }
  const Value collation{std::string("SQL_Latin1_General_CP1_CI_AS")};
  EXPECT_EQ(mine, (Rows{{std::string("order_id"), std::int64_t{1}, std::int64_t{56}, std::int64_t{56}, std::int64_t{4},
                         std::int64_t{10}, std::int64_t{0}, Value{}, false},
                        {std::string("status"), std::int64_t{2}, std::int64_t{231}, std::int64_t{231}, std::int64_t{40},
                         std::int64_t{0}, std::int64_t{0}, collation, true},
                        {std::string("amount"), std::int64_t{3}, std::int64_t{106}, std::int64_t{106}, std::int64_t{9},
                         std::int64_t{18}, std::int64_t{2}, Value{}, true}}));
  EXPECT_EQ(o.scalar({"TYPE_NAME"}, {integer(231)}).value, Value{std::string("nvarchar")});
  EXPECT_EQ(o.scalar({"type_name"}, {integer(7)}).value, Value{});
}

TEST(TdsCatalog, ObjectIdResolvesQuotedNamesAndObjectNameReturnsThem) {
  Orders o;
  const Value orders = o.scalar({"object_id"}, {text("dbo.orders")}).value;
  ASSERT_TRUE(std::holds_alternative<std::int64_t>(orders));
  EXPECT_EQ(o.scalar({"object_id"}, {text("shop.dbo.[ORDERS]")}).value, orders);
  EXPECT_EQ(o.scalar({"object_id"}, {text("orders"), text("U")}).value, orders);
  EXPECT_EQ(o.scalar({"object_id"}, {text("orders"), text("V")}).value, Value{});
  EXPECT_EQ(o.scalar({"object_id"}, {text("dbo.nothing")}).value, Value{});
  const Value ct = o.scalar({"object_id"}, {text("[cdc].[dbo_orders_CT]")}).value;
  ASSERT_TRUE(std::holds_alternative<std::int64_t>(ct));
  EXPECT_NE(ct, orders);
  EXPECT_EQ(o.scalar({"object_name"}, {{ColumnType{SqlKind::Int}, ct}}).value, Value{std::string("dbo_orders_CT")});
  EXPECT_EQ(o.scalar({"db_name"}).value, Value{std::string("shop")});
}

TEST(TdsCatalog, ChangeTableAccessSeesSelectPermissionAndTheCommandIdLength) {
  Orders o;
  EXPECT_EQ(o.scalar({"HAS_PERMS_BY_NAME"}, {text("[cdc].[dbo_orders_CT]"), text("OBJECT"), text("SELECT")}).value,
            Value{std::int64_t{1}});
  EXPECT_EQ(o.scalar({"has_perms_by_name"}, {text("cdc.nope_CT"), text("OBJECT"), text("SELECT")}).value, Value{});
  EXPECT_EQ(o.scalar({"COL_LENGTH"}, {text("[cdc].[dbo_orders_CT]"), text("__$command_id")}).value,
            Value{std::int64_t{4}});
  EXPECT_EQ(o.scalar({"col_length"}, {text("dbo.orders"), text("STATUS")}).value, Value{std::int64_t{40}});
  EXPECT_EQ(o.scalar({"col_length"}, {text("dbo.orders"), text("nope")}).value, Value{});
  EXPECT_EQ(o.scalar({"col_length"}, {text("dbo.nope"), text("status")}).value, Value{});
}

TEST(TdsCatalog, AllChangesDropsBeforeImagesUnlessAskedAndHasTheFunctionsColumns) {
  Orders o;
  const Lsn min = o.reader.min_lsn("dbo_orders").lsn;
  auto all = o.catalog->function({"cdc", "fn_cdc_get_all_changes_dbo_orders"},
                                 {binary(min), binary(o.commits[2]), text("all")});
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(names_of(*all), (std::vector<std::string>{"__$start_lsn", "__$seqval", "__$operation", "__$update_mask",
                                                      "order_id", "status", "amount"}));
  Rows rows = rows_of(*all);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[2][2], Value{std::int64_t{4}});
  EXPECT_EQ(rows[2][3], Value{Bytes{0x02}});  // status is ordinal 2
  auto old = o.catalog->function({"cdc", "fn_cdc_get_all_changes_dbo_orders"},
                                 {binary(o.commits[1]), binary(o.commits[1]), text(" ALL UPDATE OLD ")});
  rows = rows_of(*old);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][2], Value{std::int64_t{3}});
  EXPECT_EQ(rows[0][5], Value{std::string("new")});
}

TEST(TdsCatalog, AllChangesRefusesARangeOutsideTheInstanceWithError313) {
  Orders o;
  const Lsn min = o.reader.min_lsn("dbo_orders").lsn;
  const ObjectName fn{"cdc", "fn_cdc_get_all_changes_dbo_orders"};
  const auto number = [&](std::vector<TypedValue> args) {
    return emu::test::error_number([&] { (void)o.catalog->function(fn, args); });
  };
  EXPECT_EQ(number({binary(min.decrement()), binary(o.commits[2]), text("all")}), 313);            // below min_lsn
  EXPECT_EQ(number({binary(min), binary(o.commits[2].increment()), text("all")}), 313);            // above max_lsn
  EXPECT_EQ(number({binary(o.commits[2]), binary(o.commits[1]), text("all")}), 313);               // from above to
  EXPECT_EQ(number({{ColumnType{SqlKind::Binary, 10}, Value{}}, binary(min), text("all")}), 313);  // NULL
  EXPECT_EQ(number({binary(min), binary(o.commits[2]), text("all with mask")}), 313);              // not its filter
  EXPECT_EQ(number({binary(min), binary(o.commits[2])}), 313);
  EXPECT_EQ(number({binary(min), binary(o.commits[2]), text("all"), text("x")}), 8144);
  try {
    (void)o.catalog->function(fn, {binary(min), binary(o.commits[2].increment()), text("all")});
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "An insufficient number of arguments were supplied for the procedure or function "
                 "cdc.fn_cdc_get_all_changes_ ... .");
  }
  EXPECT_TRUE(o.catalog->function({"cdc", "fn_cdc_get_all_changes_nope"}, {}) == nullptr);
}

TEST(TdsCatalog, TheRowFilterIsTrimmedOfSpacesOnlyAsLtrimAndRtrimTrimIt) {
  Orders o;
  const Lsn min = o.reader.min_lsn("dbo_orders").lsn;
  const ObjectName fn{"cdc", "fn_cdc_get_all_changes_dbo_orders"};
  EXPECT_EQ(rows_of(*o.catalog->function(fn, {binary(min), binary(o.commits[2]), text("  ALL  ")})).size(), 4u);
  for (const char* filter : {"\tall", "all\n", "all update old\r"}) {
    try {
      (void)o.catalog->function(fn, {binary(min), binary(o.commits[2]), text(filter)});
      ADD_FAILURE() << "accepted a row filter with a tab or newline";
    } catch (const Error& e) {
      EXPECT_EQ(e.number(), 313);
    }
  }
}

TEST(TdsCatalog, BinaryValuesCompareAndGroupWithTrailingZeroBytesIgnored) {
  const auto bin = [](Bytes b) { return TypedValue{ColumnType{SqlKind::VarBinary, 10}, std::move(b)}; };
  EXPECT_EQ(compare(bin({0}), bin(Bytes(10, 0))), 0);  // an idle entry's tran_id equals 0x00
  EXPECT_EQ(compare(bin({1}), bin({1, 0})), 0);
  EXPECT_LT(compare(bin({0, 1}), bin({1})), 0);
  EXPECT_GT(compare(bin({1, 0, 2}), bin({1})), 0);
  EXPECT_LT(compare(bin({}), bin({0, 0, 1})), 0);
  EXPECT_EQ(group_key(bin({7})), group_key(bin({7, 0, 0})));
  EXPECT_NE(group_key(bin({7})), group_key(bin({0, 7})));
}

TEST(TdsCatalog, AManualModeInstanceShowsANullStartLsnUntilCaptureReachesIt) {
  TempFile f;
  auto engine = emu::test::orders_file(f.path(), "manual");
  emu::Reader reader{f.path()};
  auto catalog = emulator_catalog(reader, "shop");
  const auto start_lsn = [&] { return rows_of(*catalog->relation({"cdc", "change_tables"})).at(0).at(4); };
  EXPECT_TRUE(is_null(start_lsn()));
  engine->drain();
  EXPECT_EQ(start_lsn(), lsn(reader.resolve_instance("dbo_orders").start_lsn));
}

TEST(TdsCatalog, WithShuffleUnorderedAStoredRelationClaimsNoOrderAndNeverGivesTheStoredOne) {
  Orders o;
  for (const ObjectName& name : std::vector<ObjectName>{{"cdc", "dbo_orders_CT"}, {"cdc", "lsn_time_mapping"}}) {
    const Rows stored = rows_of(*o.relation(name));
    ASSERT_GE(stored.size(), 2u);
    o.engine->configure("shuffle_unordered", "true");
    auto shuffled = o.relation(name);
    EXPECT_TRUE(shuffled->ordered_by().empty());
    const Rows seen = rows_of(*shuffled);
    EXPECT_NE(seen, stored);
    EXPECT_TRUE(std::is_permutation(seen.begin(), seen.end(), stored.begin(), stored.end()));
    o.engine->configure("shuffle_unordered", "false");
  }
}

TEST(TdsCatalog, NetChangesGiveEachKeysFinalStateOrNothingForARowBornAndGoneInTheRange) {
  Orders o;
  const Lsn min = o.reader.min_lsn("dbo_orders").lsn;
  const ObjectName fn{"cdc", "fn_cdc_get_net_changes_dbo_orders"};
  auto net = o.catalog->function(fn, {binary(min), binary(o.commits[2]), text("all")});
  ASSERT_NE(net, nullptr);
  EXPECT_EQ(names_of(*net), (std::vector<std::string>{"__$start_lsn", "__$operation", "__$update_mask", "order_id",
                                                      "status", "amount"}));
  // order 2 was inserted and deleted in the range; order 1 inserted, then updated: an insert.
  EXPECT_EQ(rows_of(*net),
            (Rows{{lsn(o.commits[1]), std::int64_t{2}, Value{}, std::int64_t{1}, std::string("paid"), dec(1050)}}));
  auto later = o.catalog->function(fn, {binary(o.commits[1]), binary(o.commits[2]), text("all with mask")});
  EXPECT_EQ(rows_of(*later),
            (Rows{{lsn(o.commits[1]), std::int64_t{4}, Bytes{0x02}, std::int64_t{1}, std::string("paid"), dec(1050)},
                  {lsn(o.commits[2]), std::int64_t{1}, Value{}, std::int64_t{2}, std::string("new"), Value{}}}));
  auto merge = o.catalog->function(fn, {binary(o.commits[1]), binary(o.commits[2]), text("all with merge")});
  const Rows merged = rows_of(*merge);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0][1], Value{std::int64_t{5}});
  EXPECT_EQ(merged[1][1], Value{std::int64_t{1}});
}

TEST(TdsCatalog, TheCdcScalarFunctionsAgreeWithTheEmulatorsReader) {
  Orders o;
  EXPECT_EQ(o.scalar({"sys", "fn_cdc_get_max_lsn"}).value, lsn(*o.reader.max_lsn()));
  const auto end = *o.reader.lsn_to_time(o.commits[1]);
  EXPECT_EQ(o.scalar({"sys", "fn_cdc_map_lsn_to_time"}, {binary(o.commits[1])}).value, Value{micros_to_datetime2(end)});
  const TypedValue at{ColumnType{SqlKind::DateTime}, micros_to_datetime2(end)};
  EXPECT_EQ(o.scalar({"sys", "fn_cdc_map_time_to_lsn"}, {text("largest less than or equal"), at}).value,
            lsn(o.commits[1]));
  EXPECT_EQ(o.scalar({"sys", "fn_cdc_map_time_to_lsn"}, {text("smallest greater than"), at}).value,
            lsn(*o.reader.time_to_lsn(emu::Relation::SmallestGreaterThan, end)));
  EXPECT_EQ(o.scalar({"sys", "fn_cdc_increment_lsn"}, {binary(o.commits[1])}).value, lsn(o.commits[1].increment()));
  EXPECT_EQ(o.scalar({"sys", "fn_cdc_decrement_lsn"}, {binary(o.commits[1])}).value, lsn(o.commits[1].decrement()));
  EXPECT_FALSE(o.catalog->scalar({"nothing_here"}, {}).has_value());
}

TEST(TdsCatalog, CdcChangeTablesAndSysPartitionsShowTheInstanceAndRowCounts) {
  Orders o;
  auto r = o.relation({"cdc", "change_tables"});
  EXPECT_EQ(names_of(*r),
            (std::vector<std::string>{"object_id", "version", "source_object_id", "capture_instance", "start_lsn",
                                      "end_lsn", "supports_net_changes", "has_drop_pending", "role_name", "index_name",
                                      "filegroup_name", "create_date", "partition_switch"}));
  const Rows tables = rows_of(*r);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0][0], o.scalar({"object_id"}, {text("cdc.dbo_orders_CT")}).value);
  EXPECT_EQ(tables[0][2], o.scalar({"object_id"}, {text("dbo.orders")}).value);
  EXPECT_EQ(tables[0][3], Value{std::string("dbo_orders")});
  EXPECT_EQ(tables[0][4], lsn(o.reader.min_lsn("dbo_orders").lsn));
  EXPECT_EQ(tables[0][9], Value{std::string("PK_orders")});
  std::map<std::int64_t, std::int64_t> counts;
  for (const auto& row : rows_of(*o.relation({"sys", "partitions"})))
    counts[std::get<std::int64_t>(row[1])] = std::get<std::int64_t>(row[5]);
  EXPECT_EQ(counts[std::get<std::int64_t>(tables[0][2])], 1);  // order 1 is left
  EXPECT_EQ(counts[std::get<std::int64_t>(tables[0][0])], 5);
  const Rows captured = rows_of(*o.relation({"cdc", "captured_columns"}));
  ASSERT_EQ(captured.size(), 3u);
  EXPECT_EQ(captured[2][1], Value{std::string("amount")});
  EXPECT_EQ(captured[2][3], Value{std::string("decimal")});
}

TEST(TdsCatalog, TheTimeZoneIsTheSettingsWindowsNameAndTheClockIsTheEmulators) {
  TempFile f;
  const auto e = emu::test::empty_file(f.path());
  e->configure("time_zone", "Europe/Berlin");
  e->create_table("dbo.t", {{"id", "int"}}, {"id"});
  e->enable_cdc("dbo.t", std::nullopt, std::nullopt);
  // A commit far past the wall clock makes the emulator's clock the newest event's time.
  const emu::Micros future = 4'102'444'800'000'000;  // 2100-01-01 00:00:00 UTC, standard time in Berlin
  e->commit({insert("dbo.t", {{"id", I(1)}})}, future);
  emu::Reader reader(f.path());
  auto catalog = emulator_catalog(reader, "db");
  EXPECT_EQ(catalog->scalar({"CURRENT_TIMEZONE_ID"}, {})->value, Value{std::string("W. Europe Standard Time")});
  EXPECT_EQ(catalog->scalar({"getutcdate"}, {})->value, Value{micros_to_datetime2(future)});
  EXPECT_EQ(catalog->scalar({"sysdatetime"}, {})->value, Value{micros_to_datetime2(future + 3600 * kSecond)});
  const Value berlin = DateTimeOffset{micros_to_datetime2(future), std::int16_t{60}};
  EXPECT_EQ(catalog->scalar({"SYSDATETIMEOFFSET"}, {})->value, berlin);
  Rows zones = rows_of(*catalog->relation({"sys", "time_zone_info"}));
  bool utc = false;
  for (const auto& z : zones) utc = utc || z == std::vector<Value>{std::string("UTC"), std::string("+00:00"), false};
  EXPECT_TRUE(utc);
  EXPECT_TRUE(rows_of(*catalog->relation({"sys", "dm_exec_session_wait_stats"})).empty());
}

TEST(TdsCatalog, EveryEmulatorTypeBecomesTheWireTypeSqlServerWouldSend) {
  const auto t = [](const char* text) { return type_name(column_type(emu::SqlType::parse(text))); };
  EXPECT_EQ(t("money"), "decimal(19,4)");
  EXPECT_EQ(t("smallmoney"), "decimal(10,4)");
  EXPECT_EQ(t("smalldatetime"), "datetime");
  EXPECT_EQ(t("text"), "varchar(max)");
  EXPECT_EQ(t("ntext"), "nvarchar(max)");
  EXPECT_EQ(t("image"), "varbinary(max)");
  EXPECT_EQ(t("rowversion"), "binary(8)");
  EXPECT_EQ(t("nchar(5)"), "nchar(5)");
  EXPECT_EQ(t("time(3)"), "time(3)");
  EXPECT_EQ(t("datetimeoffset(7)"), "datetimeoffset(7)");
  const auto cell = [](const char* type, emu::Value v) {
    const auto st = emu::SqlType::parse(type);
    return cell_value(emu::coerce(v, st, "t.c"), st);
  };
  // 6F9619FF-8B86-D011-B42D-00C04FC964FF: SQL Server sends the first three groups little-endian.
  const Value wire =
      Bytes{0xFF, 0x19, 0x96, 0x6F, 0x86, 0x8B, 0x11, 0xD0, 0xB4, 0x2D, 0x00, 0xC0, 0x4F, 0xC9, 0x64, 0xFF};
  EXPECT_EQ(cell("uniqueidentifier", S("6F9619FF-8B86-D011-B42D-00C04FC964FF")), wire);
  EXPECT_EQ(cell("money", D("-12.5")), dec(-125000));
  emu::Value day;
  day.kind = emu::Value::Kind::Date;
  day.i = 1;  // 1970-01-02
  const Value second_day = DateTime2{719163, 0};
  EXPECT_EQ(cell("date", day), second_day);
  emu::Value noon;
  noon.kind = emu::Value::Kind::DateTime;
  noon.i = 43'200'000'000 + 29'000'000;                                                // 1970-01-01 12:00:29
  EXPECT_EQ(cell("smalldatetime", noon), Value{micros_to_datetime2(43'200'000'000)});  // rounds to the minute
  EXPECT_EQ(cell("bit", I(1)), Value{true});
  EXPECT_EQ(cell("nvarchar(max)", emu::test::N()), Value{});
}

}  // namespace
}  // namespace mssqlcdc::tds
