// The TDS front end's transactions and SQL logins. The oracle for the
// rules is Microsoft's documentation (BEGIN/COMMIT/ROLLBACK TRANSACTION, @@TRANCOUNT, MS-TDS
// 2.2.6.9 and 2.2.7.9); what a transaction left in the file is read with the emulator's Reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/tds/server.hpp"
#include "mssqlcdc/tds/tokens.hpp"
#include "tds/src/login.hpp"
#include "tds/src/session.hpp"
#include "tds_test_util.hpp"

namespace mssqlcdc::tds {
namespace {

using emu::test::I;
using emu::test::S;
using test::last_done;

// The first ERROR token's number; 0 when the reply has none.
std::int32_t error_number(const Bytes& reply) {
  const auto at = std::find(reply.begin(), reply.end(), static_cast<std::uint8_t>(Token::Error));
  if (at == reply.end()) return 0;
  Reader r(std::span<const std::uint8_t>(reply).subspan(static_cast<std::size_t>(at - reply.begin()) + 3));
  return static_cast<std::int32_t>(r.u32le());
}

// Whether the reply holds an ENVCHANGE of `type` (token 0xE3, length, type).
bool has_envchange(const Bytes& reply, EnvChange type) {
  for (std::size_t i = 0; i + 3 < reply.size(); ++i) {
    if (reply[i] == static_cast<std::uint8_t>(Token::EnvChange) && reply[i + 3] == static_cast<std::uint8_t>(type)) {
      return true;
    }
  }
  return false;
}

// A transaction manager request (MS-TDS 2.2.6.9): ALL_HEADERS, the request type, its payload.
Bytes transaction_request(std::uint16_t type, Bytes payload) {
  Writer w;
  test::all_headers(w);
  w.u16le(type);
  w.bytes(payload);
  return w.take();
}

class TdsTransactions : public ::testing::Test {
 protected:
  TdsTransactions() {
    auto engine = emu::test::orders_file(file_.path());
    engine->commit({emu::test::insert("dbo.orders", {{"order_id", I(1)}, {"status", S("new")}})}, std::nullopt);
  }

  Reply login(Session& s, const std::string& user, const std::string& password) {
    EXPECT_FALSE(s.handle(Message{PacketType::PreLogin, prelogin_response(Encryption::Off), false}).close);
    return s.handle(Message{PacketType::Login7, test::login7(user, password, "shop"), false});
  }

  Bytes batch(Session& s, const std::string& sql) {
    return s.handle(Message{PacketType::SqlBatch, test::sql_batch(sql), false}).payload;
  }

  // The committed rows, read without waiting for the open transaction's locks.
  std::size_t rows() {
    emu::Reader r(file_.path());
    r.set_isolation(emu::Isolation::ReadUncommitted);
    auto cursor = r.table_rows("dbo.orders", emu::CellRange{});
    std::size_t n = 0;
    std::vector<emu::Cell> row;
    while (cursor->next(row)) ++n;
    return n;
  }

  emu::test::TempFile file_;
};

TEST_F(TdsTransactions, ARolledBackInsertLeavesNoRowAndTheBeginAndRollbackAreEnvChanges) {
  Session s(file_.path(), "shop", 51);
  ASSERT_FALSE(login(s, "sa", "pw").close);
  const Bytes begin = batch(s, "BEGIN TRAN");
  EXPECT_TRUE(has_envchange(begin, EnvChange::BeginTransaction));
  EXPECT_EQ(error_number(batch(s, "INSERT INTO dbo.orders (order_id, status) VALUES (2, N'x')")), 0);
  EXPECT_EQ(rows(), 1U);  // invisible until commit
  const Bytes rollback = batch(s, "ROLLBACK");
  EXPECT_TRUE(has_envchange(rollback, EnvChange::RollbackTransaction));
  EXPECT_EQ(rows(), 1U);
}

TEST_F(TdsTransactions, TransactionManagerBeginAndCommitCommitTheInsert) {
  Session s(file_.path(), "shop", 51);
  ASSERT_FALSE(login(s, "sa", "pw").close);
  // TM_BEGIN_XACT: isolation level 0, an empty name.
  const Bytes begin = s.handle(Message{PacketType::TransactionManager, transaction_request(5, {0, 0}), false}).payload;
  EXPECT_TRUE(has_envchange(begin, EnvChange::BeginTransaction));
  EXPECT_EQ(error_number(batch(s, "INSERT INTO dbo.orders (order_id, status) VALUES (2, N'x')")), 0);
  EXPECT_EQ(rows(), 1U);
  // TM_COMMIT_XACT: an empty name, fBeginXact 0.
  const Bytes commit = s.handle(Message{PacketType::TransactionManager, transaction_request(7, {0, 0}), false}).payload;
  EXPECT_TRUE(has_envchange(commit, EnvChange::CommitTransaction));
  EXPECT_EQ(error_number(commit), 0);
  EXPECT_EQ(rows(), 2U);
}

TEST_F(TdsTransactions, ACommitWithBeginXactCommitsAndBeginsTheNextTransaction) {
  Session s(file_.path(), "shop", 51);
  ASSERT_FALSE(login(s, "sa", "pw").close);
  (void)s.handle(Message{PacketType::TransactionManager, transaction_request(5, {0, 0}), false});
  EXPECT_EQ(error_number(batch(s, "INSERT INTO dbo.orders (order_id, status) VALUES (2, N'x')")), 0);
  // TM_COMMIT_XACT: an empty name, fBeginXact 1, then the new transaction's isolation and name.
  const Bytes reply =
      s.handle(Message{PacketType::TransactionManager, transaction_request(7, {0, 1, 0, 0}), false}).payload;
  EXPECT_TRUE(has_envchange(reply, EnvChange::CommitTransaction));
  EXPECT_TRUE(has_envchange(reply, EnvChange::BeginTransaction));
  EXPECT_EQ(rows(), 2U);
  EXPECT_EQ(error_number(batch(s, "INSERT INTO dbo.orders (order_id, status) VALUES (3, N'y')")), 0);
  EXPECT_EQ(rows(), 2U);  // the next transaction holds it
  const Bytes rollback = batch(s, "ROLLBACK");
  EXPECT_EQ(error_number(rollback), 0);
  EXPECT_EQ(rows(), 2U);
}

TEST_F(TdsTransactions, ATransactionManagerRollbackWithoutATransactionIs3903) {
  Session s(file_.path(), "shop", 51);
  ASSERT_FALSE(login(s, "sa", "pw").close);
  const Bytes reply = s.handle(Message{PacketType::TransactionManager, transaction_request(8, {0, 0}), false}).payload;
  EXPECT_EQ(error_number(reply), 3903);
  EXPECT_EQ(last_done(reply).status & kDoneError, kDoneError);
}

// RFC 7914's test vector: PBKDF2-HMAC-SHA256("passwd", "salt", 1) begins with these 32 bytes.
SqlLogin rfc_login() {
  const unsigned char dk[] = {0x55, 0xac, 0x04, 0x6e, 0x56, 0xe3, 0x08, 0x9f, 0xec, 0x16, 0x91,
                              0xc2, 0x25, 0x44, 0xb6, 0x05, 0xf9, 0x41, 0x85, 0x21, 0x6d, 0xde,
                              0x04, 0x65, 0xe6, 0x8b, 0x9d, 0x57, 0xc2, 0x0d, 0xac, 0xbc};
  return SqlLogin{"reader", "salt", std::string(reinterpret_cast<const char*>(dk), sizeof dk), 1};
}

TEST_F(TdsTransactions, APasswordMatchesItsPbkdf2HashAndNoOther) {
  EXPECT_TRUE(password_matches(rfc_login(), Secret("passwd")));
  EXPECT_FALSE(password_matches(rfc_login(), Secret("passwe")));
  EXPECT_FALSE(password_matches(rfc_login(), Secret("")));
}

TEST_F(TdsTransactions, AWrongPasswordOrAnUnknownLoginIs18456AndTheRightOneLogsIn) {
  for (const auto& [user, password] : {std::pair{"reader", "wrong"}, std::pair{"someone", "passwd"}}) {
    Session s(file_.path(), "shop", 51, nullptr, false, rfc_login());
    const Reply r = login(s, user, password);
    EXPECT_TRUE(r.close);
    EXPECT_EQ(error_number(r.payload), 18456);
    const std::string text(r.payload.begin(), r.payload.end());
    EXPECT_EQ(text.find("wrong"), std::string::npos);  // the password is never echoed
  }
  Session s(file_.path(), "shop", 51, nullptr, false, rfc_login());
  const Reply ok = login(s, "READER", "passwd");  // login names match without case
  EXPECT_FALSE(ok.close);
  EXPECT_EQ(error_number(ok.payload), 0);
}

}  // namespace
}  // namespace mssqlcdc::tds
