// A server that survives its clients: a computing request stops when the client cancels or
// leaves and when the server stops, its buffered rows are bounded (701), a connection that never
// logs in is dropped, arithmetic past numeric's 38 digits is 8115, and a file that is no
// emulator database is refused at start.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "emu_test_util.hpp"
#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/server.hpp"
#include "mssqlcdc/tds/tokens.hpp"
#include "tds/src/login.hpp"
#include "tds/src/packet.hpp"
#include "tds/src/session.hpp"
#include "tds_test_util.hpp"

namespace mssqlcdc::tds {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using test::last_done;

// A cross join of sys.objects with itself `k` times: several seconds of work at k = 8.
std::string cross_join(int k, const std::string& select = "COUNT_BIG(*)", const std::string& tail = "") {
  std::string sql = "SELECT " + select + " FROM sys.objects a0";
  for (int i = 1; i < k; ++i) sql += " JOIN sys.objects a" + std::to_string(i) + " ON 1 = 1";
  return sql + tail;
}

// A sink whose client "cancels" once `after` has passed since the request started.
class CancellingSink final : public ReplySink {
 public:
  explicit CancellingSink(milliseconds after) : until_(Clock::now() + after) {}
  bool interrupted() override { return Clock::now() >= until_; }
  void end() override { tail = out_.take(); }
  Bytes tail;

 private:
  Clock::time_point until_;
};

class BufferedSink final : public ReplySink {
 public:
  void end() override { tail = out_.take(); }
  Bytes tail;
};

struct ErrorToken {
  std::int32_t number = 0;
  std::uint8_t state = 0;
  std::uint8_t severity = 0;
  std::string text;
};

std::optional<ErrorToken> first_error(const Bytes& reply) {
  const auto at = std::find(reply.begin(), reply.end(), static_cast<std::uint8_t>(Token::Error));
  if (at == reply.end()) return std::nullopt;
  Reader r(std::span<const std::uint8_t>(reply).subspan(static_cast<std::size_t>(at - reply.begin()) + 3));
  ErrorToken e;
  e.number = static_cast<std::int32_t>(r.u32le());
  e.state = r.u8();
  e.severity = r.u8();
  const std::uint16_t chars = r.u16le();
  for (std::uint16_t i = 0; i < chars; ++i) e.text += static_cast<char>(r.u16le() & 0x7F);
  return e;
}

class TdsSurvival : public ::testing::Test {
 protected:
  TdsSurvival() { (void)emu::test::orders_file(file_.path()); }

  Session logged_in() {
    Session s(file_.path(), "shop", 51);
    (void)s.handle(Message{PacketType::PreLogin, prelogin_response(Encryption::Off), false});
    EXPECT_FALSE(s.handle(Message{PacketType::Login7, test::login7("sa", "pw", "shop"), false}).close);
    return s;
  }

  static Message batch(const std::string& sql) { return Message{PacketType::SqlBatch, test::sql_batch(sql), false}; }

  Bytes run(Session& s, const std::string& sql) { return s.handle(batch(sql)).payload; }

  emu::test::TempFile file_;
};

TEST_F(TdsSurvival, AnAttentionDuringACrossJoinStopsItWithinASecond) {
  Session s = logged_in();
  CancellingSink sink(milliseconds(100));
  const auto started = Clock::now();
  EXPECT_FALSE(s.handle(batch(cross_join(8)), sink));
  EXPECT_LT(Clock::now() - started, milliseconds(1000));
  // MS-TDS 2.2.7.6 (DONE): DONE_ATTN 0x20 acknowledges the attention
  // (https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-tds/3c06f110-98bd-4d5b-b836-b1ba66452cb7).
  const test::Done d = last_done(sink.tail);
  EXPECT_EQ(d.token, static_cast<std::uint8_t>(Token::Done));
  EXPECT_EQ(d.status, 0x20);
  // The connection goes on.
  EXPECT_EQ(last_done(run(s, "SELECT 42")).status, kDoneCount);
}

TEST_F(TdsSurvival, AnAttentionDuringASortStopsItWithinASecond) {
  Session s = logged_in();
  CancellingSink sink(milliseconds(100));
  const auto started = Clock::now();
  EXPECT_FALSE(s.handle(batch(cross_join(7, "a0.name", " ORDER BY a1.name DESC, a2.name")), sink));
  EXPECT_LT(Clock::now() - started, milliseconds(1000));
  EXPECT_EQ(last_done(sink.tail).status, 0x20);
}

TEST_F(TdsSurvival, ASortPastTheMemoryBoundFailsWith701AndTheSessionGoesOn) {
  Session s = logged_in();
  s.limit_memory(std::size_t{1} << 20);
  const Bytes reply = run(s, cross_join(6, "a0.name, a1.name", " ORDER BY a2.name"));
  // MSSQLSERVER_701, severity 17
  // (https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/mssqlserver-701-database-engine-error).
  const auto e = first_error(reply);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->number, 701);
  EXPECT_EQ(e->severity, 17);
  EXPECT_EQ(e->text, "There is insufficient system memory in resource pool 'default' to run this query.");
  EXPECT_EQ(last_done(run(s, "SELECT 42")).status, kDoneCount);
  // The bound is per request: a small sort under it still runs.
  EXPECT_EQ(last_done(run(s, cross_join(2, "a0.name", " ORDER BY a1.name"))).status, kDoneCount);
}

TEST_F(TdsSurvival, GroupsAndJoinSidesCountTowardTheMemoryBound) {
  Session s = logged_in();
  s.limit_memory(std::size_t{64} << 10);
  const auto grouped =
      first_error(run(s, cross_join(5, "COUNT(*)", " GROUP BY a0.name, a1.name, a2.name, a3.name, a4.name")));
  ASSERT_TRUE(grouped.has_value());
  EXPECT_EQ(grouped->number, 701);
}

TEST_F(TdsSurvival, NumericPastThirtyEightDigitsIs8115NotAWrappedValue) {
  Session s = logged_in();
  // MSSQLSERVER_8115: arithmetic overflow; decimal holds at most 38 digits
  // (https://learn.microsoft.com/en-us/sql/t-sql/data-types/decimal-and-numeric-transact-sql).
  const std::string nines(38, '9');
  for (const std::string& sql :
       {std::string("SELECT CAST(1e19 AS decimal(19,0))"), std::string("SELECT CAST(1e39 AS decimal(38,0))"),
        std::string("SELECT CAST(-1e40 AS decimal(38,0))"), "SELECT CAST('" + nines + "' AS decimal(38,0)) + 1",
        "SELECT CAST('-" + nines + "' AS decimal(38,0)) - 1", "SELECT CAST('" + nines + "' AS decimal(38,0)) * 10",
        "SELECT SUM(x) FROM (SELECT CAST('" + nines + "' AS decimal(38,0)) AS x UNION ALL SELECT CAST('" + nines +
            "' AS decimal(38,0))) AS d"}) {
    const auto e = first_error(run(s, sql));
    ASSERT_TRUE(e.has_value()) << sql;
    EXPECT_EQ(e->number, 8115) << sql;
    EXPECT_EQ(e->severity, 16) << sql;
  }
}

TEST_F(TdsSurvival, NumericWithinItsDigitsKeepsItsExactValue) {
  Session s = logged_in();
  BufferedSink sink;
  EXPECT_FALSE(s.handle(batch("SELECT CAST(1e19 AS decimal(20,0))"), sink));
  EXPECT_FALSE(first_error(sink.tail).has_value());
  // 10^19 as decimal(20,0): an unscaled 16-byte integer on the wire (MS-TDS DECIMALN, sign then
  // little-endian magnitude); written independently of the engine.
  const unsigned __int128 ten19 = static_cast<unsigned __int128>(10'000'000'000'000'000'000ULL);
  Bytes magnitude;
  for (int k = 0; k < 8; ++k) magnitude.push_back(static_cast<std::uint8_t>(ten19 >> (8 * k)));
  EXPECT_NE(std::search(sink.tail.begin(), sink.tail.end(), magnitude.begin(), magnitude.end()), sink.tail.end());
}

TEST_F(TdsSurvival, AnIdentifierPast128CharactersIs103QuotingItsFirst128) {
  Session s = logged_in();
  // Identifiers hold 1 to 128 characters
  // (https://learn.microsoft.com/en-us/sql/relational-databases/databases/database-identifiers).
  const std::string name(1'000'000, 'a');
  for (const std::string& sql : {"SELECT [" + name + "] FROM dbo.orders", "SELECT " + name + " FROM dbo.orders",
                                 "SELECT 1 AS \"" + name + "\""}) {
    const Bytes reply = run(s, sql);
    const auto e = first_error(reply);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->number, 103);
    EXPECT_EQ(e->severity, 15);
    EXPECT_EQ(e->text,
              "The identifier that starts with '" + std::string(128, 'a') + "' is too long. Maximum length is 128.");
  }
  const auto ok = first_error(run(s, "SELECT 1 AS [" + std::string(128, 'a') + "]"));
  EXPECT_FALSE(ok.has_value());
  EXPECT_EQ(last_done(run(s, "SELECT 42")).status, kDoneCount);
}

TEST_F(TdsSurvival, AMegabyteLiteralIsAValueAndAnUnclosedOneIs105WithTheSessionGoingOn) {
  Session s = logged_in();
  const std::string big(1'000'000, 'x');
  BufferedSink sink;
  EXPECT_FALSE(s.handle(batch("SELECT LEN('" + big + "')"), sink));
  EXPECT_FALSE(first_error(sink.tail).has_value());
  EXPECT_EQ(last_done(sink.tail).status, kDoneCount);
  // Unclosed quotation mark: error 105; the message quotes the text, cut to fit its token.
  const auto e = first_error(run(s, "SELECT '" + big));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->number, 105);
  EXPECT_LE(e->text.size(), kMaxMessageChars);
  EXPECT_EQ(e->text.rfind("Unclosed quotation mark after the character string '", 0), 0U);
  EXPECT_EQ(last_done(run(s, "SELECT 42")).status, kDoneCount);
}

TEST_F(TdsSurvival, ConvertStylesFollowTheCastAndConvertPage) {
  Session s = logged_in();
  // https://learn.microsoft.com/en-us/sql/t-sql/functions/cast-and-convert-transact-sql: "For a
  // style value of NULL, NULL is returned"; date and time styles outside the table "are
  // processed as 0"; to datetimeoffset only styles 0 and 1, "All other conversion styles return
  // error 9809".
  BufferedSink null_style;
  EXPECT_FALSE(s.handle(batch("SELECT CONVERT(varchar(30), CAST('2026-01-02' AS date), NULL)"), null_style));
  EXPECT_FALSE(first_error(null_style.tail).has_value());
  // The row's one value is NULL: an NBCROW (0xD2) whose bitmap marks column 1 (MS-TDS 2.2.7.15).
  const Bytes null_value{0xD2, 0x01};
  EXPECT_NE(std::search(null_style.tail.begin(), null_style.tail.end(), null_value.begin(), null_value.end()),
            null_style.tail.end());
  const auto odd = first_error(run(s, "SELECT CONVERT(varchar(30), CAST('2026-01-02' AS date), 999)"));
  EXPECT_FALSE(odd.has_value());
  for (const char* sql : {"SELECT CONVERT(datetimeoffset, CAST('2026-01-02' AS datetime2), 120)",
                          "SELECT CONVERT(datetimeoffset, CAST('2026-01-02' AS date), 2147483647)"}) {
    const auto e = first_error(run(s, sql));
    ASSERT_TRUE(e.has_value()) << sql;
    EXPECT_EQ(e->number, 9809) << sql;
  }
  EXPECT_FALSE(first_error(run(s, "SELECT CONVERT(datetimeoffset, CAST('2026-01-02' AS datetime2), 1)")).has_value());
}

// A plain-TCP client of a Server: frames messages and reads replies.
class Client {
 public:
  explicit Client(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const timeval limit{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  }
  ~Client() { close(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  void send(PacketType type, const Bytes& payload) {
    const Bytes framed = frame_message(type, payload, kDefaultPacketSize, 0);
    ASSERT_EQ(::send(fd_, framed.data(), framed.size(), MSG_NOSIGNAL), static_cast<ssize_t>(framed.size()));
  }

  // One whole reply's payload; empty when the server closed the connection.
  Bytes reply() {
    Bytes out;
    for (;;) {
      std::array<std::uint8_t, kHeaderSize> h{};
      if (!read(h.data(), h.size())) return {};
      const PacketHeader header = parse_header(h);
      Bytes body(header.length - kHeaderSize);
      if (!read(body.data(), body.size())) return {};
      out.insert(out.end(), body.begin(), body.end());
      if ((header.status & kStatusEndOfMessage) != 0) return out;
    }
  }

  void login() {
    send(PacketType::PreLogin, prelogin_response(Encryption::NotSupported));
    ASSERT_FALSE(reply().empty());
    send(PacketType::Login7, test::login7("sa", "pw", "shop"));
    ASSERT_FALSE(reply().empty());
  }

  // Whether the server closed the connection (a read sees its end) within `limit`.
  bool closed_within(milliseconds limit) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(limit).count();
    const timeval tv{static_cast<time_t>(us / 1'000'000), static_cast<suseconds_t>(us % 1'000'000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::uint8_t b = 0;
    return ::recv(fd_, &b, 1, 0) == 0;
  }

 private:
  bool read(std::uint8_t* out, std::size_t n) {
    while (n > 0) {
      const ssize_t got = ::recv(fd_, out, n, 0);
      if (got <= 0) return false;
      out += got;
      n -= static_cast<std::size_t>(got);
    }
    return true;
  }

  int fd_;
};

ServerOptions options_for(const std::filesystem::path& file) {
  ServerOptions options;
  options.file = file;
  options.database = "shop";
  return options;
}

bool settles(Server& server, std::size_t count, milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (server.live_connections() != count && Clock::now() < until) std::this_thread::sleep_for(milliseconds(20));
  return server.live_connections() == count;
}

TEST_F(TdsSurvival, AnAttentionPacketDuringACrossJoinIsAnsweredWithDoneAttentionWithinASecond) {
  Server server(options_for(file_.path()));
  Client c(server.port());
  c.login();
  c.send(PacketType::SqlBatch, test::sql_batch(cross_join(9)));
  std::this_thread::sleep_for(milliseconds(200));
  const auto started = Clock::now();
  c.send(PacketType::Attention, {});
  const Bytes reply = c.reply();
  EXPECT_LT(Clock::now() - started, milliseconds(1000));
  EXPECT_EQ(last_done(reply).status, 0x20);
  c.send(PacketType::SqlBatch, test::sql_batch("SELECT 42"));
  EXPECT_EQ(last_done(c.reply()).status, kDoneCount);
}

TEST_F(TdsSurvival, AClientThatLeavesDuringACrossJoinStopsItWithinASecond) {
  Server server(options_for(file_.path()));
  {
    Client c(server.port());
    c.login();
    c.send(PacketType::SqlBatch, test::sql_batch(cross_join(9)));
    std::this_thread::sleep_for(milliseconds(200));
  }  // closed
  EXPECT_TRUE(settles(server, 0, milliseconds(1000)));
}

TEST_F(TdsSurvival, StopReturnsWithinSecondsWhileAQueryComputes) {
  auto server = std::make_unique<Server>(options_for(file_.path()));
  Client c(server->port());
  c.login();
  c.send(PacketType::SqlBatch, test::sql_batch(cross_join(9)));
  std::this_thread::sleep_for(milliseconds(200));
  const auto started = Clock::now();
  server->stop();
  EXPECT_LT(Clock::now() - started, milliseconds(2000));
}

TEST_F(TdsSurvival, ConnectionsThatNeverSpeakAreDroppedAtTheLoginTimeout) {
  ServerOptions options = options_for(file_.path());
  options.max_connections = 4;
  options.login_timeout = milliseconds(300);
  Server server(options);
  std::vector<std::unique_ptr<Client>> silent;
  for (int i = 0; i < 4; ++i) silent.push_back(std::make_unique<Client>(server.port()));
  EXPECT_TRUE(settles(server, 4, milliseconds(1000)));
  for (auto& c : silent) EXPECT_TRUE(c->closed_within(milliseconds(2000)));
  EXPECT_TRUE(settles(server, 0, milliseconds(2000)));
  // Their places are free: a client that speaks logs in.
  Client speaking(server.port());
  speaking.login();
  speaking.send(PacketType::SqlBatch, test::sql_batch("SELECT 42"));
  EXPECT_EQ(last_done(speaking.reply()).status, kDoneCount);
}

TEST_F(TdsSurvival, ALoggedInConnectionMayIdlePastTheLoginTimeout) {
  ServerOptions options = options_for(file_.path());
  options.login_timeout = milliseconds(200);
  Server server(options);
  Client c(server.port());
  c.login();
  std::this_thread::sleep_for(milliseconds(600));
  c.send(PacketType::SqlBatch, test::sql_batch("SELECT 42"));
  EXPECT_EQ(last_done(c.reply()).status, kDoneCount);
}

TEST_F(TdsSurvival, AFileThatIsNoEmulatorDatabaseIsRefusedAtStartNamingIt) {
  const auto other = file_.path().parent_path() / "notes.txt";
  std::ofstream(other) << "not a database\n";
  try {
    Server server(options_for(other));
    FAIL() << "served a file that is no emulator database";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::EmuFileFormat);
    EXPECT_NE(std::string(e.what()).find(other.string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mssqlcdc::tds
