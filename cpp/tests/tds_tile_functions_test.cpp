// The functions a reconcile's tile query (python/mssql_cdc/sqlserver/tsql/tiles.py) asks the TDS
// front end for. The oracles are published values: the FIPS 180 and RFC 1321 test vectors, the
// byte layouts SQL Server documents, and the texts SQL Server prints.
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

// A catalog without objects: every statement here is over constants and parameters.
class NoObjects final : public Catalog {
 public:
  std::unique_ptr<Relation> relation(const ObjectName&) override { return nullptr; }
  std::unique_ptr<Relation> function(const ObjectName&, const std::vector<TypedValue>&) override { return nullptr; }
  std::optional<TypedValue> scalar(const ObjectName&, const std::vector<TypedValue>&) override { return std::nullopt; }
};

class TileFunctions : public ::testing::Test {
 protected:
  NoObjects catalog;

  std::vector<Value> row(const std::string& sql, Params params = {}) {
    RowSource src = run_select(parse_select(lex(sql)), catalog, std::move(params));
    std::vector<Value> out;
    EXPECT_TRUE(src.next(out)) << sql;
    columns = src.columns;
    return out;
  }
  Value one(const std::string& sql, Params params = {}) { return row(sql, std::move(params)).at(0); }

  int error_of(const std::string& sql) {
    try {
      (void)row(sql);
    } catch (const Error& e) {
      message = e.what();
      return e.number();
    }
    return 0;
  }

  std::vector<Column> columns;
  std::string message;
};

Value hex(const std::string& digits) {
  Bytes out;
  for (std::size_t i = 0; i < digits.size(); i += 2) {
    out.push_back(static_cast<std::uint8_t>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  }
  return out;
}
Value text(const std::string& s) { return s; }
Value i64(std::int64_t v) { return v; }

TEST_F(TileFunctions, HashbytesGivesThePublishedDigestsOfAbc) {
  EXPECT_EQ(one("SELECT HASHBYTES('SHA2_256', 'abc')"),
            hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
  EXPECT_EQ(one("SELECT HASHBYTES('SHA2_256', '')"),
            hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  EXPECT_EQ(one("SELECT HASHBYTES('SHA2_512', 'abc')"),
            hex("ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"));
  EXPECT_EQ(one("SELECT HASHBYTES('SHA1', 'abc')"), hex("a9993e364706816aba3e25717850c26c9cd0d89d"));
  EXPECT_EQ(one("SELECT HASHBYTES('sha', 'abc')"), hex("a9993e364706816aba3e25717850c26c9cd0d89d"));
  EXPECT_EQ(one("SELECT HASHBYTES('MD5', 'abc')"), hex("900150983cd24fb0d6963f7d28e17f72"));
  EXPECT_EQ(columns.at(0).type.kind, SqlKind::VarBinary);
  EXPECT_EQ(columns.at(0).type.length, 8000);
}

TEST_F(TileFunctions, HashbytesOfAnNvarcharHashesItsUtf16LittleEndianBytes) {
  EXPECT_EQ(one("SELECT CASE WHEN HASHBYTES('SHA2_256', N'abc') = HASHBYTES('SHA2_256', 0x610062006300) "
                "THEN 1 ELSE 0 END"),
            i64(1));
  // U+00E9 is one unit (E9 00); U+1F600 is the surrogate pair D83D DE00.
  EXPECT_EQ(one("SELECT CASE WHEN HASHBYTES('SHA2_256', N'\u00e9\U0001F600') = "
                "HASHBYTES('SHA2_256', 0xE9003DD800DE) THEN 1 ELSE 0 END"),
            i64(1));
  // A varchar hashes its own bytes, so it differs from the same text as nvarchar.
  EXPECT_EQ(one("SELECT CASE WHEN HASHBYTES('SHA2_256', 'abc') = HASHBYTES('SHA2_256', N'abc') THEN 1 ELSE 0 END"),
            i64(0));
}

TEST_F(TileFunctions, HashbytesIsNullForANullInputOrAnUnknownAlgorithm) {
  EXPECT_EQ(one("SELECT HASHBYTES('SHA2_256', CAST(NULL AS nvarchar(10)))"), Value{});
  EXPECT_EQ(one("SELECT HASHBYTES('SHA3', 'abc')"), Value{});
  EXPECT_EQ(error_of("SELECT HASHBYTES('SHA2_256', 5)"), 8116);
  EXPECT_EQ(message, "Argument data type int is invalid for argument 2 of hashbytes function.");
  EXPECT_EQ(error_of("SELECT HASHBYTES('SHA2_256')"), 174);
}

TEST_F(TileFunctions, SubstringCountsBytesOfBinaryAndCharactersOfText) {
  EXPECT_EQ(one("SELECT SUBSTRING(0x0102030405060708090A, 1, 8)"), hex("0102030405060708"));
  EXPECT_EQ(columns.at(0).type.kind, SqlKind::VarBinary);
  EXPECT_EQ(one("SELECT SUBSTRING(0x010203, 3, 10)"), hex("03"));
  EXPECT_EQ(one("SELECT SUBSTRING(0x010203, 4, 1)"), hex(""));
  // A start below 1 still counts toward the length: characters 0 and -1 do not exist.
  EXPECT_EQ(one("SELECT SUBSTRING('abcdef', -1, 4)"), text("ab"));
  EXPECT_EQ(one("SELECT SUBSTRING(N'K\u00f8benhavn', 2, 3)"), text("\u00f8be"));
  EXPECT_EQ(columns.at(0).type.kind, SqlKind::NVarChar);
  EXPECT_EQ(one("SELECT SUBSTRING('abc', NULL, 1)"), Value{});
  EXPECT_EQ(error_of("SELECT SUBSTRING('abc', 1, -1)"), 537);
  EXPECT_EQ(message, "Invalid length parameter passed to the LEFT or SUBSTRING function.");
  EXPECT_EQ(error_of("SELECT SUBSTRING(12, 1, 1)"), 8116);
  EXPECT_EQ(message, "Argument data type int is invalid for argument 1 of substring function.");
}

TEST_F(TileFunctions, NcharIsTheCharacterOfAUtf16CodeAndNullOutsideIt) {
  EXPECT_EQ(row("SELECT NCHAR(65), NCHAR(248), NCHAR(1), NCHAR(31), NCHAR(65536), NCHAR(-1), NCHAR(NULL)"),
            (std::vector<Value>{text("A"), text("\u00f8"), text("\x01"), text("\x1f"), Value{}, Value{}, Value{}}));
  EXPECT_EQ(columns.at(0).type.kind, SqlKind::NChar);
  EXPECT_EQ(columns.at(0).type.length, 1);
}

TEST_F(TileFunctions, EightBytesCastToBigintAreASignedBigEndianInteger) {
  EXPECT_EQ(
      row("SELECT CAST(0x0000000000000001 AS bigint), CAST(0xFFFFFFFFFFFFFFFF AS bigint), "
          "CAST(0x8000000000000000 AS bigint), CAST(0x7FFFFFFFFFFFFFFF AS bigint), "
          "CAST(0x0102030405060708090A AS bigint), CAST(0x0102 AS bigint)"),
      (std::vector<Value>{i64(1), i64(-1), i64(INT64_MIN), i64(INT64_MAX), i64(0x030405060708090A), i64(0x0102)}));
}

TEST_F(TileFunctions, ConvertToNvarcharPrintsTheCanonicalTexts) {
  EXPECT_EQ(
      row("SELECT CONVERT(nvarchar(max), CAST(-12.5 AS decimal(9,2))), "
          "CONVERT(nvarchar(max), CAST(-0.05 AS decimal(5,3))), CONVERT(nvarchar(max), CAST(0 AS decimal(4,2))), "
          "CONVERT(nvarchar(max), CAST(1 AS bit)), CONVERT(nvarchar(max), CAST(-9223372036854775808 AS bigint)), "
          "CONVERT(nvarchar(10), CAST('2026-01-02' AS date), 23), "
          "CONVERT(nvarchar(26), CAST(CAST('2026-01-02 03:04:05.1234567' AS datetime2(7)) AS datetime2(6)), 121), "
          "CONVERT(nvarchar(26), CAST(CAST('2026-01-02 03:04:05' AS datetime2(0)) AS datetime2(6)), 121)"),
      (std::vector<Value>{text("-12.50"), text("-0.050"), text("0.00"), text("1"), text("-9223372036854775808"),
                          text("2026-01-02"), text("2026-01-02 03:04:05.123457"), text("2026-01-02 03:04:05.000000")}));
}

TEST_F(TileFunctions, ARowDigestIsTheFirstEightBytesOfTheHashAsABigint) {
  // Decision 1100's text for the row (1, NULL) is U+0002 "1" U+001F U+0001, whose UTF-16LE bytes
  // are written out by hand on the other side.
  Params p;
  p["@p1"] = TypedValue{ColumnType{SqlKind::Int}, std::int64_t{1}};
  const Value digest =
      one("SELECT CAST(SUBSTRING(HASHBYTES('SHA2_256', CAST(CASE WHEN r.v IS NULL THEN NCHAR(1) ELSE NCHAR(2) + "
          "CONVERT(nvarchar(max), r.v) END + NCHAR(31) + CASE WHEN r.w IS NULL THEN NCHAR(1) ELSE NCHAR(2) END "
          "AS nvarchar(max))), 1, 8) AS bigint) FROM (SELECT @p1 AS v, NULL AS w) AS r",
          std::move(p));
  const Value hashed = one("SELECT CAST(SUBSTRING(HASHBYTES('SHA2_256', 0x020031001F000100), 1, 8) AS bigint)");
  EXPECT_EQ(digest, hashed);
}

TEST_F(TileFunctions, ASumOfDecimalDigestsCountsAndAddsExactly) {
  const auto r = row(
      "SELECT COUNT_BIG(*) AS n, SUM(CAST(x.d AS decimal(38, 0))) AS d FROM (SELECT CAST(9223372036854775807 AS "
      "bigint) AS d UNION ALL SELECT CAST(9223372036854775807 AS bigint) UNION ALL SELECT CAST(-1 AS bigint)) AS x");
  const __int128 expected = static_cast<__int128>(INT64_MAX) * 2 - 1;
  EXPECT_EQ(r, (std::vector<Value>{i64(3), Decimal{expected}}));
  EXPECT_EQ(columns.at(1).type.precision, 38);
}

}  // namespace
}  // namespace mssqlcdc::tds
