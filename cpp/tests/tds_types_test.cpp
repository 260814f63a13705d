#include <gtest/gtest.h>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/tokens.hpp"
#include "mssqlcdc/tds/types.hpp"

namespace mssqlcdc::tds {
namespace {

Bytes type_info(const ColumnType& t) {
  Writer w;
  write_type_info(w, t);
  return w.take();
}

Bytes value(const ColumnType& t, const Value& v) {
  Writer w;
  write_value(w, t, v);
  return w.take();
}

// The reverse read gives back what was written: the oracle is the literal bytes of each test
// below; this only checks the decoder agrees with them.
Value round_trip(const ColumnType& t, const Value& v) {
  Writer w;
  write_type_info(w, t);
  write_value(w, t, v);
  const Bytes b = w.take();
  Reader r(b);
  const ColumnType back = read_type_info(r);
  Value out = read_value(r, back);
  EXPECT_TRUE(r.at_end());
  return out;
}

TEST(TdsTypes, TheIntFamilyIsIntnWithItsWidthLittleEndian) {
  EXPECT_EQ(type_info({SqlKind::Int}), (Bytes{0x26, 4}));
  EXPECT_EQ(value({SqlKind::Int}, std::int64_t{-2}), (Bytes{4, 0xFE, 0xFF, 0xFF, 0xFF}));
  EXPECT_EQ(value({SqlKind::TinyInt}, std::int64_t{255}), (Bytes{1, 0xFF}));
  EXPECT_EQ(value({SqlKind::SmallInt}, std::int64_t{258}), (Bytes{2, 0x02, 0x01}));
  EXPECT_EQ(value({SqlKind::BigInt}, std::int64_t{1} << 40), (Bytes{8, 0, 0, 0, 0, 0, 1, 0, 0}));
  for (const std::int64_t v : {std::int64_t{0}, std::int64_t{-1}, INT64_MIN, INT64_MAX}) {
    EXPECT_EQ(round_trip({SqlKind::BigInt}, v), Value{v});
  }
}

TEST(TdsTypes, AnIntegerPastItsTypeIsRefused) {
  EXPECT_THROW((void)value({SqlKind::TinyInt}, std::int64_t{256}), Error);
  EXPECT_THROW((void)value({SqlKind::SmallInt}, std::int64_t{-32769}), Error);
  EXPECT_THROW((void)value({SqlKind::Int}, std::int64_t{1} << 31), Error);
}

TEST(TdsTypes, BitIsBitnOfOneByte) {
  EXPECT_EQ(type_info({SqlKind::Bit}), (Bytes{0x68, 1}));
  EXPECT_EQ(value({SqlKind::Bit}, true), (Bytes{1, 1}));
  EXPECT_EQ(round_trip({SqlKind::Bit}, false), Value{false});
}

TEST(TdsTypes, DecimalIsSignThenMagnitudeInTheWidthOfItsPrecision) {
  const ColumnType d38{SqlKind::Decimal, 0, 38, 0};
  EXPECT_EQ(type_info(d38), (Bytes{0x6A, 17, 38, 0}));
  Bytes expected{17, 1, 0x39, 0x30};  // 12345, positive
  expected.resize(18, 0);
  EXPECT_EQ(value(d38, Decimal{12345}), expected);
  const ColumnType d18{SqlKind::Decimal, 0, 18, 2};
  EXPECT_EQ(value(d18, Decimal{-950}), (Bytes{9, 0, 0xB6, 0x03, 0, 0, 0, 0, 0, 0}));  // -9.50
  const __int128 big = (static_cast<__int128>(1) << 100) + 7;
  EXPECT_EQ(round_trip(d38, Decimal{-big}), Value{Decimal{-big}});
  EXPECT_THROW((void)value({SqlKind::Decimal, 0, 9, 0}, Decimal{static_cast<__int128>(1) << 33}), Error);
}

TEST(TdsTypes, BinaryAndVarbinaryCarryATwoByteLength) {
  const ColumnType b10{SqlKind::Binary, 10};
  EXPECT_EQ(type_info(b10), (Bytes{0xAD, 10, 0}));
  EXPECT_EQ(type_info({SqlKind::VarBinary, 20}), (Bytes{0xA5, 20, 0}));
  EXPECT_EQ(value(b10, Bytes{0xAA, 0xBB}), (Bytes{2, 0, 0xAA, 0xBB}));
  const Bytes three{1, 2, 3};
  EXPECT_EQ(round_trip({SqlKind::VarBinary, 20}, three), Value{three});
  EXPECT_THROW((void)value({SqlKind::VarBinary, 2}, Bytes{1, 2, 3}), Error);
}

TEST(TdsTypes, NvarcharIsUtf16WithItsLengthInBytesAndACollation) {
  const ColumnType n20{SqlKind::NVarChar, 20};
  EXPECT_EQ(type_info(n20), (Bytes{0xE7, 40, 0, 0x09, 0x04, 0xD0, 0x00, 0x34}));
  EXPECT_EQ(value(n20, std::string("hé")), (Bytes{4, 0, 'h', 0, 0xE9, 0}));
  EXPECT_EQ(round_trip(n20, std::string("päid ✓")), Value{std::string("päid ✓")});
}

TEST(TdsTypes, NvarcharMaxIsPlpChunksEndedByAZeroChunk) {
  const ColumnType nmax{SqlKind::NVarChar, kMax};
  EXPECT_EQ(type_info(nmax), (Bytes{0xE7, 0xFF, 0xFF, 0x09, 0x04, 0xD0, 0x00, 0x34}));
  EXPECT_EQ(value(nmax, std::string("ab")), (Bytes{4, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 'a', 0, 'b', 0, 0, 0, 0, 0}));
  EXPECT_EQ(value(nmax, std::string()), (Bytes{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  const std::string long_text(70000, 'x');
  EXPECT_EQ(round_trip(nmax, long_text), Value{long_text});
}

TEST(TdsTypes, Datetime2IsTimeInUnitsOfItsScaleThenThreeDayBytes) {
  const ColumnType dt3{SqlKind::DateTime2, 0, 0, 3};
  EXPECT_EQ(type_info(dt3), (Bytes{0x2A, 3}));
  // 0001-01-02 00:00:01.5: one day, 15,000,000 ticks = 1500 milliseconds in 4 bytes.
  EXPECT_EQ(value(dt3, DateTime2{1, 15'000'000}), (Bytes{7, 0xDC, 0x05, 0, 0, 1, 0, 0}));
  const ColumnType dt7{SqlKind::DateTime2, 0, 0, 7};
  const DateTime2 t{738'000, 863'999'999'999};
  EXPECT_EQ(round_trip(dt7, t), Value{t});
}

TEST(TdsTypes, EveryTypeWritesItsOwnNull) {
  EXPECT_EQ(value({SqlKind::Int}, std::monostate{}), (Bytes{0}));
  EXPECT_EQ(value({SqlKind::Bit}, std::monostate{}), (Bytes{0}));
  EXPECT_EQ(value({SqlKind::Decimal, 0, 38, 0}, std::monostate{}), (Bytes{0}));
  EXPECT_EQ(value({SqlKind::DateTime2, 0, 0, 3}, std::monostate{}), (Bytes{0}));
  EXPECT_EQ(value({SqlKind::Binary, 10}, std::monostate{}), (Bytes{0xFF, 0xFF}));
  EXPECT_EQ(value({SqlKind::NVarChar, 10}, std::monostate{}), (Bytes{0xFF, 0xFF}));
  EXPECT_EQ(value({SqlKind::NVarChar, kMax}, std::monostate{}), Bytes(8, 0xFF));
  EXPECT_TRUE(is_null(round_trip({SqlKind::NVarChar, kMax}, std::monostate{})));
}

TEST(TdsTypes, AValueOfTheWrongKindIsRefused) {
  EXPECT_THROW((void)value({SqlKind::Int}, std::string("1")), Error);
  EXPECT_THROW((void)value({SqlKind::NVarChar, 5}, std::int64_t{1}), Error);
}

TEST(TdsTypes, ARowWithANullIsAnNbcrowWhoseBitmapLeavesTheNullOut) {
  const std::vector<Column> cols{{"a", {SqlKind::Int}, true}, {"b", {SqlKind::Int}, true}};
  Writer w;
  write_row(w, cols, std::vector<Value>{std::monostate{}, std::int64_t{7}});
  EXPECT_EQ(w.data(), (Bytes{0xD2, 0x01, 4, 7, 0, 0, 0}));
  Writer plain;
  write_row(plain, cols, std::vector<Value>{std::int64_t{1}, std::int64_t{2}});
  EXPECT_EQ(plain.data(), (Bytes{0xD1, 4, 1, 0, 0, 0, 4, 2, 0, 0, 0}));
}

TEST(TdsTypes, FixedLengthParameterFormsCarryNoLengthByte) {
  const Bytes int4{0x38, 0x2A, 0, 0, 0};
  Reader r(int4);
  const ColumnType t = read_type_info(r);
  EXPECT_EQ(read_value(r, t), Value{std::int64_t{42}});
  EXPECT_TRUE(r.at_end());
}

TEST(TdsTypes, DateIsDatenWithThreeBytesOfDaysSinceYearOne) {
  EXPECT_EQ(type_info({SqlKind::Date}), (Bytes{0x28}));
  // 2000-01-01 is day 730119 = 0x0B2407 since 0001-01-01.
  EXPECT_EQ(value({SqlKind::Date}, DateTime2{730119, 0}), (Bytes{3, 0x07, 0x24, 0x0B}));
  EXPECT_EQ(value({SqlKind::Date}, std::monostate{}), (Bytes{0}));
  EXPECT_EQ(round_trip({SqlKind::Date}, DateTime2{730119, 0}), Value(DateTime2{730119, 0}));
}

TEST(TdsTypes, DatetimeCountsDaysFrom1900AndThreeHundredthsOfASecond) {
  EXPECT_EQ(type_info({SqlKind::DateTime}), (Bytes{0x6F, 8}));
  // 1900-01-02 00:00:01: day 1, 300 three-hundredths.
  const DateTime2 v{693596, 10'000'000};
  EXPECT_EQ(value({SqlKind::DateTime}, v), (Bytes{8, 1, 0, 0, 0, 0x2C, 0x01, 0, 0}));
  EXPECT_EQ(round_trip({SqlKind::DateTime}, v), Value(v));
}

TEST(TdsTypes, TimeAndDatetimeoffsetCarryTheirScale) {
  EXPECT_EQ(type_info({SqlKind::Time, 0, 0, 7}), (Bytes{0x29, 7}));
  // 00:00:01 at scale 0 is 1 unit in 3 bytes.
  EXPECT_EQ(value({SqlKind::Time, 0, 0, 0}, DateTime2{0, 10'000'000}), (Bytes{3, 1, 0, 0}));
  const DateTimeOffset dto{DateTime2{730119, 10'000'000}, -300};
  EXPECT_EQ(type_info({SqlKind::DateTimeOffset, 0, 0, 0}), (Bytes{0x2B, 0}));
  EXPECT_EQ(value({SqlKind::DateTimeOffset, 0, 0, 0}, dto), (Bytes{8, 1, 0, 0, 0x07, 0x24, 0x0B, 0xD4, 0xFE}));
  EXPECT_EQ(round_trip({SqlKind::DateTimeOffset, 0, 0, 0}, dto), Value(dto));
}

TEST(TdsTypes, RealIsFourByteFltnAndGuidSixteenBytes) {
  EXPECT_EQ(type_info({SqlKind::Real}), (Bytes{0x6D, 4}));
  EXPECT_EQ(value({SqlKind::Real}, 1.5), (Bytes{4, 0, 0, 0xC0, 0x3F}));
  EXPECT_EQ(round_trip({SqlKind::Real}, 1.5), Value(1.5));
  EXPECT_EQ(type_info({SqlKind::UniqueIdentifier}), (Bytes{0x24, 16}));
  const Bytes guid{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  EXPECT_EQ(round_trip({SqlKind::UniqueIdentifier}, guid), Value(guid));
  EXPECT_THROW((void)value({SqlKind::UniqueIdentifier}, Bytes{1, 2}), Error);
}

TEST(TdsTypes, AnNtextParameterIsReadWithItsFourByteLength) {
  // ntext, max length, collation; then a 4-byte length and UTF-16LE "ab"; then a NULL.
  const Bytes b{0x63, 0xFE, 0xFF, 0xFF, 0x7F, 0x09, 0x04, 0xD0, 0x00, 0x34, 4,
                0,    0,    0,    'a',  0,    'b',  0,    0xFF, 0xFF, 0xFF, 0xFF};
  Reader r(b);
  const ColumnType t = read_type_info(r);
  EXPECT_EQ(t.kind, SqlKind::NVarChar);
  EXPECT_EQ(read_value(r, t), Value(std::string("ab")));
  EXPECT_TRUE(is_null(read_value(r, t)));
  EXPECT_TRUE(r.at_end());
}

}  // namespace
}  // namespace mssqlcdc::tds
