// emu_permissions_test.cpp: users, gating roles and what a user outside the role sees
// (decision 1280). The expected texts are SQL Server's, written out here.
#include <gtest/gtest.h>

#include <string>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/permissions.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "tds/src/statements.hpp"

namespace mssqlcdc::emu {
namespace {

using test::error_message;
using test::error_number;
using test::I;
using test::kSecond;
using test::kStart;

// dbo.orders with instance dbo_orders gated by role cdc_readers, one commit, and users: alice
// (no role), bob (cdc_readers), olga (db_owner).
std::unique_ptr<Engine> gated_file(const std::filesystem::path& p) {
  auto e = test::empty_file(p);
  e->create_table("dbo.orders", {{"order_id", "int"}}, {"order_id"});
  e->enable_cdc("dbo.orders", std::nullopt, std::nullopt, std::string("cdc_readers"));
  e->commit({test::insert("dbo.orders", {{"order_id", I(1)}})}, kStart + kSecond);
  WriteTxn txn(e->db());
  create_user(e->db(), "alice", {});
  create_user(e->db(), "bob", {"cdc_readers"});
  create_user(e->db(), "olga", {"db_owner"});
  txn.commit();
  return e;
}

TEST(EmuPermissions, AReaderWithoutAUserReadsAsDboAsBefore) {
  test::TempFile f;
  auto e = gated_file(f.path());
  Reader r(f.path());
  EXPECT_EQ(r.min_lsn("dbo_orders").state, MinLsn::State::Value);
  EXPECT_EQ(r.capture_instances("dbo.orders").size(), 1U);
  EXPECT_TRUE(r.may_read("dbo_orders"));
}

TEST(EmuPermissions, AUserOutsideTheGatingRoleGetsZerosFromMinLsnAndNoListedInstance) {
  test::TempFile f;
  auto e = gated_file(f.path());
  Reader r(f.path());
  r.act_as(std::string("alice"), std::nullopt);
  const MinLsn m = r.min_lsn("dbo_orders");
  EXPECT_EQ(m.state, MinLsn::State::Unknown);
  EXPECT_EQ(m.lsn.to_string(), "0x00000000000000000000");
  EXPECT_TRUE(r.capture_instances("dbo.orders").empty());
  EXPECT_FALSE(r.may_read("dbo_orders"));
}

TEST(EmuPermissions, AUserOutsideTheGatingRoleGets229NamingTheChangeFunction) {
  test::TempFile f;
  auto e = gated_file(f.path());
  Reader r(f.path());
  r.act_as(std::string("alice"), std::string("shop"));
  const auto max = r.max_lsn();
  const auto split = [&] { (void)r.split_points("dbo_orders", r.min_lsn("dbo_orders").lsn, max, 2); };
  // as dbo the same range is readable, so the refusal below is the permission's
  Reader dbo(f.path());
  EXPECT_EQ(error_number([&] { (void)dbo.split_points("dbo_orders", dbo.min_lsn("dbo_orders").lsn, max, 2); }), -1);
  EXPECT_EQ(error_number(split), 229);
  EXPECT_EQ(error_message([&] { (void)r.split_points("dbo_orders", dbo.min_lsn("dbo_orders").lsn, max, 2); }),
            "The SELECT permission was denied on the object 'fn_cdc_get_all_changes_dbo_orders', database 'shop', "
            "schema 'cdc'.");
  EXPECT_EQ(error_number([&] {
              ArrowArrayStream out{};
              r.read_changes("dbo_orders", std::nullopt, std::nullopt, ChangeReadOptions{}, &out);
            }),
            229);
}

TEST(EmuPermissions, AMemberOfTheGatingRoleAndADbOwnerReadTheInstance) {
  test::TempFile f;
  auto e = gated_file(f.path());
  for (const char* user : {"bob", "olga", "BOB"}) {
    Reader r(f.path());
    r.act_as(std::string(user), std::nullopt);
    EXPECT_EQ(r.min_lsn("dbo_orders").state, MinLsn::State::Value) << user;
    EXPECT_EQ(r.capture_instances("dbo.orders").size(), 1U) << user;
  }
}

TEST(EmuPermissions, AnAddedMemberReadsFromItsNextCall) {
  test::TempFile f;
  auto e = gated_file(f.path());
  Reader r(f.path());
  r.act_as(std::string("alice"), std::nullopt);
  ASSERT_FALSE(r.may_read("dbo_orders"));
  {
    WriteTxn txn(e->db());
    add_role_member(e->db(), "cdc_readers", "alice");
    txn.commit();
  }
  EXPECT_TRUE(r.may_read("dbo_orders"));
  EXPECT_EQ(r.min_lsn("dbo_orders").state, MinLsn::State::Value);
}

TEST(EmuPermissions, AnInstanceWithoutAGatingRoleIsReadByEveryUser) {
  test::TempFile f;
  auto e = gated_file(f.path());
  e->create_table("dbo.items", {{"item_id", "int"}}, {"item_id"});
  e->enable_cdc("dbo.items", std::nullopt, std::nullopt);
  Reader r(f.path());
  r.act_as(std::string("alice"), std::nullopt);
  EXPECT_TRUE(r.may_read("dbo_items"));
  EXPECT_EQ(r.capture_instances("dbo.items").size(), 1U);
}

TEST(EmuPermissions, UsersAndRolesAreCheckedWithSqlServersNumbers) {
  test::TempFile f;
  auto e = gated_file(f.path());
  const auto in_txn = [&](const std::function<void()>& call) {
    return error_number([&] {
      WriteTxn txn(e->db());
      call();
      txn.commit();
    });
  };
  EXPECT_EQ(in_txn([&] { create_user(e->db(), "ALICE", {}); }), 15023);
  EXPECT_EQ(in_txn([&] { create_user(e->db(), "dbo", {}); }), 15023);
  EXPECT_EQ(in_txn([&] { create_user(e->db(), "carl", {"no_such_role"}); }), 15151);
  EXPECT_EQ(in_txn([&] { add_role_member(e->db(), "no_such_role", "alice"); }), 15151);
  EXPECT_EQ(in_txn([&] { add_role_member(e->db(), "cdc_readers", "nobody"); }), 15151);
  EXPECT_EQ(error_message([&] {
              WriteTxn txn(e->db());
              create_user(e->db(), "alice", {});
            }),
            "User, group, or role 'alice' already exists in the current database.");
  Reader r(f.path());
  EXPECT_EQ(error_number([&] { r.act_as(std::string("nobody"), std::nullopt); }), 15151);
  r.act_as(std::string("nobody"), std::nullopt, false);  // a login that is no user: dbo
  EXPECT_TRUE(r.may_read("dbo_orders"));
}

TEST(EmuPermissions, TheGatingRoleIsStoredInChangeTablesRoleName) {
  test::TempFile f;
  auto e = gated_file(f.path());
  auto st = e->db().prepare("SELECT role_name FROM \"cdc.change_tables\" WHERE capture_instance = 'dbo_orders'");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.text(0), "cdc_readers");
}

TEST(EmuPermissions, OverTdsTheLoginsUserGets229FromTheChangeFunctionAndTheChangeTable) {
  test::TempFile f;
  auto e = gated_file(f.path());
  const auto run = [&](const std::string& login, const std::string& sql) {
    tds::Database db(f.path(), "shop", login);
    std::vector<tds::StatementResult> done;
    return error_message([&] { db.run(sql, {}, done); });
  };
  const std::string fn =
      "SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_orders(sys.fn_cdc_get_min_lsn('dbo_orders'), "
      "sys.fn_cdc_get_max_lsn(), N'all')";
  EXPECT_EQ(run("alice", fn),
            "The SELECT permission was denied on the object 'fn_cdc_get_all_changes_dbo_orders', database 'shop', "
            "schema 'cdc'.");
  EXPECT_EQ(run("alice", "SELECT * FROM cdc.dbo_orders_CT"),
            "The SELECT permission was denied on the object 'dbo_orders_CT', database 'shop', schema 'cdc'.");
  EXPECT_EQ(run("bob", fn), "");
  EXPECT_EQ(run("sa", fn), "");  // a login that is no user reads as dbo
}

}  // namespace
}  // namespace mssqlcdc::emu
