// The answer path: a result streams through the ReplySink a packet at a time, an ATTENTION stops
// it with DONE(ATTN), and a fault script's errors, cuts and synthesized rows reach the wire.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "emu_test_util.hpp"
#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/faults.hpp"
#include "mssqlcdc/tds/tokens.hpp"
#include "tds/src/session.hpp"
#include "tds_test_util.hpp"

namespace mssqlcdc::tds {
namespace {

// Keeps what a socket sink would: full packets leave at each flush, and it remembers the most
// it ever held. It may refuse to go on after `stop_after` flushes (the client's ATTENTION).
class RecordingSink final : public ReplySink {
 public:
  explicit RecordingSink(std::size_t packet, std::size_t stop_after = SIZE_MAX)
      : packet_(packet), stop_after_(stop_after) {}
  bool flush() override {
    most_held = std::max(most_held, out_.size());
    if (out_.size() > packet_) sent_ += out_.take().size();
    return ++flushes < stop_after_;
  }
  void end() override { tail = out_.take(); }
  void cut() override {
    was_cut = true;
    tail = out_.take();
  }
  std::size_t most_held = 0;
  std::size_t flushes = 0;
  bool was_cut = false;
  Bytes tail;

 private:
  std::size_t packet_;
  std::size_t stop_after_;
  std::size_t sent_ = 0;
};

using test::Done;
using test::last_done;

struct ErrorToken {
  std::int32_t number = 0;
  std::uint8_t state = 0;
  std::uint8_t severity = 0;
};

ErrorToken first_error(const Bytes& reply) {
  const auto at = std::find(reply.begin(), reply.end(), static_cast<std::uint8_t>(Token::Error));
  EXPECT_NE(at, reply.end());
  Reader r(std::span<const std::uint8_t>(reply).subspan(static_cast<std::size_t>(at - reply.begin()) + 3));
  ErrorToken e;
  e.number = static_cast<std::int32_t>(r.u32le());
  e.state = r.u8();
  e.severity = r.u8();
  return e;
}

class TdsStream : public ::testing::Test {
 protected:
  TdsStream() { (void)emu::test::orders_file(file_.path()); }

  Session with(std::vector<Fault> faults) {
    Session s(file_.path(), "shop", 51, std::make_shared<FaultScript>(std::move(faults)));
    (void)s.handle(Message{PacketType::PreLogin, prelogin_response(Encryption::Off), false});
    EXPECT_FALSE(s.handle(Message{PacketType::Login7, test::login7("sa", "pw", "shop"), false}).close);
    return s;
  }

  static Message batch(const std::string& sql) { return Message{PacketType::SqlBatch, test::sql_batch(sql), false}; }

  static Fault rows(std::uint64_t n) {
    Fault f;
    f.match = "big";
    f.action = FaultAction::Rows;
    f.rows = n;
    return f;
  }

  emu::test::TempFile file_;
};

TEST_F(TdsStream, ALongResultLeavesAPacketAtATimeAndEndsWithItsCount) {
  Session s = with({rows(200'000)});
  RecordingSink sink(s.packet_size());
  EXPECT_FALSE(s.handle(batch("SELECT * FROM big"), sink));
  EXPECT_LE(sink.most_held, s.packet_size() + 64);  // a packet and one row, never the result
  const Done d = last_done(sink.tail);
  EXPECT_EQ(d.token, static_cast<std::uint8_t>(Token::Done));
  EXPECT_EQ(d.status, kDoneCount);
  EXPECT_EQ(d.rows, 200'000U);
}

TEST_F(TdsStream, AttentionDuringAResultStopsItWithADoneAttention) {
  Session s = with({rows(100'000)});
  RecordingSink sink(s.packet_size(), 10);
  EXPECT_FALSE(s.handle(batch("SELECT * FROM big"), sink));
  EXPECT_EQ(sink.flushes, 10U);  // no row was made after the client cancelled
  const Done d = last_done(sink.tail);
  EXPECT_EQ(d.token, static_cast<std::uint8_t>(Token::Done));
  EXPECT_EQ(d.status, kDoneAttention);
  // The connection goes on.
  RecordingSink next(s.packet_size());
  EXPECT_FALSE(s.handle(batch("SELECT 42"), next));
  EXPECT_EQ(last_done(next.tail).status, kDoneCount);
}

TEST_F(TdsStream, ADeadlockFaultIs1205WithSqlServersSeverityAndState) {
  Fault f;
  f.match = "fn_cdc_get_max_lsn";
  f.number = 1205;
  Session s = with({f});
  const Reply r = s.handle(batch("SELECT sys.fn_cdc_get_max_lsn()"));
  EXPECT_FALSE(r.close);
  const ErrorToken e = first_error(r.payload);
  EXPECT_EQ(e.number, 1205);
  EXPECT_EQ(e.severity, 13);
  EXPECT_EQ(e.state, 51);
  EXPECT_EQ(last_done(r.payload).status, kDoneError);
  EXPECT_EQ(last_done(s.handle(batch("SELECT 1")).payload).status, kDoneCount);  // every time: times 0
}

TEST_F(TdsStream, ASeverity20FaultEndsTheSessionWithAServerError) {
  Fault f;
  f.number = 40501;
  f.times = 1;
  Session s = with({f});
  const Reply r = s.handle(batch("SELECT 1"));
  EXPECT_TRUE(r.close);
  EXPECT_EQ(first_error(r.payload).severity, 20);
  EXPECT_EQ(last_done(r.payload).status, kDoneError | 0x100);
}

TEST_F(TdsStream, AFaultWithTimesFiresThatOftenOnly) {
  Fault f;
  f.number = 1222;
  f.times = 1;
  Session s = with({f});
  EXPECT_EQ(first_error(s.handle(batch("SELECT 1")).payload).number, 1222);
  EXPECT_EQ(last_done(s.handle(batch("SELECT 1")).payload).status, kDoneCount);
}

TEST_F(TdsStream, ADropFaultCutsTheResultAfterItsRows) {
  Fault drop;
  drop.match = "big";
  drop.action = FaultAction::Drop;
  drop.after_rows = 5;
  Session s = with({rows(100), drop});
  RecordingSink sink(s.packet_size());
  EXPECT_TRUE(s.handle(batch("SELECT * FROM big"), sink));
  EXPECT_TRUE(sink.was_cut);
  EXPECT_EQ(std::count(sink.tail.begin(), sink.tail.end(), static_cast<std::uint8_t>(Token::Done)), 0);
}

TEST_F(TdsStream, ALoginFaultRefusesTheLoginWith18456AndCloses) {
  Fault f;
  f.when = FaultWhen::Login;
  f.number = 18456;
  Session s(file_.path(), "shop", 51, std::make_shared<FaultScript>(std::vector<Fault>{f}));
  const Reply r = s.handle(Message{PacketType::Login7, test::login7("sa", "pw", "shop"), false});
  EXPECT_TRUE(r.close);
  const ErrorToken e = first_error(r.payload);
  EXPECT_EQ(e.number, 18456);
  EXPECT_EQ(e.severity, 14);
}

TEST_F(TdsStream, AScriptWithAnErrorSqlServerNeverSendsIsRefused) {
  Fault f;
  f.number = 12345;
  EXPECT_THROW(FaultScript({f}), Error);
}

}  // namespace
}  // namespace mssqlcdc::tds
