// emu_principals_test.cpp: logins, login-mapped users and SELECT grants kept in the file
// (decision 1366). The expected numbers and texts are SQL Server's, written out here.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/permissions.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {
namespace {

using test::error_message;
using test::error_number;

std::unique_ptr<Engine> file_with_tables(const std::filesystem::path& p) {
  auto e = test::empty_file(p);
  e->create_table("dbo.orders", {{"order_id", "int"}}, {"order_id"});
  e->enable_cdc("dbo.orders", std::nullopt, std::nullopt, std::string("cdc_reader"));
  return e;
}

void in_txn(Engine& e, const std::function<void()>& call) {
  WriteTxn txn(e.db());
  call();
  txn.commit();
}

TEST(EmuPrincipals, ALoginKeepsItsSaltAndHashAndATakenNameIs15025) {
  test::TempFile f;
  auto e = file_with_tables(f.path());
  const LoginRecord login{"Reader", std::string("\x00\x01salt", 6), std::string(32, '\xAB'), 20000};
  in_txn(*e, [&] { create_login(e->db(), login); });
  const auto found = find_login(e->db(), "READER");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->name, "Reader");
  EXPECT_EQ(found->salt, login.salt);
  EXPECT_EQ(found->hash, login.hash);
  EXPECT_EQ(found->iterations, 20000u);
  EXPECT_EQ(error_number([&] { in_txn(*e, [&] { create_login(e->db(), login); }); }), 15025);
  EXPECT_EQ(error_message([&] { in_txn(*e, [&] { create_login(e->db(), login); }); }),
            "The server principal 'Reader' already exists.");
  EXPECT_FALSE(find_login(e->db(), "nobody").has_value());
}

TEST(EmuPrincipals, AUserMapsToItsLoginAndAnUnknownLoginIs15007) {
  test::TempFile f;
  auto e = file_with_tables(f.path());
  in_txn(*e, [&] {
    create_login(e->db(), LoginRecord{"app_login", "s", "h", 1});
    create_user(e->db(), "app_user", {});
    map_user_to_login(e->db(), "app_user", "app_login");
  });
  EXPECT_EQ(user_of_login(e->db(), "APP_LOGIN"), std::optional<std::string>("app_user"));
  EXPECT_EQ(error_number([&] { in_txn(*e, [&] { map_user_to_login(e->db(), "app_user", "ghost"); }); }), 15007);
  Reader r(f.path());
  r.act_as(std::string("app_login"), std::nullopt, false);
  EXPECT_EQ(r.user(), std::optional<std::string>("app_user"));
}

TEST(EmuPrincipals, SelectNeedsAGrantOnTheTableOrItsSchemaToTheUserOrItsRole) {
  test::TempFile f;
  auto e = file_with_tables(f.path());
  in_txn(*e, [&] {
    create_user(e->db(), "alice", {});
    create_user(e->db(), "olga", {"db_owner"});
  });
  const std::optional<std::string> alice("alice");
  EXPECT_FALSE(may_select(e->db(), alice, "dbo", "orders"));
  EXPECT_TRUE(may_select(e->db(), std::string("olga"), "dbo", "orders"));
  EXPECT_TRUE(may_select(e->db(), std::nullopt, "dbo", "orders"));
  in_txn(*e, [&] { grant_select(e->db(), "object:dbo.orders", "alice"); });
  EXPECT_TRUE(may_select(e->db(), alice, "dbo", "orders"));
  EXPECT_FALSE(may_select(e->db(), alice, "cdc", "dbo_orders_CT"));
  in_txn(*e, [&] {
    grant_select(e->db(), "schema:cdc", "cdc_reader");
    add_role_member(e->db(), "cdc_reader", "alice");
  });
  EXPECT_TRUE(may_select(e->db(), alice, "cdc", "dbo_orders_CT"));
  EXPECT_EQ(error_number([&] { in_txn(*e, [&] { grant_select(e->db(), "schema:dbo", "ghost"); }); }), 15151);
  Reader r(f.path());
  r.act_as(std::string("alice"), std::string("shop"));
  EXPECT_EQ(error_message([&] { r.check_select("dbo", "customers"); }),
            "The SELECT permission was denied on the object 'customers', database 'shop', schema 'dbo'.");
}

}  // namespace
}  // namespace mssqlcdc::emu
