#include <gtest/gtest.h>

#include <algorithm>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "tds/src/procedures.hpp"
#include "tds/src/session.hpp"
#include "tds/src/tsql.hpp"
#include "tds_test_util.hpp"

namespace mssqlcdc::tds {
namespace {

using emu::test::I;
using emu::test::S;

std::vector<std::string> names(const ResultSet& rs) {
  std::vector<std::string> out;
  for (const auto& c : rs.columns) out.push_back(c.name);
  return out;
}

Bytes lsn_bytes(const Lsn& lsn) { return Bytes(lsn.bytes().begin(), lsn.bytes().end()); }

class TdsProcedures : public ::testing::Test {
 protected:
  TdsProcedures() {
    auto engine = emu::test::orders_file(file_.path());
    engine->commit({emu::test::insert("dbo.orders", {{"order_id", I(1)}, {"status", S("new")}})}, std::nullopt);
    db_ = std::make_unique<Database>(file_.path(), "shop");
  }

  // Runs a batch and returns its statements' results; SQL Server's error as (number, text).
  std::vector<StatementResult> run(const std::string& sql, const Params& params = {}) {
    std::vector<StatementResult> done;
    db_->run(sql, params, done);
    return done;
  }

  std::pair<int, std::string> error_of(const std::string& sql) {
    try {
      (void)run(sql);
    } catch (const Error& e) {
      return {e.number(), e.what()};
    }
    ADD_FAILURE() << "no error from " << sql;
    return {0, ""};
  }

  ResultSet only_set(const std::string& sql) {
    const auto done = run(sql);
    EXPECT_EQ(done.size(), 1U);
    EXPECT_TRUE(done.at(0).procedure.has_value());
    EXPECT_EQ(done.at(0).procedure->size(), 1U);
    return done.at(0).procedure->at(0);
  }

  emu::test::TempFile file_;
  std::unique_ptr<Database> db_;  // opened once the file exists
};

TEST_F(TdsProcedures, TheHelpProcedureListsTheInstanceWithSqlServersColumns) {
  const ResultSet rs = only_set("EXEC sys.sp_cdc_help_change_data_capture");
  EXPECT_EQ(names(rs), (std::vector<std::string>{"source_schema", "source_table", "capture_instance", "object_id",
                                                 "source_object_id", "start_lsn", "end_lsn", "supports_net_changes",
                                                 "has_drop_pending", "role_name", "index_name", "filegroup_name",
                                                 "create_date", "index_column_list", "captured_column_list"}));
  EXPECT_EQ(type_name(rs.columns[5].type), "binary(10)");
  EXPECT_EQ(type_name(rs.columns[12].type), "datetime");
  ASSERT_EQ(rs.rows.size(), 1U);
  const auto& row = rs.rows[0];
  const auto info = emu::Reader(file_.path()).capture_instances("dbo.orders").at(0);
  EXPECT_EQ(std::get<std::string>(row[0]), "dbo");
  EXPECT_EQ(std::get<std::string>(row[1]), "orders");
  EXPECT_EQ(std::get<std::string>(row[2]), "dbo_orders");
  EXPECT_EQ(std::get<Bytes>(row[5]), lsn_bytes(info.start_lsn));
  EXPECT_TRUE(is_null(row[6]));
  EXPECT_EQ(row[7], Value(true));  // supports_net_changes: the table has a primary key
  EXPECT_EQ(std::get<std::string>(row[10]), "PK_orders");
  EXPECT_EQ(std::get<std::string>(row[13]), "[order_id]");
  EXPECT_EQ(std::get<std::string>(row[14]), "[order_id], [status], [amount]");
}

TEST_F(TdsProcedures, TheHelpProcedureForOneTableTakesNamedOrPositionalArguments) {
  const ResultSet named = only_set(
      "EXEC sys.sp_cdc_help_change_data_capture @source_schema = N'dbo', "
      "@source_name = N'ORDERS'");
  const ResultSet positional = only_set("sys.sp_cdc_help_change_data_capture 'dbo', 'orders'");
  ASSERT_EQ(named.rows.size(), 1U);
  EXPECT_EQ(named.rows, positional.rows);
  EXPECT_EQ(error_of("EXEC sys.sp_cdc_help_change_data_capture 'dbo', 'nope'").first, 22981);
}

TEST_F(TdsProcedures, CapturedColumnsDescribeEachTypeAsSqlServerDoes) {
  const ResultSet rs = only_set("EXEC sys.sp_cdc_get_captured_columns @capture_instance = N'dbo_orders'");
  EXPECT_EQ(names(rs),
            (std::vector<std::string>{"source_schema", "source_table", "capture_instance", "column_name", "column_id",
                                      "column_ordinal", "data_type", "character_maximum_length", "numeric_precision",
                                      "numeric_precision_radix", "numeric_scale", "datetime_precision"}));
  ASSERT_EQ(rs.rows.size(), 3U);
  // order_id int: precision 10, radix 10, scale 0; status nvarchar(20): 20 characters;
  // amount decimal(18,2).
  EXPECT_EQ(rs.rows[0][3], Value(std::string("order_id")));
  EXPECT_EQ(rs.rows[0][6], Value(std::string("int")));
  EXPECT_EQ(rs.rows[0][8], Value(std::int64_t{10}));
  EXPECT_EQ(rs.rows[1][6], Value(std::string("nvarchar")));
  EXPECT_EQ(rs.rows[1][7], Value(std::int64_t{20}));
  EXPECT_TRUE(is_null(rs.rows[1][8]));
  EXPECT_EQ(rs.rows[2][5], Value(std::int64_t{3}));
  EXPECT_EQ(rs.rows[2][8], Value(std::int64_t{18}));
  EXPECT_EQ(rs.rows[2][10], Value(std::int64_t{2}));
}

TEST_F(TdsProcedures, DdlHistoryHasOneRowPerColumnChange) {
  {
    emu::Engine e(file_.path());
    (void)e.add_column("dbo.orders", "note", "varchar(10)", std::nullopt);
  }
  const ResultSet rs = only_set("EXEC sys.sp_cdc_get_ddl_history N'dbo_orders'");
  EXPECT_EQ(names(rs), (std::vector<std::string>{"source_schema", "source_table", "capture_instance",
                                                 "required_column_update", "ddl_command", "ddl_lsn", "ddl_time"}));
  const auto entries = emu::Reader(file_.path()).ddl_history("dbo_orders", Lsn::zero(), Lsn::max());
  ASSERT_EQ(rs.rows.size(), entries.size());
  ASSERT_EQ(rs.rows.size(), 1U);
  EXPECT_EQ(std::get<std::string>(rs.rows[0][4]), entries[0].ddl_command);
  EXPECT_EQ(std::get<Bytes>(rs.rows[0][5]), lsn_bytes(entries[0].ddl_lsn));
}

TEST_F(TdsProcedures, ArgumentErrorsAreSqlServers) {
  EXPECT_EQ(error_of("EXEC sys.sp_cdc_get_captured_columns"),
            std::make_pair(201, std::string("Procedure or function 'sp_cdc_get_captured_columns' expects parameter "
                                            "'@capture_instance', which was not supplied.")));
  EXPECT_EQ(
      error_of("EXEC sys.sp_cdc_get_captured_columns @instance = 'x'"),
      std::make_pair(8145, std::string("@instance is not a parameter for procedure sp_cdc_get_captured_columns.")));
  EXPECT_EQ(error_of("EXEC sys.sp_cdc_get_captured_columns 'a', 'b'").first, 8144);
  EXPECT_EQ(error_of("EXEC sys.sp_cdc_help_change_data_capture @source_schema = 'dbo', 'orders'").first, 119);
  EXPECT_EQ(error_of("EXEC sys.sp_cdc_get_captured_columns @capture_instance = 'nope'"),
            std::make_pair(22981, std::string("Object does not exist or access is denied.")));
  EXPECT_EQ(error_of("EXEC dbo.sp_cdc_get_captured_columns 'dbo_orders'"),
            std::make_pair(2812, std::string("Could not find stored procedure 'dbo.sp_cdc_get_captured_columns'.")));
  EXPECT_EQ(error_of("EXEC sys.sp_who").first, 2812);
  EXPECT_EQ(error_of("EXEC sys.sp_cdc_get_captured_columns @capture_instance = @ci").first, 137);
}

TEST_F(TdsProcedures, AParameterReachesTheProcedureAsALiteralDoes) {
  Params params{{"@ci", TypedValue{ColumnType{SqlKind::NVarChar, 128}, std::string("dbo_orders")}}};
  const auto bound = run("EXEC sys.sp_cdc_get_captured_columns @capture_instance = @ci", params);
  EXPECT_EQ(bound.at(0).procedure->at(0).rows,
            only_set("EXEC sys.sp_cdc_get_captured_columns @capture_instance = 'dbo_orders'").rows);
}

TEST_F(TdsProcedures, EnableAndDisableTableWriteTheInstance) {
  (void)run("EXEC sys.sp_cdc_enable_db");
  (void)run(
      "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', @role_name = NULL, "
      "@capture_instance = N'orders_v2', @captured_column_list = N'[order_id], status'");
  emu::Reader reader(file_.path());
  const auto instances = reader.capture_instances("dbo.orders");
  ASSERT_EQ(instances.size(), 2U);
  EXPECT_EQ(instances[1].name, "orders_v2");
  const auto cols = reader.captured_columns("orders_v2");
  ASSERT_EQ(cols.size(), 2U);
  EXPECT_EQ(cols[1].name, "status");
  EXPECT_EQ(error_of("EXEC sys.sp_cdc_enable_table 'dbo', 'orders'").first, 201);  // @role_name has no default
  EXPECT_EQ(error_of("EXEC sys.sp_cdc_enable_table 'dbo', 'orders', NULL, 'third'").first, 22963);
  (void)run(
      "EXEC sys.sp_cdc_disable_table @source_schema = 'dbo', @source_name = 'orders', "
      "@capture_instance = 'dbo_orders'");
  EXPECT_EQ(reader.capture_instances("dbo.orders").size(), 1U);
  EXPECT_EQ(error_of("EXEC sys.sp_cdc_disable_table 'dbo', 'orders', 'dbo_orders'").first, 22981);
  (void)run("EXEC sys.sp_cdc_disable_table 'dbo', 'orders', 'all'");
  EXPECT_TRUE(reader.capture_instances("dbo.orders").empty());
}

TEST_F(TdsProcedures, CleanupMovesTheLowWaterMarkToAnEntry) {
  {
    emu::Engine e(file_.path());
    (void)e.commit({emu::test::insert("dbo.orders", {{"order_id", I(2)}})}, std::nullopt);
  }
  emu::Reader reader(file_.path());
  const Lsn mark = *reader.max_lsn();
  (void)run("EXEC sys.sp_cdc_cleanup_change_table @capture_instance = 'dbo_orders', @low_water_mark = 0x" +
            mark.to_string().substr(2) + ", @threshold = 100");
  EXPECT_EQ(reader.min_lsn("dbo_orders").lsn, mark);
  (void)run("EXEC sys.sp_cdc_cleanup_change_table 'dbo_orders', 0x00000000000000000001");
  EXPECT_EQ(reader.min_lsn("dbo_orders").lsn, mark);  // a lower mark leaves it, as SQL Server documents
  EXPECT_EQ(error_of("EXEC sys.sp_cdc_cleanup_change_table 'dbo_orders', 0x7FFFFFFF7FFFFFFF0001").first, 22964);
  EXPECT_EQ(error_of("EXEC sys.sp_cdc_cleanup_change_table 'dbo_orders', 'x'").first, 257);
}

TEST_F(TdsProcedures, AnInsertIsOneCommitCountedInDone) {
  emu::Reader reader(file_.path());
  const Lsn before = *reader.max_lsn();
  const auto done = run("INSERT INTO dbo.orders (order_id, status, amount) VALUES (2, N'new', 12.50), (3, 'paid', -1)");
  ASSERT_TRUE(done.at(0).count.has_value());
  EXPECT_EQ(done.at(0).count->rows, 2U);
  EXPECT_EQ(done.at(0).count->cur_cmd, 0xC3);
  EXPECT_EQ(*reader.nth_commit_after(before, 1, std::nullopt), *reader.max_lsn());  // one transaction
  EXPECT_EQ(reader.table_info("dbo.orders").row_count, 3);
}

TEST_F(TdsProcedures, UpdatesAndDeletesNameTheRowByItsKey) {
  auto done = run("UPDATE orders SET status = N'paid', amount = 3 WHERE order_id = 1");
  EXPECT_EQ(done.at(0).count->rows, 1U);
  EXPECT_EQ(done.at(0).count->cur_cmd, 0xC5);
  emu::Reader reader(file_.path());
  const Lsn after_update = *reader.max_lsn();
  EXPECT_EQ(run("UPDATE dbo.orders SET status = 'x' WHERE order_id = 99").at(0).count->rows, 0U);
  EXPECT_EQ(run("DELETE FROM dbo.orders WHERE order_id = NULL").at(0).count->rows, 0U);
  EXPECT_EQ(*reader.max_lsn(), after_update);  // no row, no commit
  done = run("UPDATE dbo.orders SET order_id = 7 WHERE order_id = 1");
  EXPECT_EQ(done.at(0).count->rows, 1U);
  done = run("DELETE dbo.orders WHERE order_id = 7");
  EXPECT_EQ(done.at(0).count->rows, 1U);
  EXPECT_EQ(done.at(0).count->cur_cmd, 0xC4);
  EXPECT_EQ(reader.table_info("dbo.orders").row_count, 0);
}

TEST_F(TdsProcedures, WriteErrorsAreSqlServers) {
  EXPECT_EQ(error_of("INSERT INTO dbo.orders (order_id) VALUES (1)"),
            std::make_pair(2627, std::string("Violation of PRIMARY KEY constraint 'PK_orders'. Cannot insert "
                                             "duplicate key in object 'dbo.orders'. The duplicate key value is (1).")));
  EXPECT_EQ(error_of("INSERT INTO dbo.orders (status) VALUES ('a')"),
            std::make_pair(515, std::string("Cannot insert the value NULL into column 'order_id', table "
                                            "'shop.dbo.orders'; column does not allow nulls. INSERT fails.")));
  EXPECT_EQ(error_of("INSERT INTO dbo.orders VALUES (5, N'abcdefghijklmnopqrstuvwxyz', 1)"),
            std::make_pair(2628, std::string("String or binary data would be truncated in table 'shop.dbo.orders', "
                                             "column 'status'. Truncated value: 'abcdefghijklmnopqrst'.")));
  EXPECT_EQ(error_of("INSERT INTO dbo.nope VALUES (1)"),
            std::make_pair(208, std::string("Invalid object name 'dbo.nope'.")));
  EXPECT_EQ(error_of("UPDATE dbo.orders SET colour = 1 WHERE order_id = 1"),
            std::make_pair(207, std::string("Invalid column name 'colour'.")));
  EXPECT_EQ(error_of("INSERT INTO dbo.orders (order_id, status) VALUES (9)").first, 109);
  EXPECT_EQ(error_of("INSERT INTO dbo.orders (order_id) VALUES (9, 'a')").first, 110);
  // A WHERE that is not the key is a SELECT's condition: its errors are the query engine's.
  EXPECT_EQ(error_of("DELETE FROM dbo.orders WHERE colour = 'new'").first, 207);
  EXPECT_EQ(error_of("UPDATE dbo.orders SET status = 'a' WHERE order_id >").first, 102);
  // VALUES items are computed by the query engine (decision 1436): a broken expression is 102.
  EXPECT_EQ(error_of("INSERT INTO dbo.orders (order_id) VALUES (1 +)").first, 102);
  EXPECT_EQ(emu::Reader(file_.path()).table_info("dbo.orders").row_count, 1);  // nothing was written
}

// The wire: an EXEC ends with RETURNSTATUS 0 and DONEPROC, a write with DONE's count.
class TdsProcedureWire : public TdsProcedures {
 protected:
  Session logged_in() {
    Session s(file_.path(), "shop", 51);
    (void)s.handle(Message{PacketType::PreLogin, prelogin_response(Encryption::Off), false});
    (void)s.handle(Message{PacketType::Login7, test::login7("sa", "pw", "shop"), false});
    return s;
  }
  static Bytes tail(const Bytes& reply, std::size_t n) {
    return Bytes(reply.end() - static_cast<std::ptrdiff_t>(n), reply.end());
  }
};

Bytes return_status_then_doneproc(std::uint16_t status) {
  Writer w;
  write_return_status(w, 0);
  write_done(w, Token::DoneProc, status, 0, 0);
  return w.take();
}

TEST_F(TdsProcedureWire, AnExecInABatchEndsWithReturnStatusAndDoneProc) {
  Session s = logged_in();
  const Bytes reply = s.handle(Message{PacketType::SqlBatch,
                                       test::sql_batch("EXEC sys.sp_cdc_get_captured_columns 'dbo_orders'"), false})
                          .payload;
  EXPECT_EQ(tail(reply, 18), return_status_then_doneproc(kDoneFinal));
}

TEST_F(TdsProcedureWire, AnRpcByNameRunsTheProcedureAsExecDoes) {
  Session s = logged_in();
  Writer w;
  test::all_headers(w);
  w.us_varchar("sys.sp_cdc_get_captured_columns");  // a call by name, not by a well-known id
  w.u16le(0);
  w.b_varchar("@capture_instance");
  w.u8(0);
  write_type_info(w, ColumnType{SqlKind::NVarChar, 128});
  write_value(w, ColumnType{SqlKind::NVarChar, 128}, std::string("dbo_orders"));
  const Bytes by_rpc = s.handle(Message{PacketType::Rpc, w.take(), false}).payload;
  const Bytes by_exec = s.handle(Message{PacketType::SqlBatch,
                                         test::sql_batch("EXEC sys.sp_cdc_get_captured_columns N'dbo_orders'"), false})
                            .payload;
  EXPECT_EQ(by_rpc, by_exec);
}

TEST_F(TdsProcedureWire, AnInsertEndsWithDoneCountingItsRows) {
  Session s = logged_in();
  const Bytes reply = s.handle(Message{PacketType::SqlBatch,
                                       test::sql_batch("INSERT INTO dbo.orders (order_id) VALUES (4), (5)"), false})
                          .payload;
  Writer w;
  write_done(w, Token::Done, kDoneCount, 0xC3, 2);
  EXPECT_EQ(reply, w.take());
}

}  // namespace
}  // namespace mssqlcdc::tds
