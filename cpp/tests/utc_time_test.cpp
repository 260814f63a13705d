#include "mssqlcdc/utc_time.hpp"

#include <gtest/gtest.h>

namespace mssqlcdc::utc {
namespace {

TEST(UtcTime, ReadsCommitTimesWithoutAZoneToMilliseconds) {
  EXPECT_EQ(parse_millis("1970-01-01T00:00:00.000", Zone::Forbidden), 0);
  EXPECT_EQ(parse_millis("1970-01-02T00:00:01.5", Zone::Forbidden), 86'401'500);
  EXPECT_EQ(parse_millis("2026-09-28T14:03:12.117", Zone::Forbidden), 1790604192117);
  EXPECT_EQ(parse_millis("2026-09-28T14:03:12", Zone::Forbidden), 1790604192000);
}

TEST(UtcTime, ReadsInstantsOnlyWithAUtcZone) {
  EXPECT_EQ(parse_millis("2026-11-09T06:00:12+00:00", Zone::Required), 1794204012000);
  EXPECT_EQ(parse_millis("2026-11-09T06:00:12Z", Zone::Required), 1794204012000);
  EXPECT_FALSE(parse_millis("2026-11-09T06:00:12", Zone::Required));
  EXPECT_FALSE(parse_millis("2026-11-09T06:00:12+01:00", Zone::Required));
  EXPECT_FALSE(parse_millis("2026-11-09T06:00:12+00:00", Zone::Forbidden));
}

TEST(UtcTime, RejectsImpossibleDatesAndMalformedText) {
  for (const char* bad : {"", "2026-13-01T00:00:00", "2026-02-29T00:00:00", "2026-04-31T00:00:00",
                          "2026-01-01T24:00:00", "2026-01-01T00:60:00", "2026-01-01 00:00:00", "2026-01-01T00:00:00.",
                          "2026-01-01T00:00:00.1234567890", "26-01-01T00:00:00"}) {
    EXPECT_FALSE(parse_millis(bad, Zone::Forbidden)) << bad;
  }
  EXPECT_TRUE(parse_millis("2024-02-29T00:00:00", Zone::Forbidden));
  EXPECT_FALSE(parse_millis("2100-02-29T00:00:00", Zone::Forbidden));
  EXPECT_TRUE(parse_millis("2000-02-29T00:00:00", Zone::Forbidden));
}

TEST(UtcTime, FormatsSecondsAndReadsThemBack) {
  for (const std::int64_t ms : {0LL, 1790604192117LL, 951782400000LL, -1000LL}) {
    const std::string text = format_seconds(ms);
    EXPECT_EQ(parse_millis(text, Zone::Required), ms - ((ms % 1000) + 1000) % 1000) << text;
  }
  EXPECT_EQ(format_seconds(1794204012999), "2026-11-09T06:00:12+00:00");
}

}  // namespace
}  // namespace mssqlcdc::utc
