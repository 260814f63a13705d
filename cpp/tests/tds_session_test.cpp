#include <gtest/gtest.h>

#include <algorithm>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/tds/tokens.hpp"
#include "tds/src/request.hpp"
#include "tds/src/session.hpp"
#include "tds_test_util.hpp"

namespace mssqlcdc::tds {
namespace {

using emu::test::I;
using emu::test::S;

using test::Done;
using test::last_done;

bool contains(const Bytes& haystack, std::span<const std::uint8_t> needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) != haystack.end();
}

// The number of the first ERROR token, which these replies start with.
std::int32_t first_error(const Bytes& reply) {
  const auto at = std::find(reply.begin(), reply.end(), static_cast<std::uint8_t>(Token::Error));
  EXPECT_NE(at, reply.end());
  Reader r(std::span<const std::uint8_t>(reply).subspan(static_cast<std::size_t>(at - reply.begin()) + 3));
  return static_cast<std::int32_t>(r.u32le());
}

class TdsSession : public ::testing::Test {
 protected:
  TdsSession() {
    auto engine = emu::test::orders_file(file_.path());
    engine->commit({emu::test::insert("dbo.orders", {{"order_id", I(1)}, {"status", S("new")}})}, std::nullopt);
  }

  Session logged_in() {
    Session s(file_.path(), "shop", 51);
    EXPECT_FALSE(s.handle(Message{PacketType::PreLogin, prelogin_response(Encryption::Off), false}).close);
    const Reply r = s.handle(Message{PacketType::Login7, test::login7("sa", "pw", "shop"), false});
    EXPECT_FALSE(r.close);
    EXPECT_EQ(r.payload.front(), static_cast<std::uint8_t>(Token::EnvChange));
    EXPECT_EQ(s.packet_size(), 8192U);
    return s;
  }

  Bytes batch(Session& s, const std::string& sql) {
    return s.handle(Message{PacketType::SqlBatch, test::sql_batch(sql), false}).payload;
  }

  emu::test::TempFile file_;
};

TEST_F(TdsSession, MaxLsnIsTheReadersAsBinary10InOneRowEndingTheBatch) {
  Session s = logged_in();
  const Bytes reply = batch(s, "SELECT sys.fn_cdc_get_max_lsn()");
  const auto max = emu::Reader(file_.path()).max_lsn();
  ASSERT_TRUE(max);
  EXPECT_TRUE(contains(reply, max->bytes()));
  const Done d = last_done(reply);
  EXPECT_EQ(d.token, static_cast<std::uint8_t>(Token::Done));
  EXPECT_EQ(d.status, kDoneCount);
  EXPECT_EQ(d.rows, 1U);
}

TEST_F(TdsSession, ConvertStyleOneGivesTheLsnText) {
  Session s = logged_in();
  const Bytes reply =
      batch(s, "SET NOCOUNT ON; SELECT CONVERT(varchar(22), sys.fn_cdc_get_min_lsn('dbo_orders'), 1) AS m;");
  const std::string text = emu::Reader(file_.path()).min_lsn("dbo_orders").lsn.to_string();
  EXPECT_TRUE(contains(reply, std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size())));
}

TEST_F(TdsSession, AnUnknownProcedureIs2812AndTheConnectionGoesOn) {
  Session s = logged_in();
  Bytes reply = batch(s, "EXEC sys.sp_nothing 1");
  EXPECT_EQ(first_error(reply), 2812);
  EXPECT_EQ(last_done(reply).status, kDoneError);
  reply = batch(s, "sp_who");  // a batch's first word that is no keyword is a procedure call
  EXPECT_EQ(first_error(reply), 2812);
  reply = batch(s, "SELECT * FROM dbo.nothing");
  EXPECT_EQ(first_error(reply), 208);
  reply = batch(s, "GRANT SELECT TO x");
  EXPECT_EQ(first_error(reply), 102);
  reply = batch(s, "SELECT 'unclosed");
  EXPECT_EQ(first_error(reply), 105);
  EXPECT_EQ(last_done(batch(s, "SELECT 1")).status, kDoneCount);
}

TEST_F(TdsSession, EveryPrefixOfAStatementIsAnsweredWithADone) {
  // Truncated statements walk every error path of the recognizer; each must end in a DONE.
  Session s = logged_in();
  const std::string sql = "SELECT CONVERT(varchar(22), sys.fn_cdc_get_min_lsn(N'dbo_orders'), 1) AS m, @@SPID x";
  for (std::size_t n = 1; n <= sql.size(); ++n) {
    const Done d = last_done(batch(s, sql.substr(0, n)));
    EXPECT_EQ(d.token, static_cast<std::uint8_t>(Token::Done)) << sql.substr(0, n);
  }
}

TEST_F(TdsSession, SpExecuteSqlBindsANamedParameter) {
  Session s = logged_in();
  Writer w;
  w.u32le(22);
  w.u32le(18);
  w.u16le(2);
  w.u64le(0);
  w.u32le(1);
  w.u16le(0xFFFF);  // by id
  w.u16le(10);      // sp_executesql
  w.u16le(0);
  const auto nvarchar = [&w](const std::string& name, const std::string& value) {
    w.b_varchar(name);
    w.u8(0);
    write_type_info(w, ColumnType{SqlKind::NVarChar, 4000});
    write_value(w, ColumnType{SqlKind::NVarChar, 4000}, value);
  };
  nvarchar("@stmt", "SELECT sys.fn_cdc_get_min_lsn(@ci) AS lo");
  nvarchar("@params", "@ci nvarchar(128)");
  nvarchar("@ci", "dbo_orders");
  const Bytes reply = s.handle(Message{PacketType::Rpc, w.take(), false}).payload;
  EXPECT_TRUE(contains(reply, emu::Reader(file_.path()).min_lsn("dbo_orders").lsn.bytes()));
  const Done d = last_done(reply);
  EXPECT_EQ(d.token, static_cast<std::uint8_t>(Token::DoneProc));
  EXPECT_EQ(d.status, kDoneFinal);
}

TEST_F(TdsSession, ALoginToAnotherDatabaseIsRefusedAndCloses) {
  Session s(file_.path(), "shop", 51);
  (void)s.handle(Message{PacketType::PreLogin, prelogin_response(Encryption::Off), false});
  const Reply r = s.handle(Message{PacketType::Login7, test::login7("sa", "pw", "other"), false});
  EXPECT_TRUE(r.close);
  EXPECT_EQ(first_error(r.payload), 4060);
}

TEST_F(TdsSession, ARequestBeforeLoginIsRefusedAndCloses) {
  Session s(file_.path(), "shop", 51);
  EXPECT_TRUE(s.handle(Message{PacketType::SqlBatch, test::sql_batch("SELECT 1"), false}).close);
}

TEST_F(TdsSession, AttentionIsAcknowledged) {
  Session s = logged_in();
  const Done d = last_done(s.handle(Message{PacketType::Attention, {}, false}).payload);
  EXPECT_EQ(d.status, kDoneAttention);
}

}  // namespace
}  // namespace mssqlcdc::tds
