#include "mssqlcdc/utc_time.hpp"

#include <cstdio>

namespace mssqlcdc::utc {
namespace {

bool digits(std::string_view text, std::size_t pos, std::size_t count, int& out) {
  if (pos + count > text.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    out = out * 10 + (text[i] - '0');
  }
  return true;
}

// Howard Hinnant's days_from_civil: days since 1970-01-01 of a proleptic Gregorian date.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

void civil_from_days(std::int64_t z, int& y, unsigned& m, unsigned& d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = static_cast<int>(static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0));
}

unsigned days_in_month(int y, int m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

}  // namespace

std::optional<std::int64_t> parse_millis(std::string_view text, Zone zone) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!digits(text, 0, 4, y) || text.size() < 19 || text[4] != '-' || !digits(text, 5, 2, mo) || text[7] != '-' ||
      !digits(text, 8, 2, d) || text[10] != 'T' || !digits(text, 11, 2, h) || text[13] != ':' ||
      !digits(text, 14, 2, mi) || text[16] != ':' || !digits(text, 17, 2, s)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || static_cast<unsigned>(d) > days_in_month(y, mo) || h > 23 || mi > 59 || s > 59) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  int millis = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    std::size_t count = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (count < 3) millis = millis * 10 + (text[pos] - '0');
      ++count;
      ++pos;
    }
    if (count == 0 || count > 9) return std::nullopt;
    for (std::size_t i = count; i < 3; ++i) millis *= 10;
  }
  const std::string_view rest = text.substr(pos);
  if (zone == Zone::Forbidden ? !rest.empty() : (rest != "+00:00" && rest != "Z")) return std::nullopt;
  const std::int64_t days = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return ((days * 24 + h) * 60 + mi) * 60'000 + s * 1000 + millis;
}

std::string format_seconds(std::int64_t millis) {
  std::int64_t secs = millis / 1000;
  if (millis % 1000 < 0) --secs;  // floor, also before 1970
  std::int64_t days = secs / 86400;
  std::int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  int y = 0;
  unsigned m = 0, d = 0;
  civil_from_days(days, y, m, d);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d+00:00", y, m, d, static_cast<int>(rem / 3600),
                static_cast<int>(rem / 60 % 60), static_cast<int>(rem % 60));
  return buf;
}

}  // namespace mssqlcdc::utc
