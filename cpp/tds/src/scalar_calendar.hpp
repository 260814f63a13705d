// scalar_calendar.hpp: the proleptic Gregorian calendar under the date and time types. A value
// is days since 0001-01-01 and 100 ns ticks into the day (DateTime2); a DateTimeOffset holds UTC
// and its offset in minutes. Text in and out is SQL Server's: ISO 8601 read, each type's own
// form written. Internal to src/tds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "relations.hpp"

namespace mssqlcdc::tds::scalar {

constexpr std::int64_t kTicksPerDay = 864000000000;
constexpr std::int64_t kDays1970 = 719162;  // 0001-01-01 to 1970-01-01

struct Civil {
  int y, m, d;
};
[[nodiscard]] std::int32_t days_of(int y, int m, int d);
[[nodiscard]] Civil civil_of(std::int64_t days);

// Carries ticks past a day (or below zero) into the days.
[[nodiscard]] DateTime2 normalized(std::int64_t days, std::int64_t ticks);
// Rounds ticks to `scale` fractional digits, half up, as SQL Server converts.
[[nodiscard]] DateTime2 rounded(DateTime2 v, int scale);
// The local clock of an offset value.
[[nodiscard]] DateTime2 local_of(const DateTimeOffset& v);

// 'YYYY-MM-DD[ |T]hh:mm[:ss[.fffffff]][ +hh:mm]', 'YYYYMMDD[ hh:mm...]', or a time alone;
// nullopt when it is none of these.
[[nodiscard]] std::optional<DateTimeOffset> parse_datetime(std::string_view s, bool time_only);

[[nodiscard]] std::string date_text(std::int64_t days);              // 2026-01-02
[[nodiscard]] std::string time_text(std::int64_t ticks, int scale);  // 10:04:05.1234567
[[nodiscard]] std::string offset_text(int minutes);                  // +01:00
// The datetime type's own text: style 0 "Jan  2 2026 10:04AM", 120/121/126 and 20/21 ISO.
[[nodiscard]] std::string datetime_text(const DateTime2& v, int style);

}  // namespace mssqlcdc::tds::scalar
