// tds_assign_test.cpp: assigned(), the implicit conversion INSERT and UPDATE apply to a value
// before it goes into a column. The oracle is Microsoft's documentation: the chart of
// https://learn.microsoft.com/en-us/sql/t-sql/data-types/data-type-conversion-database-engine
// (implicit, explicit-only and not allowed pairs), CAST's rules at
// https://learn.microsoft.com/en-us/sql/t-sql/functions/cast-and-convert-transact-sql (a decimal
// to an integer truncates) and https://learn.microsoft.com/en-us/sql/t-sql/data-types/bit-transact-sql
// ('TRUE' is 1, any nonzero number is 1).
#include <gtest/gtest.h>

#include <string>

#include "mssqlcdc/error.hpp"
#include "tds/src/scalar_assign.hpp"

namespace mssqlcdc::tds {
namespace {

TypedValue text(const std::string& s) { return {ColumnType{SqlKind::VarChar, 30}, s}; }
TypedValue integer(std::int64_t i) { return {ColumnType{SqlKind::Int}, i}; }

int error_of(const ColumnType& to, const TypedValue& v) {
  try {
    (void)assigned(to, v);
  } catch (const Error& e) {
    return e.number();
  }
  return 0;
}

TEST(Assigned, TextBecomesAnIntegerADecimalAndABit) {
  EXPECT_EQ(std::get<std::int64_t>(assigned(ColumnType{SqlKind::Int}, text("44")).value), 44);
  const auto d = assigned(ColumnType{SqlKind::Decimal, 17, 9, 2, false}, text("12.5"));
  EXPECT_EQ(std::get<Decimal>(d.value).unscaled, 1250);
  EXPECT_TRUE(std::get<bool>(assigned(ColumnType{SqlKind::Bit}, text("true")).value));
  EXPECT_FALSE(std::get<bool>(assigned(ColumnType{SqlKind::Bit}, text("FALSE")).value));
}

TEST(Assigned, NumbersBecomeTextAndADecimalTruncatesToAnInteger) {
  EXPECT_EQ(std::get<std::string>(assigned(ColumnType{SqlKind::NVarChar, 10}, integer(5)).value), "5");
  const TypedValue decimal{ColumnType{SqlKind::Decimal, 17, 3, 1, false}, Decimal{127}};  // 12.7
  EXPECT_EQ(std::get<std::int64_t>(assigned(ColumnType{SqlKind::Int}, decimal).value), 12);
  EXPECT_TRUE(std::get<bool>(assigned(ColumnType{SqlKind::Bit}, integer(7)).value));
}

TEST(Assigned, AFixedLengthTargetIsNeitherPaddedNorCut) {
  EXPECT_EQ(std::get<std::string>(assigned(ColumnType{SqlKind::Char, 3}, integer(7)).value), "7");
  EXPECT_EQ(std::get<std::string>(assigned(ColumnType{SqlKind::Char, 3}, text("abcd")).value), "abcd");
}

TEST(Assigned, ValuesThatAreNoValueOfTheTypeOrTooLargeFailAsSqlServerDoes) {
  EXPECT_EQ(error_of(ColumnType{SqlKind::Int}, text("abc")), 245);
  EXPECT_EQ(error_of(ColumnType{SqlKind::Int}, text("99999999999")), 248);
  EXPECT_EQ(error_of(ColumnType{SqlKind::Decimal, 17, 9, 2, false}, text("x")), 8114);
  EXPECT_EQ(error_of(ColumnType{SqlKind::TinyInt}, integer(300)), 8115);
}

TEST(Assigned, ExplicitOnlyPairsAre257AndPairsWithNoConversionAre206) {
  EXPECT_EQ(error_of(ColumnType{SqlKind::VarBinary, 10}, text("abc")), 257);
  EXPECT_EQ(error_of(ColumnType{SqlKind::Int}, TypedValue{ColumnType{SqlKind::DateTime}, DateTime2{}}), 257);
  EXPECT_EQ(error_of(ColumnType{SqlKind::Int}, TypedValue{ColumnType{SqlKind::DateTime2}, DateTime2{}}), 206);
  EXPECT_EQ(error_of(ColumnType{SqlKind::UniqueIdentifier, 16}, integer(5)), 206);
  EXPECT_EQ(error_of(ColumnType{SqlKind::Date}, integer(5)), 206);
}

TEST(Assigned, BinaryBecomesTextAndAnInteger) {
  const TypedValue bytes{ColumnType{SqlKind::VarBinary, 4}, Bytes{0x00, 0x00, 0x41, 0x42}};
  EXPECT_EQ(std::get<std::string>(assigned(ColumnType{SqlKind::VarChar, 10}, bytes).value), std::string("\0\0AB", 4));
  EXPECT_EQ(std::get<std::int64_t>(assigned(ColumnType{SqlKind::Int}, bytes).value), 0x4142);
}

TEST(Assigned, NullStaysNull) {
  EXPECT_TRUE(std::holds_alternative<std::monostate>(assigned(ColumnType{SqlKind::Int}, TypedValue{}).value));
}

}  // namespace
}  // namespace mssqlcdc::tds
