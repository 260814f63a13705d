// time, datetime2 and datetimeoffset keep 100-ns ticks (decision 1326).
#include <gtest/gtest.h>

#include "mssqlcdc/emu/types.hpp"

namespace mssqlcdc::emu::test {
namespace {

// datetime2(n): "fractional seconds precision 0 to 7 digits, accuracy 100 nanoseconds"
// (https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime2-transact-sql); decision 1326.
TEST(EmuSevenDigits, Datetime2And7TimeStoreTicksAndRoundToTheirPrecision) {
  Value v;
  v.kind = Value::Kind::DateTime;
  v.i = 1'234'567;  // 1.234567 s after 1970
  v.sub_ticks = 8;  // and 800 ns: 1.2345678 s
  EXPECT_EQ(coerce(v, SqlType::parse("datetime2(7)"), "c").i, 12'345'678);
  EXPECT_EQ(coerce(v, SqlType::parse("datetime2(6)"), "c").i, 12'345'680);  // halves up
  EXPECT_EQ(coerce(v, SqlType::parse("datetime2(0)"), "c").i, 10'000'000);
  EXPECT_EQ(coerce(v, SqlType::parse("datetime"), "c").i, 1'233'000);  // datetime keeps microseconds
  v.kind = Value::Kind::Time;
  EXPECT_EQ(coerce(v, SqlType::parse("time(7)"), "c").i, 12'345'678);
  EXPECT_EQ(ticks_to_micros(-1), -1);  // before 1970 the cut goes toward the past
  EXPECT_EQ(ticks_beyond_micros(-1), 9);
}

// time: "accuracy 100 nanoseconds" (https://learn.microsoft.com/en-us/sql/t-sql/data-types/time-transact-sql):
// Arrow carries it in nanoseconds, whole, so its text keeps seven digits (decision 1347);
// datetime2 and datetimeoffset stay in microseconds, the source's own timestamp unit.
TEST(EmuSevenDigits, ArrowCarriesTimeInNanosecondsAndTimestampsInMicroseconds) {
  for (const char* t : {"time(7)", "time(3)", "time(0)"}) {
    EXPECT_EQ(SqlType::parse(t).arrow_format(), "ttn") << t;
    EXPECT_EQ(SqlType::parse(t).arrow_name(), "time64[ns]") << t;
  }
  EXPECT_EQ(SqlType::parse("datetime2(7)").arrow_name(), "timestamp[us]");
  EXPECT_EQ(SqlType::parse("datetimeoffset(7)").arrow_name(), "timestamp[us, tz=UTC]");
}

// CONVERT writes datetime2 as yyyy-mm-dd hh:mi:ss.nnnnnnn, 0001-01-01 through 9999-12-31
// 23:59:59.9999999 (https://learn.microsoft.com/en-us/sql/t-sql/functions/cast-and-convert-transact-sql,
// https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime2-transact-sql); the text the
// reader writes for a column declared STRING (decision 1345). 0001-01-01 is 719162 days before
// 1970-01-01 and 9999-12-31 2932896 days after it.
TEST(EmuSevenDigits, TicksTextWritesEverySeventhDigitAcrossTheWholeRange) {
  constexpr std::int64_t kTicksPerDay = 864'000'000'000;
  EXPECT_EQ(ticks_text(-719'162 * kTicksPerDay + 1, 7), "0001-01-01 00:00:00.0000001");
  EXPECT_EQ(ticks_text(-719'162 * kTicksPerDay, 7), "0001-01-01 00:00:00.0000000");
  EXPECT_EQ(ticks_text(2'932'897 * kTicksPerDay - 1, 7), "9999-12-31 23:59:59.9999999");
  EXPECT_EQ(ticks_text(12'345'678, 7), "1970-01-01 00:00:01.2345678");
  EXPECT_EQ(ticks_text(12'345'679, 7), "1970-01-01 00:00:01.2345679");  // 100 ns apart, two texts
  EXPECT_EQ(ticks_text(-1, 7), "1969-12-31 23:59:59.9999999");
  EXPECT_EQ(ticks_text(12'340'000, 3), "1970-01-01 00:00:01.234");  // datetime2(3): three digits
  EXPECT_EQ(ticks_text(10'000'000, 0), "1970-01-01 00:00:01");      // datetime2(0): no point
}

}  // namespace
}  // namespace mssqlcdc::emu::test
