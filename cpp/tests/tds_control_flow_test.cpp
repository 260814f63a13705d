// Control of flow in T-SQL batches over the TDS front end: BEGIN ... END, WHILE with BREAK and
// CONTINUE, TRY ... CATCH with the ERROR_ functions, RAISERROR, THROW, @@ERROR and @@SPID. The
// oracle is Microsoft's T-SQL reference:
// https://learn.microsoft.com/en-us/sql/t-sql/language-elements/while-transact-sql (BREAK leaves
// the loop, CONTINUE restarts it),
// https://learn.microsoft.com/en-us/sql/t-sql/language-elements/try-catch-transact-sql (severity
// 11-19 errors go to CATCH; object name resolution errors at the same level do not),
// https://learn.microsoft.com/en-us/sql/t-sql/language-elements/raiserror-transact-sql (its
// examples of %s, %d and * widths; severity 10 and below is informational),
// https://learn.microsoft.com/en-us/sql/t-sql/language-elements/throw-transact-sql (severity 16,
// numbers from 50000, THROW with no arguments re-raises inside CATCH), and
// https://learn.microsoft.com/en-us/sql/t-sql/functions/error-transact-sql (@@ERROR).
// Expected sums are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "emu_test_util.hpp"
#include "mssqlcdc/tds/tokens.hpp"
#include "tds/src/batch.hpp"
#include "tds/src/session.hpp"
#include "tds_test_util.hpp"

namespace mssqlcdc::tds {
namespace {

using emu::test::I;
using emu::test::S;

// The first message token of `kind` in a reply: its number, state and severity.
struct Seen {
  std::int32_t number = 0;
  int state = 0;
  int severity = 0;
};

Seen first_message(const Bytes& reply, Token kind) {
  const auto at = std::find(reply.begin(), reply.end(), static_cast<std::uint8_t>(kind));
  if (at == reply.end()) return {};
  Reader r(std::span<const std::uint8_t>(reply).subspan(static_cast<std::size_t>(at - reply.begin()) + 3));
  Seen s;
  s.number = static_cast<std::int32_t>(r.u32le());
  s.state = r.u8();
  s.severity = r.u8();
  return s;
}

bool contains_text(const Bytes& reply, const std::string& text) {
  Bytes utf16;
  append_utf16le(utf16, text);
  return std::search(reply.begin(), reply.end(), utf16.begin(), utf16.end()) != reply.end();
}

class TdsControlFlow : public ::testing::Test {
 protected:
  TdsControlFlow() {
    auto engine = emu::test::orders_file(file_.path());
    engine->commit({emu::test::insert("dbo.orders", {{"order_id", I(1)}, {"status", S("new")}})}, std::nullopt);
  }

  Bytes batch(const std::string& sql, std::uint16_t spid = 51) {
    Session s(file_.path(), "shop", spid);
    EXPECT_FALSE(s.handle(Message{PacketType::PreLogin, prelogin_response(Encryption::Off), false}).close);
    EXPECT_FALSE(s.handle(Message{PacketType::Login7, test::login7("sa", "pw", "shop"), false}).close);
    return s.handle(Message{PacketType::SqlBatch, test::sql_batch(sql), false}).payload;
  }

  emu::test::TempFile file_;
};

TEST_F(TdsControlFlow, AWhileLoopWithBreakAndContinueSumsWhatItsPageSays) {
  // i runs 1..10; 3 is skipped by CONTINUE and 7 leaves by BREAK: 1 + 2 + 4 + 5 + 6 = 18.
  const Bytes reply = batch(
      "DECLARE @i int = 0, @s int = 0\n"
      "WHILE @i < 10\nBEGIN\n  SET @i = @i + 1\n  IF @i = 3 CONTINUE\n  IF @i > 6 BREAK\n"
      "  SET @s = @s + @i\nEND\nSELECT N'sum=' + CAST(@s AS nvarchar(10)) AS s");
  EXPECT_EQ(first_message(reply, Token::Error).number, 0);
  EXPECT_TRUE(contains_text(reply, "sum=18"));
}

TEST_F(TdsControlFlow, BeginEndGroupsAnIfBranch) {
  const Bytes reply = batch(
      "DECLARE @n int = 2 IF @n > 1 BEGIN SELECT N'first-of-block' AS a SELECT N'second-of-block' AS b END "
      "ELSE BEGIN SELECT N'else-block' AS c END");
  EXPECT_EQ(first_message(reply, Token::Error).number, 0);
  EXPECT_TRUE(contains_text(reply, "first-of-block"));
  EXPECT_TRUE(contains_text(reply, "second-of-block"));
  EXPECT_FALSE(contains_text(reply, "else-block"));
}

TEST_F(TdsControlFlow, ALoopThatNeverEndsFailsWithTheLoopLimitError) {
  Database db(file_.path(), "shop");
  db.set_loop_limit(50);
  std::vector<StatementResult> done;
  try {
    db.run("DECLARE @x int = 0; WHILE 1 = 1 SET @x = @x + 1; SELECT N'not-reached' AS r", {}, done);
    FAIL() << "the loop ended";
  } catch (const Error& e) {
    EXPECT_EQ(e.number(), 50000);
    EXPECT_NE(std::string(e.what()).find("A WHILE loop ran 50 times"), std::string::npos);
  }
  // DECLARE, then the 50 SETs the loop ran; the SELECT after it never ran.
  EXPECT_EQ(done.size(), 51U);
}

TEST_F(TdsControlFlow, ALoopBelowTheLimitRunsToItsEnd) {
  Database db(file_.path(), "shop");
  db.set_loop_limit(50);
  std::vector<StatementResult> done;
  db.run("DECLARE @x int = 0; WHILE @x < 50 SET @x = @x + 1; SELECT @x AS r", {}, done);
  EXPECT_EQ(done.size(), 52U);
}

TEST_F(TdsControlFlow, CatchReadsTheErrorOfItsTryAndTheBatchGoesOn) {
  const Bytes reply = batch(
      "BEGIN TRY SELECT 1 / 0 AS x END TRY\n"
      "BEGIN CATCH SELECT N'caught ' + CAST(ERROR_NUMBER() AS nvarchar(10)) + N' ' + ERROR_MESSAGE() + N' sev ' + "
      "CAST(ERROR_SEVERITY() AS nvarchar(5)) + N' at ' + CAST(@@ERROR AS nvarchar(10)) AS m END CATCH\n"
      "SELECT ISNULL(CAST(ERROR_NUMBER() AS nvarchar(20)), N'outside-null') AS after_catch");
  EXPECT_EQ(first_message(reply, Token::Error).number, 0);
  EXPECT_TRUE(contains_text(reply, "caught 8134 Divide by zero error encountered. sev 16 at 8134"));
  EXPECT_TRUE(contains_text(reply, "outside-null"));
}

TEST_F(TdsControlFlow, TryDoesNotCatchAnUnknownObjectAtItsOwnLevel) {
  const Bytes reply =
      batch("BEGIN TRY SELECT * FROM dbo.no_such_table END TRY BEGIN CATCH SELECT N'was-caught' AS c END CATCH");
  EXPECT_EQ(first_message(reply, Token::Error).number, 208);
  EXPECT_FALSE(contains_text(reply, "was-caught"));
}

TEST_F(TdsControlFlow, RaiserrorOutsideTryIsAnErrorWithItsSeverityAndStateAndTheBatchGoesOn) {
  const Bytes reply = batch("RAISERROR(N'bad %s number %d', 15, 3, N'order', 42); SELECT N'after-raise' AS a");
  const Seen e = first_message(reply, Token::Error);
  EXPECT_EQ(e.number, 50000);
  EXPECT_EQ(e.severity, 15);
  EXPECT_EQ(e.state, 3);
  EXPECT_TRUE(contains_text(reply, "bad order number 42"));
  EXPECT_TRUE(contains_text(reply, "after-raise"));
}

TEST_F(TdsControlFlow, RaiserrorOfSeverityTenIsInformationalAndNotCaught) {
  const Bytes reply = batch(
      "BEGIN TRY RAISERROR(N'just-info', 10, 1); SELECT N'try-went-on' AS t END TRY "
      "BEGIN CATCH SELECT N'was-caught' AS c END CATCH; SELECT N'error=' + CAST(@@ERROR AS nvarchar(10)) AS e");
  EXPECT_EQ(first_message(reply, Token::Error).number, 0);
  EXPECT_EQ(first_message(reply, Token::Info).number, 50000);
  EXPECT_TRUE(contains_text(reply, "just-info"));
  EXPECT_TRUE(contains_text(reply, "try-went-on"));
  EXPECT_FALSE(contains_text(reply, "was-caught"));
  EXPECT_TRUE(contains_text(reply, "error=0"));
}

TEST_F(TdsControlFlow, RaiserrorInsideTryGoesToCatchWithItsStateAndMessage) {
  const Bytes reply = batch(
      "BEGIN TRY RAISERROR(N'Error raised in TRY block.', 16, 2) END TRY BEGIN CATCH SELECT N'got ' + "
      "ERROR_MESSAGE() + N' state ' + CAST(ERROR_STATE() AS nvarchar(5)) AS m END CATCH");
  EXPECT_EQ(first_message(reply, Token::Error).number, 0);
  EXPECT_TRUE(contains_text(reply, "got Error raised in TRY block. state 2"));
}

TEST_F(TdsControlFlow, ThrowRaisesSeverity16WithItsNumberAndStateAndEndsTheBatch) {
  const Bytes reply = batch("THROW 51000, N'The record does not exist.', 1; SELECT N'never-sent' AS n");
  const Seen e = first_message(reply, Token::Error);
  EXPECT_EQ(e.number, 51000);
  EXPECT_EQ(e.severity, 16);
  EXPECT_EQ(e.state, 1);
  EXPECT_TRUE(contains_text(reply, "The record does not exist."));
  EXPECT_FALSE(contains_text(reply, "never-sent"));
}

TEST_F(TdsControlFlow, ThrowWithoutArgumentsReraisesTheCaughtError) {
  const Bytes reply =
      batch("BEGIN TRY SELECT 1 / 0 AS x END TRY BEGIN CATCH PRINT N'In catch block.'; THROW; END CATCH");
  EXPECT_EQ(first_message(reply, Token::Error).number, 8134);
  EXPECT_TRUE(contains_text(reply, "In catch block."));
}

TEST_F(TdsControlFlow, ThrowOutsideItsRangesOrOutsideCatchIsRefused) {
  EXPECT_EQ(first_message(batch("THROW 49999, N'low', 1;"), Token::Error).number, 35100);
  EXPECT_EQ(first_message(batch("THROW;"), Token::Error).number, 10704);
}

TEST_F(TdsControlFlow, SpidIsTheSessionsId) {
  const Bytes reply = batch("SELECT N'spid=' + CAST(@@SPID AS nvarchar(10)) AS s", 77);
  EXPECT_TRUE(contains_text(reply, "spid=77"));
}

TEST_F(TdsControlFlow, StatementsWithoutSemicolonsRunOneAfterAnother) {
  const Bytes reply = batch(
      "UPDATE dbo.orders SET status = N'paid' WHERE order_id = 1 "
      "SELECT N'rows=' + CAST(@@ROWCOUNT AS nvarchar(5)) AS r SELECT N'now-' + status AS s FROM dbo.orders");
  EXPECT_EQ(first_message(reply, Token::Error).number, 0);
  EXPECT_TRUE(contains_text(reply, "rows=1"));
  EXPECT_TRUE(contains_text(reply, "now-paid"));
}

TEST_F(TdsControlFlow, AnEndWithoutABeginIsASyntaxErrorBeforeAnythingRuns) {
  const Bytes reply = batch("SELECT N'ran-first' AS r END");
  EXPECT_EQ(first_message(reply, Token::Error).number, 156);
  EXPECT_FALSE(contains_text(reply, "ran-first"));
  EXPECT_EQ(first_message(batch("BEGIN SELECT 1"), Token::Error).number, 102);
}

TEST_F(TdsControlFlow, BlocksNestedPastTheBoundAre191NotACrash) {
  std::string deep;
  for (int k = 0; k < 100000; ++k) deep += "BEGIN ";
  EXPECT_EQ(first_message(batch(deep), Token::Error).number, 191);
  std::string fine = "DECLARE @n int = 0 ";
  for (int k = 0; k < 20; ++k) fine += "IF 1 = 1 BEGIN ";
  fine += "SET @n = 20 ";
  for (int k = 0; k < 20; ++k) fine += "END ";
  fine += "SELECT N'depth=' + CAST(@n AS nvarchar(5)) AS d";
  EXPECT_TRUE(contains_text(batch(fine), "depth=20"));
}

// The statement tree: words that belong to a statement do not cut it.
std::size_t statements_in(const std::string& sql) { return parse_batch(lex(sql)).size(); }

TEST(BatchTree, WordsInsideAStatementDoNotStartAnother) {
  EXPECT_EQ(statements_in("INSERT INTO dbo.t (a) SELECT 1 UNION ALL SELECT 2"), 1U);
  EXPECT_EQ(statements_in("GRANT SELECT ON dbo.t TO reader"), 1U);
  EXPECT_EQ(statements_in("DROP TABLE IF EXISTS dbo.t"), 1U);
  EXPECT_EQ(statements_in("UPDATE dbo.t SET a = 1 SET @x = 2"), 2U);
  EXPECT_EQ(statements_in("SELECT a FROM dbo.t WITH (NOLOCK) SELECT 2"), 2U);
  EXPECT_EQ(statements_in("SELECT CASE WHEN 1 = 1 THEN 1 ELSE 2 END AS x PRINT 'p'"), 2U);
  EXPECT_EQ(statements_in("WITH x AS (SELECT 1 AS a) SELECT a FROM x"), 1U);
  EXPECT_EQ(statements_in("BEGIN TRAN INSERT INTO dbo.t VALUES (1) COMMIT"), 3U);
  EXPECT_EQ(statements_in("IF @@TRANCOUNT > 0 COMMIT TRAN"), 1U);
}

TEST(RaiserrorFormat, FormatsAsTheRaiserrorPagesExamples) {
  EXPECT_EQ(format_raiserror("This is message %s %d.", {Value{std::string("number")}, Value{std::int64_t{5}}}),
            "This is message number 5.");
  EXPECT_EQ(
      format_raiserror("<<%*.*s>>", {Value{std::int64_t{7}}, Value{std::int64_t{3}}, Value{std::string("abcde")}}),
      "<<    abc>>");
  EXPECT_EQ(format_raiserror("<<%7.3s>>", {Value{std::string("abcde")}}), "<<    abc>>");
  EXPECT_EQ(format_raiserror("100%% of %x", {Value{std::int64_t{255}}}), "100% of ff");
  EXPECT_EQ(format_raiserror("missing %s", {}), "missing (null)");
}

}  // namespace
}  // namespace mssqlcdc::tds
