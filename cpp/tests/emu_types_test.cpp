#include <gtest/gtest.h>

#include <random>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/types.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {
namespace {

TEST(EmuTypes, TypeStringsParseToCanonicalNames) {
  const std::pair<const char*, const char*> cases[] = {
      {"INT", "int"},
      {"Decimal", "decimal(18,0)"},
      {"decimal( 10 , 2 )", "decimal(10,2)"},
      {"nvarchar(MAX)", "nvarchar(max)"},
      {"varchar", "varchar(1)"},
      {"float(24)", "real"},
      {"float", "float"},
      {"float(25)", "float"},
      {"datetime2", "datetime2(7)"},
      {"timestamp", "rowversion"},
      {"money", "money"},
      {"time(3)", "time(3)"},
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(SqlType::parse(in).canonical(), out) << in;
}

TEST(EmuTypes, BadTypeStringsAreSchemaErrors) {
  for (const char* bad : {"xml(5)", "sql_variant(8)", "decimal(39)", "decimal(5,6)", "varchar(8001)", "nvarchar(4001)",
                          "char(max)", "int(4)", "varchar(", "geography(1)", "datetime2(8)", "dbo.my_type"}) {
    try {
      (void)SqlType::parse(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::EmuSchema) << bad;
    }
  }
}

TEST(EmuTypes, DecimalStorageOrderIsNumericOrderForRandomValues) {
  std::mt19937_64 rng(42);
  std::vector<__int128> values;
  for (int i = 0; i < 2000; ++i) {
    __int128 v = static_cast<__int128>(rng()) * static_cast<__int128>(rng() % 1000);
    if (rng() % 2) v = -v;
    values.push_back(v);
  }
  for (std::size_t i = 1; i < values.size(); ++i) {
    const auto a = values[i - 1];
    const auto b = values[i];
    EXPECT_EQ(decimal_decode(decimal_encode(a)), a);
    EXPECT_EQ(a < b, decimal_encode(a) < decimal_encode(b));
  }
}

TEST(EmuTypes, DecimalsRoundHalfAwayFromZeroAndOverflowRaises8115) {
  const SqlType t = SqlType::parse("decimal(5,2)");
  EXPECT_EQ(decimal_text(coerce(D("1.005"), t, "c").s, 2), "1.01");
  EXPECT_EQ(decimal_text(coerce(D("-1.005"), t, "c").s, 2), "-1.01");
  EXPECT_EQ(decimal_text(coerce(D("1.004"), t, "c").s, 2), "1.00");
  EXPECT_EQ(decimal_text(coerce(I(-7), t, "c").s, 2), "-7.00");
  try {
    (void)coerce(D("1000"), t, "c");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.number(), 8115);
  }
}

TEST(EmuTypes, StringsCountCharactersAndUtf16UnitsAndCharPads) {
  EXPECT_EQ(coerce(S("ab"), SqlType::parse("char(4)"), "c").s, "ab  ");
  EXPECT_NO_THROW((void)coerce(S("\xC3\xA9\xC3\xA9"), SqlType::parse("varchar(2)"), "c"));
  // one code point above U+FFFF is two UTF-16 units
  EXPECT_THROW((void)coerce(S("\xF0\x9F\x98\x80"), SqlType::parse("nvarchar(1)"), "c"), Error);
  EXPECT_NO_THROW((void)coerce(S("\xF0\x9F\x98\x80"), SqlType::parse("varchar(1)"), "c"));
}

TEST(EmuTypes, GuidsStoreInSqlServerSortOrder) {
  // SQL Server orders uniqueidentifiers by the last group first.
  const auto a = coerce(S("FFFFFFFF-FFFF-FFFF-FFFF-000000000001"), SqlType::parse("uniqueidentifier"), "g");
  const auto b = coerce(S("00000000-0000-0000-0000-000000000002"), SqlType::parse("uniqueidentifier"), "g");
  EXPECT_LT(a.s, b.s);
  EXPECT_EQ(guid_to_text(a.s), "FFFFFFFF-FFFF-FFFF-FFFF-000000000001");
  const auto c = coerce(S("01234567-89AB-CDEF-0123-456789ABCDEF"), SqlType::parse("uniqueidentifier"), "g");
  EXPECT_EQ(guid_to_text(c.s), "01234567-89AB-CDEF-0123-456789ABCDEF");
}

TEST(EmuTypes, DatetimeTicksRoundHalfUpAndCeilNeverGoesBelow) {
  const Micros s = 1'000'000;
  EXPECT_EQ(round_to_tick(10 * s + 1'000), 10 * s);
  EXPECT_EQ(round_to_tick(10 * s + 2'000), 10 * s + 3'000);
  EXPECT_EQ(round_to_tick(10 * s + 5'000), 10 * s + 7'000);
  EXPECT_EQ(round_to_tick(10 * s + 999'000), 11 * s);
  for (Micros u = 0; u < 20'000; u += 333) {
    const Micros c = ceil_to_tick(5 * s + u);
    EXPECT_GE(c, 5 * s + u);
    EXPECT_EQ(round_to_tick(c), c);
    EXPECT_EQ(ceil_to_tick(c), c);
  }
}

TEST(EmuTypes, TypesWithoutASparkFormAreHeldOpaquelyAsBytes) {
  for (const char* name : {"sql_variant", "HierarchyId", "geometry", "geography"}) {
    const SqlType t = SqlType::parse(name);
    EXPECT_TRUE(t.is_opaque()) << name;
    EXPECT_EQ(t.arrow_name(), "binary") << name;
    Value bytes;
    bytes.kind = Value::Kind::Bytes;
    bytes.s = std::string("\x01\x00\xff", 3);
    EXPECT_EQ(coerce(bytes, t, "c").s, bytes.s) << name;
    EXPECT_THROW((void)coerce(S("POINT(1 2)"), t, "c"), Error) << name;
  }
  EXPECT_EQ(SqlType::parse("HierarchyId").canonical(), "hierarchyid");
}

// https://learn.microsoft.com/en-us/sql/t-sql/data-types/smalldatetime-transact-sql: 29.998
// seconds or less round down to the minute, 29.999 or more round up.
TEST(EmuTypes, SmalldatetimeRoundsDownAt29998AndUpAt29999Seconds) {
  const SqlType t = SqlType::parse("smalldatetime");
  const Micros s = 1'000'000;
  const Micros minute = 60 * s * 1000;
  Value v;
  v.kind = Value::Kind::DateTime;
  v.i = minute + 29'998'000;
  EXPECT_EQ(coerce(v, t, "c").i, minute);
  v.i = minute + 29'999'000;
  EXPECT_EQ(coerce(v, t, "c").i, minute + 60 * s);
}

TEST(EmuTypes, IntegerRangesAndRowversionFollowSqlServer) {
  EXPECT_THROW((void)coerce(I(256), SqlType::parse("tinyint"), "c"), Error);
  EXPECT_THROW((void)coerce(I(-1), SqlType::parse("tinyint"), "c"), Error);
  EXPECT_THROW((void)coerce(I(32768), SqlType::parse("smallint"), "c"), Error);
  EXPECT_NO_THROW((void)coerce(I(-32768), SqlType::parse("smallint"), "c"));
  try {
    (void)coerce(I(1), SqlType::parse("rowversion"), "c");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.number(), 273);
  }
}

}  // namespace
}  // namespace mssqlcdc::emu::test

namespace mssqlcdc::emu::test {
namespace {

TEST(EmuTypes, ThirtyEightDigitDecimalsFitAndThirtyNineDoNot) {
  const SqlType t = SqlType::parse("decimal(38,0)");
  const std::string nines(38, '9');
  EXPECT_EQ(decimal_text(coerce(D(nines), t, "c").s, 0), nines);
  EXPECT_EQ(decimal_text(coerce(D("-" + nines), t, "c").s, 0), "-" + nines);
  EXPECT_THROW((void)coerce(D("1" + std::string(38, '0')), t, "c"), Error);
  EXPECT_THROW((void)coerce(D("1" + std::string(60, '0')), SqlType::parse("decimal(38,10)"), "c"), Error);
}

}  // namespace
}  // namespace mssqlcdc::emu::test
