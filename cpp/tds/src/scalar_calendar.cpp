// Calendar arithmetic and the date and time types' text; see scalar_calendar.hpp.
#include "scalar_calendar.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

#include "scalar_numeric.hpp"

namespace mssqlcdc::tds::scalar {

std::int32_t days_of(int y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return static_cast<std::int32_t>(era * 146097 + doe - 306);
}
Civil civil_of(std::int64_t days) {
  const std::int64_t z = days + 306;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const int d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return {static_cast<int>(yoe + era * 400 + (m <= 2 ? 1 : 0)), m, d};
}

DateTime2 normalized(std::int64_t days, std::int64_t ticks) {
  days += ticks / kTicksPerDay;
  ticks %= kTicksPerDay;
  if (ticks < 0) ticks += kTicksPerDay, --days;
  return DateTime2{static_cast<std::int32_t>(days), ticks};
}

DateTime2 rounded(DateTime2 v, int scale) {
  const std::int64_t unit = pow10(7 - std::clamp(scale, 0, 7));
  return normalized(v.days, (v.ticks + unit / 2) / unit * unit);
}

DateTime2 local_of(const DateTimeOffset& v) {
  return normalized(v.utc.days, v.utc.ticks + v.offset_minutes * 600000000LL);
}

namespace {

std::string two(int v, std::size_t width = 2) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

}  // namespace

std::string date_text(std::int64_t days) {
  const Civil c = civil_of(days);
  return two(c.y, 4) + "-" + two(c.m) + "-" + two(c.d);
}
std::string time_text(std::int64_t ticks, int scale) {
  const std::int64_t seconds = ticks / 10000000;
  std::string out = two(static_cast<int>(seconds / 3600)) + ":" + two(static_cast<int>(seconds / 60 % 60)) + ":" +
                    two(static_cast<int>(seconds % 60));
  if (scale > 0) {
    out += '.';
    out += two(static_cast<int>(ticks % 10000000 / pow10(7 - scale)), static_cast<std::size_t>(scale));
  }
  return out;
}
std::string offset_text(int minutes) {
  const int m = std::abs(minutes);
  return std::string(minutes < 0 ? "-" : "+") + two(m / 60) + ":" + two(m % 60);
}

std::string datetime_text(const DateTime2& v, int style) {
  const DateTime2 r = rounded(v, 3);
  const Civil c = civil_of(r.days);
  const std::int64_t ms = r.ticks / 10000;
  if (style == 126 || style == 121 || style == 120 || style == 20 || style == 21) {
    std::string out = date_text(r.days) + (style == 126 ? "T" : " ") + time_text(r.ticks, 0);
    if (style != 120 && style != 20 && (style != 126 || ms % 1000 != 0))
      out.append(".").append(two(static_cast<int>(ms % 1000), 3));  // not "." + text: see group_key
    return out;
  }
  static const std::array<const char*, 12> kMonths{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const int hour = static_cast<int>(ms / 3600000);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s %2d %d %2d:%02d%s", kMonths[static_cast<std::size_t>(c.m - 1)], c.d, c.y,
                hour % 12 == 0 ? 12 : hour % 12, static_cast<int>(ms / 60000 % 60), hour < 12 ? "AM" : "PM");
  return buf;
}

std::optional<DateTimeOffset> parse_datetime(std::string_view s, bool time_only) {
  int y = 1, mo = 1, d = 1, h = 0, mi = 0, sec = 0;
  std::int64_t frac = 0;
  int offset = 0;
  std::size_t i = 0;
  const auto number = [&](std::size_t digits, int& out) {
    if (i + digits > s.size()) return false;
    out = 0;
    for (std::size_t k = 0; k < digits; ++k, ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      out = out * 10 + (s[i] - '0');
    }
    return true;
  };
  // SQL Server's unseparated form, 'YYYYMMDD' (optionally then ' hh:mm...'), reads the same in
  // every language setting, as the ISO form does.
  const bool unseparated = s.size() >= 8 &&
                           std::all_of(s.begin(), s.begin() + 8, [](char c) { return c >= '0' && c <= '9'; }) &&
                           (s.size() == 8 || s[8] == ' ');
  if (unseparated) {
    if (!number(4, y) || !number(2, mo) || !number(2, d)) return std::nullopt;
    if (i < s.size()) ++i;
  } else if (!time_only || (s.size() >= 10 && s[4] == '-')) {
    if (!number(4, y) || i >= s.size() || s[i++] != '-' || !number(2, mo) || i >= s.size() || s[i++] != '-' ||
        !number(2, d)) {
      return std::nullopt;
    }
    if (i < s.size() && (s[i] == ' ' || s[i] == 'T')) ++i;
  }
  if (i < s.size() && s[i] != ' ' && s[i] != '+' && s[i] != '-') {
    if (!number(2, h) || i >= s.size() || s[i++] != ':' || !number(2, mi)) return std::nullopt;
    if (i < s.size() && s[i] == ':') {
      ++i;
      if (!number(2, sec)) return std::nullopt;
      if (i < s.size() && s[i] == '.') {
        ++i;
        int digits = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
          if (digits < 7) frac = frac * 10 + (s[i] - '0'), ++digits;
          ++i;
        }
        frac *= pow10(7 - digits);
      }
    }
  }
  while (i < s.size() && s[i] == ' ') ++i;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    const int sign = s[i++] == '-' ? -1 : 1;
    int oh = 0, om = 0;
    if (!number(2, oh) || i >= s.size() || s[i++] != ':' || !number(2, om)) return std::nullopt;
    offset = sign * (oh * 60 + om);
  }
  if (i != s.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59) return std::nullopt;
  const std::int64_t ticks = ((h * 3600LL + mi * 60 + sec) * 10000000) + frac;
  const DateTime2 local{days_of(y, mo, d), ticks};
  return DateTimeOffset{normalized(local.days, local.ticks - offset * 600000000LL), static_cast<std::int16_t>(offset)};
}

}  // namespace mssqlcdc::tds::scalar
