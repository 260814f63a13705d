#include "mssqlcdc/tds/builtins.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/tsql.hpp"

namespace mssqlcdc::tds {

void sql_error(int number, const std::string& text) { throw Error(ErrorKind::Sql, text, number); }

std::string joined(const ObjectName& name) {
  std::string out;
  for (const auto& part : name) {
    if (!out.empty()) out += '.';
    out += part;
  }
  return out;
}

namespace {

constexpr std::int64_t kTicksPerDay = 864000000000;
constexpr std::int64_t kDays1970 = 719162;  // 0001-01-01 to 1970-01-01

std::int64_t pow10(int n) {
  std::int64_t p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}
__int128 pow10_128(int n) {
  __int128 p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

// Proleptic Gregorian calendar: days since 0001-01-01 from a civil date and back.
std::int32_t days_of(int y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return static_cast<std::int32_t>(era * 146097 + doe - 306);
}
struct Civil {
  int y, m, d;
};
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

// Rounds ticks to `scale` fractional digits, half up, as SQL Server converts.
DateTime2 rounded(DateTime2 v, int scale) {
  const std::int64_t unit = pow10(7 - std::clamp(scale, 0, 7));
  return normalized(v.days, (v.ticks + unit / 2) / unit * unit);
}

bool is_int(SqlKind k) {
  return k == SqlKind::TinyInt || k == SqlKind::SmallInt || k == SqlKind::Int || k == SqlKind::BigInt ||
         k == SqlKind::Bit;
}
bool is_float(SqlKind k) { return k == SqlKind::Float || k == SqlKind::Real; }
bool is_numeric(SqlKind k) { return is_int(k) || is_float(k) || k == SqlKind::Decimal; }
bool is_text(SqlKind k) {
  return k == SqlKind::Char || k == SqlKind::VarChar || k == SqlKind::NChar || k == SqlKind::NVarChar;
}
bool is_binary(SqlKind k) { return k == SqlKind::Binary || k == SqlKind::VarBinary; }
bool is_temporal(SqlKind k) {
  return k == SqlKind::DateTime2 || k == SqlKind::Date || k == SqlKind::Time || k == SqlKind::DateTime ||
         k == SqlKind::DateTimeOffset;
}

// SQL Server's data type precedence, highest first; the lower side converts to the higher.
int precedence(SqlKind k) {
  switch (k) {
    case SqlKind::DateTimeOffset: return 20;
    case SqlKind::DateTime2: return 19;
    case SqlKind::DateTime: return 18;
    case SqlKind::Date: return 17;
    case SqlKind::Time: return 16;
    case SqlKind::Float: return 15;
    case SqlKind::Real: return 14;
    case SqlKind::Decimal: return 13;
    case SqlKind::BigInt: return 12;
    case SqlKind::Int: return 11;
    case SqlKind::SmallInt: return 10;
    case SqlKind::TinyInt: return 9;
    case SqlKind::Bit: return 8;
    case SqlKind::UniqueIdentifier: return 7;
    case SqlKind::NVarChar: return 6;
    case SqlKind::NChar: return 5;
    case SqlKind::VarChar: return 4;
    case SqlKind::Char: return 3;
    case SqlKind::VarBinary: return 2;
    case SqlKind::Binary: return 1;
  }
  return 0;
}

std::string kind_name(const ColumnType& t) {
  const std::string n = type_name(t);
  return n.substr(0, n.find('('));
}
std::string numeric_name(const ColumnType& t) { return t.kind == SqlKind::Decimal ? "numeric" : kind_name(t); }

// The unscaled integer of a numeric value at `scale`.
__int128 unscaled_at(const TypedValue& v, int scale) {
  if (const auto* i = std::get_if<std::int64_t>(&v.value)) return static_cast<__int128>(*i) * pow10_128(scale);
  if (const auto* b = std::get_if<bool>(&v.value)) return (*b ? 1 : 0) * pow10_128(scale);
  if (const auto* d = std::get_if<Decimal>(&v.value)) {
    const int from = v.type.scale;
    if (from <= scale) return d->unscaled * pow10_128(scale - from);
    const __int128 div = pow10_128(from - scale);
    const __int128 q = d->unscaled / div;
    const __int128 r = d->unscaled % div;
    return q + (2 * (r < 0 ? -r : r) >= div ? (r < 0 ? -1 : 1) : 0);  // half away from zero
  }
  if (const auto* f = std::get_if<double>(&v.value)) {
    return static_cast<__int128>(std::llround(*f * static_cast<double>(pow10(std::min(scale, 18)))));
  }
  sql_error(8114, "Error converting data type " + kind_name(v.type) + " to numeric.");
}

double as_double(const TypedValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v.value)) return static_cast<double>(*i);
  if (const auto* b = std::get_if<bool>(&v.value)) return *b ? 1 : 0;
  if (const auto* d = std::get_if<Decimal>(&v.value)) {
    return static_cast<double>(d->unscaled) / static_cast<double>(pow10_128(v.type.scale));
  }
  if (const auto* f = std::get_if<double>(&v.value)) return *f;
  sql_error(8114, "Error converting data type " + kind_name(v.type) + " to float.");
}

std::int64_t as_int(const TypedValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v.value)) return *i;
  if (const auto* b = std::get_if<bool>(&v.value)) return *b ? 1 : 0;
  if (const auto* d = std::get_if<Decimal>(&v.value)) {
    return static_cast<std::int64_t>(d->unscaled / pow10_128(v.type.scale));  // truncates, as SQL Server
  }
  if (const auto* f = std::get_if<double>(&v.value)) return static_cast<std::int64_t>(*f);
  sql_error(8114, "Error converting data type " + kind_name(v.type) + " to bigint.");
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return std::string(s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1));
}

std::string hex(const Bytes& b, bool prefix) {
  static const char* const kDigits = "0123456789ABCDEF";
  std::string out = prefix ? "0x" : "";
  for (const std::uint8_t x : b) {
    out += kDigits[x >> 4];
    out += kDigits[x & 15];
  }
  return out;
}

std::optional<Bytes> unhex(std::string_view s) {
  if (s.size() % 2 != 0) return std::nullopt;
  Bytes out;
  for (std::size_t i = 0; i < s.size(); i += 2) {
    int v = 0;
    for (std::size_t k = i; k < i + 2; ++k) {
      const char c = s[k];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + d;
    }
    out.push_back(static_cast<std::uint8_t>(v));
  }
  return out;
}

std::string two(int v, std::size_t width = 2) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

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

// The datetime type's own text: style 0 "Jan  2 2026 10:04AM", 121 and 126 ISO with milliseconds.
std::string datetime_text(const DateTime2& v, int style) {
  const DateTime2 r = rounded(v, 3);
  const Civil c = civil_of(r.days);
  const std::int64_t ms = r.ticks / 10000;
  if (style == 126 || style == 121 || style == 120 || style == 20 || style == 21) {
    std::string out = date_text(r.days) + (style == 126 ? "T" : " ") + time_text(r.ticks, 0);
    if (style != 120 && style != 20 && (style != 126 || ms % 1000 != 0))
      out += "." + two(static_cast<int>(ms % 1000), 3);
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

std::string float_text(double v, bool real, int style) {
  char buf[64];
  if (style == 3 || style == 1 || style == 2) {
    const int digits = style == 3 ? (real ? 9 : 17) : style == 2 ? 16 : 8;
    std::snprintf(buf, sizeof buf, "%.*e", digits - 1, v);
  } else {
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
  }
  // SQL Server writes three exponent digits: 1.0000000000000000e+000.
  std::string out = buf;
  const auto e = out.find('e');
  if (e != std::string::npos && out.size() - e == 4) out.insert(e + 2, "0");
  return out;
}

std::string guid_text(const Bytes& b) {
  if (b.size() != 16) return hex(b, false);
  // Wire order: the first three groups are little-endian.
  static const std::array<int, 16> kOrder{3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
  std::string out;
  for (std::size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += hex(Bytes{b[static_cast<std::size_t>(kOrder[i])]}, false);
  }
  return out;
}

[[noreturn]] void conversion_failed(const TypedValue& from, const std::string& text, const ColumnType& to) {
  const SqlKind k = to.kind;
  if (k == SqlKind::Int || k == SqlKind::SmallInt || k == SqlKind::TinyInt || k == SqlKind::Bit ||
      k == SqlKind::UniqueIdentifier) {
    const std::string target = k == SqlKind::UniqueIdentifier ? "uniqueidentifier" : kind_name(to);
    if (k == SqlKind::UniqueIdentifier) {
      sql_error(8169, "Conversion failed when converting from a character string to uniqueidentifier.");
    }
    sql_error(245, "Conversion failed when converting the " + kind_name(from.type) + " value '" + text +
                       "' to data type " + target + ".");
  }
  if (is_temporal(k)) sql_error(241, "Conversion failed when converting date and/or time from character string.");
  sql_error(8114, "Error converting data type " + kind_name(from.type) + " to " + numeric_name(to) + ".");
}

// 'YYYY-MM-DD[ |T]hh:mm[:ss[.fffffff]][ +hh:mm]', or a time alone.
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
  if (!time_only || (s.size() >= 10 && s[4] == '-')) {
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

std::optional<__int128> parse_decimal(std::string_view s, int scale) {
  std::size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) negative = s[i++] == '-';
  __int128 v = 0;
  int digits = 0, frac_digits = 0;
  bool dot = false;
  int round_digit = -1;
  for (; i < s.size(); ++i) {
    if (s[i] == '.' && !dot) {
      dot = true;
      continue;
    }
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    ++digits;
    if (dot && frac_digits >= scale) {
      if (round_digit < 0) round_digit = s[i] - '0';
      continue;
    }
    if (dot) ++frac_digits;
    v = v * 10 + (s[i] - '0');
    if (v > pow10_128(38)) return std::nullopt;
  }
  if (digits == 0) return std::nullopt;
  v *= pow10_128(scale - frac_digits);
  if (round_digit >= 5) ++v;
  return negative ? -v : v;
}

std::optional<std::int64_t> parse_int(std::string_view s) {
  if (s.empty()) return std::int64_t{0};  // '' converts to 0, as SQL Server's int conversion
  std::size_t i = 0;
  bool negative = false;
  if (s[i] == '-' || s[i] == '+') negative = s[i++] == '-';
  if (i == s.size()) return std::nullopt;
  __int128 v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
    if (v > (static_cast<__int128>(1) << 64)) return std::nullopt;
  }
  v = negative ? -v : v;
  if (v > INT64_MAX || v < INT64_MIN) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

void check_int_range(std::int64_t v, const ColumnType& to, const std::string& from) {
  std::int64_t lo = INT64_MIN, hi = INT64_MAX;
  if (to.kind == SqlKind::Int) lo = INT32_MIN, hi = INT32_MAX;
  if (to.kind == SqlKind::SmallInt) lo = INT16_MIN, hi = INT16_MAX;
  if (to.kind == SqlKind::TinyInt) lo = 0, hi = 255;
  if (v < lo || v > hi) {
    sql_error(8115, "Arithmetic overflow error converting " + from + " to data type " + kind_name(to) + ".");
  }
}

Bytes utf16le(const std::string& text) {
  Writer w;
  w.utf16(text);
  return w.take();
}

Bytes int_bytes(std::int64_t v, std::size_t width) {
  Bytes out(width);
  for (std::size_t i = 0; i < width; ++i) out[width - 1 - i] = static_cast<std::uint8_t>((v >> (8 * i)) & 0xFF);
  return out;
}

std::size_t int_width(SqlKind k) {
  switch (k) {
    case SqlKind::TinyInt:
    case SqlKind::Bit: return 1;
    case SqlKind::SmallInt: return 2;
    case SqlKind::Int: return 4;
    default: return 8;
  }
}

DateTime2 local_of(const DateTimeOffset& v) {
  return normalized(v.utc.days, v.utc.ticks + v.offset_minutes * 600000000LL);
}

int compare_same(const TypedValue& a, const TypedValue& b) {
  const SqlKind ka = a.type.kind, kb = b.type.kind;
  if (is_numeric(ka) && is_numeric(kb)) {
    if (is_float(ka) || is_float(kb)) {
      const double x = as_double(a), y = as_double(b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    if (ka == SqlKind::Decimal || kb == SqlKind::Decimal) {
      const int s = std::max(a.type.scale, b.type.scale);
      const __int128 x = unscaled_at(a, s), y = unscaled_at(b, s);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    const std::int64_t x = as_int(a), y = as_int(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (const auto* x = std::get_if<std::string>(&a.value)) {
    const auto* y = std::get_if<std::string>(&b.value);
    if (y == nullptr) sql_error(402, "The data types are incompatible in the comparison.");
    // The default collation is case-insensitive and ignores trailing spaces.
    std::string l = lower(*x), r = lower(*y);
    while (!l.empty() && l.back() == ' ') l.pop_back();
    while (!r.empty() && r.back() == ' ') r.pop_back();
    return l.compare(r) < 0 ? -1 : l == r ? 0 : 1;
  }
  if (const auto* x = std::get_if<Bytes>(&a.value)) {
    const auto* y = std::get_if<Bytes>(&b.value);
    if (y == nullptr) sql_error(402, "The data types are incompatible in the comparison.");
    if (ka == SqlKind::UniqueIdentifier) return guid_text(*x).compare(guid_text(*y)) < 0 ? -1 : *x == *y ? 0 : 1;
    return std::lexicographical_compare(x->begin(), x->end(), y->begin(), y->end()) ? -1 : *x == *y ? 0 : 1;
  }
  if (const auto* x = std::get_if<DateTimeOffset>(&a.value)) {
    const auto& y = std::get<DateTimeOffset>(b.value).utc;
    return x->utc < y ? -1 : x->utc == y ? 0 : 1;
  }
  if (const auto* x = std::get_if<DateTime2>(&a.value)) {
    const auto& y = std::get<DateTime2>(b.value);
    return *x < y ? -1 : *x == y ? 0 : 1;
  }
  sql_error(402, "The data types are incompatible in the comparison.");
}

ColumnType max_text(SqlKind kind) { return ColumnType{kind, kMax, 0, 0, false}; }

}  // namespace

ColumnType type_named(std::string_view name, std::optional<int> first, std::optional<int> second) {
  const std::string n = lower(name);
  const auto len = [&](int fallback) {
    return static_cast<std::uint16_t>(first ? (*first < 0 ? kMax : *first) : fallback);
  };
  if (n == "int" || n == "integer") return ColumnType{SqlKind::Int};
  if (n == "bigint") return ColumnType{SqlKind::BigInt};
  if (n == "smallint") return ColumnType{SqlKind::SmallInt};
  if (n == "tinyint") return ColumnType{SqlKind::TinyInt};
  if (n == "bit") return ColumnType{SqlKind::Bit};
  if (n == "float") return ColumnType{first && *first <= 24 ? SqlKind::Real : SqlKind::Float};
  if (n == "real") return ColumnType{SqlKind::Real};
  if (n == "decimal" || n == "numeric") {
    return ColumnType{SqlKind::Decimal, 17, static_cast<std::uint8_t>(first.value_or(18)),
                      static_cast<std::uint8_t>(second.value_or(0)), false};
  }
  if (n == "money") return ColumnType{SqlKind::Decimal, 17, 19, 4, false};
  if (n == "smallmoney") return ColumnType{SqlKind::Decimal, 17, 10, 4, false};
  if (n == "binary") return ColumnType{SqlKind::Binary, len(1)};
  if (n == "varbinary") return ColumnType{SqlKind::VarBinary, len(30)};
  if (n == "char") return ColumnType{SqlKind::Char, len(1)};
  if (n == "varchar") return ColumnType{SqlKind::VarChar, len(30)};
  if (n == "nchar") return ColumnType{SqlKind::NChar, len(1)};
  if (n == "nvarchar" || n == "sysname")
    return ColumnType{SqlKind::NVarChar, n == "sysname" ? std::uint16_t{128} : len(30)};
  if (n == "datetime2")
    return ColumnType{SqlKind::DateTime2, 0, 0, static_cast<std::uint8_t>(first.value_or(7)), false};
  if (n == "time") return ColumnType{SqlKind::Time, 0, 0, static_cast<std::uint8_t>(first.value_or(7)), false};
  if (n == "datetimeoffset") {
    return ColumnType{SqlKind::DateTimeOffset, 0, 0, static_cast<std::uint8_t>(first.value_or(7)), false};
  }
  if (n == "date") return ColumnType{SqlKind::Date};
  if (n == "datetime" || n == "smalldatetime") return ColumnType{SqlKind::DateTime, 0, 0, 3, false};
  if (n == "uniqueidentifier") return ColumnType{SqlKind::UniqueIdentifier, 16};
  sql_error(243, "Type " + std::string(name) + " is not a defined system type.");
}

int compare(const TypedValue& a, const TypedValue& b) {
  if (is_numeric(a.type.kind) && is_numeric(b.type.kind)) return compare_same(a, b);
  const int pa = precedence(a.type.kind), pb = precedence(b.type.kind);
  if (pa == pb || (is_text(a.type.kind) && is_text(b.type.kind)) ||
      (is_binary(a.type.kind) && is_binary(b.type.kind))) {
    return compare_same(a, b);
  }
  if (pa > pb) return compare_same(a, convert(a.type, b, 0));
  return compare_same(convert(b.type, a, 0), b);
}

std::string group_key(const TypedValue& v) {
  if (is_null(v.value)) return std::string(1, '\0');
  if (is_numeric(v.type.kind)) {
    if (is_float(v.type.kind)) return "f" + std::to_string(as_double(v));
    const __int128 u = unscaled_at(v, 10);
    return "n" + text_of(TypedValue{ColumnType{SqlKind::Decimal, 17, 38, 10, false}, Decimal{u}}, 0);
  }
  if (const auto* s = std::get_if<std::string>(&v.value)) {
    std::string k = lower(*s);
    while (!k.empty() && k.back() == ' ') k.pop_back();
    return "s" + k;
  }
  if (const auto* b = std::get_if<Bytes>(&v.value)) return "b" + hex(*b, false);
  if (const auto* d = std::get_if<DateTimeOffset>(&v.value)) {
    return "t" + std::to_string(d->utc.days) + "." + std::to_string(d->utc.ticks);
  }
  if (const auto* d = std::get_if<DateTime2>(&v.value))
    return "t" + std::to_string(d->days) + "." + std::to_string(d->ticks);
  return "?";
}

TypedValue negate(const TypedValue& v) {
  if (is_null(v.value)) return v;
  if (const auto* i = std::get_if<std::int64_t>(&v.value)) return {v.type, -*i};
  if (const auto* d = std::get_if<Decimal>(&v.value)) return {v.type, Decimal{-d->unscaled}};
  if (const auto* f = std::get_if<double>(&v.value)) return {v.type, -*f};
  sql_error(8117, "Operand data type " + kind_name(v.type) + " is invalid for minus operator.");
}

TypedValue arithmetic(char op, const TypedValue& a, const TypedValue& b) {
  const SqlKind ka = a.type.kind, kb = b.type.kind;
  if (op == '+' && is_text(ka) && is_text(kb)) {
    const bool wide =
        ka == SqlKind::NVarChar || ka == SqlKind::NChar || kb == SqlKind::NVarChar || kb == SqlKind::NChar;
    const ColumnType t = max_text(wide ? SqlKind::NVarChar : SqlKind::VarChar);
    if (is_null(a.value) || is_null(b.value)) return {t, std::monostate{}};
    return {t, std::get<std::string>(a.value) + std::get<std::string>(b.value)};
  }
  if (op == '+' && is_binary(ka) && is_binary(kb)) {
    const ColumnType t{SqlKind::VarBinary, kMax};
    if (is_null(a.value) || is_null(b.value)) return {t, std::monostate{}};
    Bytes out = std::get<Bytes>(a.value);
    const Bytes& tail = std::get<Bytes>(b.value);
    out.insert(out.end(), tail.begin(), tail.end());
    return {t, out};
  }
  // Text meets a number: the text converts to the number's type (245 if it cannot).
  if (!is_numeric(ka) || !is_numeric(kb)) {
    if (is_numeric(ka) && (is_text(kb) || is_null(b.value))) return arithmetic(op, a, convert(a.type, b, 0));
    if (is_numeric(kb) && (is_text(ka) || is_null(a.value))) return arithmetic(op, convert(b.type, a, 0), b);
    sql_error(8117, "Operand data type " + kind_name(precedence(ka) >= precedence(kb) ? a.type : b.type) +
                        " is invalid for " +
                        std::string(op == '+'   ? "add"
                                    : op == '-' ? "subtract"
                                    : op == '*' ? "multiply"
                                    : op == '/' ? "divide"
                                                : "modulo") +
                        " operator.");
  }
  ColumnType t;
  if (is_float(ka) || is_float(kb)) {
    t = ColumnType{SqlKind::Float};
  } else if (ka == SqlKind::Decimal || kb == SqlKind::Decimal) {
    int s = std::max(a.type.scale, b.type.scale);
    if (op == '*') s = std::min(38, a.type.scale + b.type.scale);
    if (op == '/') s = std::max(6, static_cast<int>(a.type.scale));
    t = ColumnType{SqlKind::Decimal, 17, 38, static_cast<std::uint8_t>(s), false};
  } else {
    t = ColumnType{precedence(ka) >= precedence(kb) ? ka : kb};
    if (t.kind == SqlKind::Bit || t.kind == SqlKind::TinyInt || t.kind == SqlKind::SmallInt) t.kind = SqlKind::Int;
  }
  if (is_null(a.value) || is_null(b.value)) return {t, std::monostate{}};
  const auto zero = [] { sql_error(8134, "Divide by zero error encountered."); };
  if (t.kind == SqlKind::Float) {
    const double x = as_double(a), y = as_double(b);
    if ((op == '/' || op == '%') && y == 0) zero();
    return {t, op == '+' ? x + y : op == '-' ? x - y : op == '*' ? x * y : op == '/' ? x / y : std::fmod(x, y)};
  }
  if (t.kind == SqlKind::Decimal) {
    const int s = t.scale;
    const int in = std::max(a.type.scale, b.type.scale);
    const __int128 x = unscaled_at(a, in), y = unscaled_at(b, in);
    __int128 r = 0;
    switch (op) {
      case '+': r = (x + y) * pow10_128(s - in); break;
      case '-': r = (x - y) * pow10_128(s - in); break;
      case '*': r = unscaled_at(a, a.type.scale) * unscaled_at(b, b.type.scale); break;
      case '/':
        if (y == 0) zero();
        r = x * pow10_128(s) / y;
        break;
      default:
        if (y == 0) zero();
        r = (x % y) * pow10_128(s - in);
        break;
    }
    return {t, Decimal{r}};
  }
  const std::int64_t x = as_int(a), y = as_int(b);
  std::int64_t r = 0;
  bool overflow = false;
  switch (op) {
    case '+': overflow = __builtin_add_overflow(x, y, &r); break;
    case '-': overflow = __builtin_sub_overflow(x, y, &r); break;
    case '*': overflow = __builtin_mul_overflow(x, y, &r); break;
    case '/':
      if (y == 0) zero();
      overflow = x == INT64_MIN && y == -1;
      if (!overflow) r = x / y;
      break;
    default:
      if (y == 0) zero();
      r = y == -1 ? 0 : x % y;
      break;
  }
  const bool narrow = t.kind == SqlKind::Int && (r < INT32_MIN || r > INT32_MAX);
  if (overflow || narrow) {
    sql_error(8115, "Arithmetic overflow error converting expression to data type " + kind_name(t) + ".");
  }
  return {t, r};
}

std::string text_of(const TypedValue& v, int style) {
  const ColumnType& t = v.type;
  if (is_null(v.value)) return {};
  if (const auto* s = std::get_if<std::string>(&v.value)) return *s;
  if (const auto* i = std::get_if<std::int64_t>(&v.value)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&v.value)) return *b ? "1" : "0";
  if (const auto* d = std::get_if<Decimal>(&v.value)) {
    const bool negative = d->unscaled < 0;
    unsigned __int128 mag =
        negative ? static_cast<unsigned __int128>(-(d->unscaled + 1)) + 1 : static_cast<unsigned __int128>(d->unscaled);
    std::string digits;
    do {
      digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(mag % 10)));
      mag /= 10;
    } while (mag != 0);
    if (t.scale > 0) {
      while (digits.size() <= t.scale) digits.insert(digits.begin(), '0');
      digits.insert(digits.size() - t.scale, ".");
    }
    return (negative ? "-" : "") + digits;
  }
  if (const auto* f = std::get_if<double>(&v.value)) return float_text(*f, t.kind == SqlKind::Real, style);
  if (const auto* b = std::get_if<Bytes>(&v.value)) {
    if (t.kind == SqlKind::UniqueIdentifier) return guid_text(*b);
    if (style == 1 || style == 2) return hex(*b, style == 1);
    return std::string(b->begin(), b->end());
  }
  if (const auto* d = std::get_if<DateTime2>(&v.value)) {
    switch (t.kind) {
      case SqlKind::Date: return date_text(d->days);
      case SqlKind::Time: return time_text(d->ticks, t.scale);
      case SqlKind::DateTime: return datetime_text(*d, style);
      default: {
        const DateTime2 r = rounded(*d, t.scale);
        return date_text(r.days) + (style == 126 ? "T" : " ") + time_text(r.ticks, t.scale);
      }
    }
  }
  if (const auto* d = std::get_if<DateTimeOffset>(&v.value)) {
    const DateTime2 local = rounded(local_of(*d), t.scale);
    return date_text(local.days) + (style == 126 ? "T" : " ") + time_text(local.ticks, t.scale) + " " +
           offset_text(d->offset_minutes);
  }
  return {};
}

TypedValue convert(const ColumnType& to, const TypedValue& v, int style) {
  if (is_null(v.value)) return {to, std::monostate{}};
  const SqlKind from = v.type.kind;
  const auto* text = std::get_if<std::string>(&v.value);
  switch (to.kind) {
    case SqlKind::TinyInt:
    case SqlKind::SmallInt:
    case SqlKind::Int:
    case SqlKind::BigInt: {
      std::int64_t i = 0;
      if (text != nullptr) {
        const std::string s = trim(*text);
        const auto parsed = parse_int(s);
        if (!parsed) conversion_failed(v, *text, to);
        i = *parsed;
      } else if (is_numeric(from)) {
        if (is_float(from) && std::abs(as_double(v)) >= 9.3e18) {
          sql_error(8115, "Arithmetic overflow error converting float to data type " + kind_name(to) + ".");
        }
        if (from == SqlKind::Decimal && (std::get<Decimal>(v.value).unscaled / pow10_128(v.type.scale) > INT64_MAX ||
                                         std::get<Decimal>(v.value).unscaled / pow10_128(v.type.scale) < INT64_MIN)) {
          sql_error(8115, "Arithmetic overflow error converting expression to data type " + kind_name(to) + ".");
        }
        i = as_int(v);
      } else if (const auto* b = std::get_if<Bytes>(&v.value); b != nullptr && is_binary(from)) {
        for (std::size_t k = b->size() > int_width(to.kind) ? b->size() - int_width(to.kind) : 0; k < b->size(); ++k) {
          i = static_cast<std::int64_t>((static_cast<std::uint64_t>(i) << 8) | (*b)[k]);
        }
        if (to.kind == SqlKind::Int) i = static_cast<std::int32_t>(i);
        if (to.kind == SqlKind::SmallInt) i = static_cast<std::int16_t>(i);
      } else {
        sql_error(529, "Explicit conversion from data type " + kind_name(v.type) + " to " + kind_name(to) +
                           " is not allowed.");
      }
      check_int_range(i, to, from == SqlKind::Decimal ? "numeric" : kind_name(v.type));
      return {to, i};
    }
    case SqlKind::Bit: {
      if (text != nullptr) {
        const std::string s = lower(trim(*text));
        if (s == "true") return {to, true};
        if (s == "false") return {to, false};
        const auto parsed = parse_int(s);
        if (!parsed) conversion_failed(v, *text, to);
        return {to, *parsed != 0};
      }
      if (is_numeric(from)) return {to, as_double(v) != 0};
      sql_error(529, "Explicit conversion from data type " + kind_name(v.type) + " to bit is not allowed.");
    }
    case SqlKind::Decimal: {
      __int128 u = 0;
      if (text != nullptr) {
        const auto parsed = parse_decimal(trim(*text), to.scale);
        if (!parsed) conversion_failed(v, *text, to);
        u = *parsed;
      } else if (is_numeric(from)) {
        u = unscaled_at(v, to.scale);
      } else {
        sql_error(529, "Explicit conversion from data type " + kind_name(v.type) + " to numeric is not allowed.");
      }
      const __int128 limit = pow10_128(std::max<int>(to.precision, 1));
      if (u >= limit || u <= -limit) {
        sql_error(8115, "Arithmetic overflow error converting " + numeric_name(v.type) + " to data type numeric.");
      }
      return {to, Decimal{u}};
    }
    case SqlKind::Float:
    case SqlKind::Real: {
      if (text != nullptr) {
        const std::string s = trim(*text);
        char* end = nullptr;
        const double d = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size()) conversion_failed(v, *text, to);
        return {to, d};
      }
      if (is_numeric(from)) return {to, as_double(v)};
      sql_error(529, "Explicit conversion from data type " + kind_name(v.type) + " to float is not allowed.");
    }
    case SqlKind::Binary:
    case SqlKind::VarBinary: {
      Bytes out;
      if (text != nullptr) {
        if (style == 1 || style == 2) {
          std::string_view s = *text;
          if (style == 1) {
            if (s.size() < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) conversion_failed(v, *text, to);
            s.remove_prefix(2);
          }
          const auto bytes = unhex(s);
          if (!bytes) conversion_failed(v, *text, to);
          out = *bytes;
        } else {
          out =
              from == SqlKind::NVarChar || from == SqlKind::NChar ? utf16le(*text) : Bytes(text->begin(), text->end());
        }
      } else if (const auto* b = std::get_if<Bytes>(&v.value)) {
        out = *b;
      } else if (is_int(from)) {
        out = int_bytes(as_int(v), int_width(from));
      } else {
        sql_error(529, "Explicit conversion from data type " + kind_name(v.type) + " to " + kind_name(to) +
                           " is not allowed.");
      }
      if (to.length != kMax && out.size() > to.length) out.resize(to.length);
      if (to.kind == SqlKind::Binary && out.size() < to.length) out.resize(to.length, 0);
      return {to, out};
    }
    case SqlKind::Char:
    case SqlKind::VarChar:
    case SqlKind::NChar:
    case SqlKind::NVarChar: {
      std::string s = text_of(v, style);
      if (to.length != kMax && s.size() > to.length) {
        if (is_numeric(from) && !is_float(from) && text == nullptr) {
          // SQL Server prints '*' when an integer does not fit the target length.
          s = from == SqlKind::Decimal ? (sql_error(8115, "Arithmetic overflow error converting numeric to data type " +
                                                              kind_name(to) + "."),
                                          s)
                                       : "*";
        } else {
          s.resize(to.length);
        }
      }
      if ((to.kind == SqlKind::Char || to.kind == SqlKind::NChar) && s.size() < to.length) s.resize(to.length, ' ');
      return {to, s};
    }
    case SqlKind::DateTime2:
    case SqlKind::Date:
    case SqlKind::Time:
    case SqlKind::DateTime:
    case SqlKind::DateTimeOffset: {
      DateTimeOffset value;
      if (text != nullptr) {
        const auto parsed = parse_datetime(trim(*text), to.kind == SqlKind::Time);
        if (!parsed) conversion_failed(v, *text, to);
        value = *parsed;
        // A text without an offset names a local time; keep it as the local clock.
        if (to.kind != SqlKind::DateTimeOffset) value.utc = local_of(value), value.offset_minutes = 0;
      } else if (const auto* d = std::get_if<DateTime2>(&v.value)) {
        value = DateTimeOffset{from == SqlKind::Time ? DateTime2{days_of(1900, 1, 1), d->ticks} : *d, 0};
      } else if (const auto* o = std::get_if<DateTimeOffset>(&v.value)) {
        value = *o;
        if (to.kind != SqlKind::DateTimeOffset) value = DateTimeOffset{local_of(*o), 0};
      } else {
        sql_error(529, "Explicit conversion from data type " + kind_name(v.type) + " to " + kind_name(to) +
                           " is not allowed.");
      }
      switch (to.kind) {
        case SqlKind::Date: return {to, DateTime2{value.utc.days, 0}};
        case SqlKind::Time: return {to, DateTime2{0, rounded(value.utc, to.scale).ticks}};
        case SqlKind::DateTimeOffset: return {to, DateTimeOffset{rounded(value.utc, to.scale), value.offset_minutes}};
        case SqlKind::DateTime: {
          // 1/300 s ticks, as the datetime type stores them.
          const std::int64_t units = (value.utc.ticks * 3 + 50000) / 100000;
          return {to, normalized(value.utc.days, (units * 100000 + 1) / 3)};
        }
        default: return {to, rounded(value.utc, to.scale)};
      }
    }
    case SqlKind::UniqueIdentifier: {
      if (const auto* b = std::get_if<Bytes>(&v.value); b != nullptr && b->size() == 16) return {to, *b};
      if (text == nullptr)
        sql_error(529,
                  "Explicit conversion from data type " + kind_name(v.type) + " to uniqueidentifier is not allowed.");
      std::string digits;
      for (const char c : trim(*text)) {
        if (c != '-' && c != '{' && c != '}') digits += c;
      }
      const auto raw = unhex(digits);
      if (!raw || raw->size() != 16) conversion_failed(v, *text, to);
      static const std::array<int, 16> kOrder{3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
      Bytes out(16);
      for (std::size_t i = 0; i < 16; ++i) out[static_cast<std::size_t>(kOrder[i])] = (*raw)[i];
      return {to, out};
    }
  }
  sql_error(529, "Explicit conversion from data type " + kind_name(v.type) + " is not allowed.");
}

bool like(std::string_view text, std::string_view pattern) {
  const std::string s = lower(text), p = lower(pattern);
  // Backtracking over %: the patterns people type are short.
  std::size_t si = 0, pi = 0, star_p = std::string::npos, star_s = 0;
  const auto single = [&](std::size_t& at, char c) {
    if (p[at] == '_') return ++at, true;
    if (p[at] == '[') {
      const std::size_t close = p.find(']', at + 1);
      if (close != std::string::npos) {
        bool negated = p[at + 1] == '^';
        bool hit = false;
        for (std::size_t k = at + 1 + (negated ? 1 : 0); k < close; ++k) {
          if (k + 2 < close && p[k + 1] == '-') {
            hit = hit || (c >= p[k] && c <= p[k + 2]);
            k += 2;
          } else {
            hit = hit || c == p[k];
          }
        }
        at = close + 1;
        return hit != negated;
      }
    }
    return p[at++] == c;
  };
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '%') {
      star_p = pi++;
      star_s = si;
      continue;
    }
    std::size_t at = pi;
    if (pi < p.size() && single(at, s[si])) {
      pi = at;
      ++si;
      continue;
    }
    if (star_p == std::string::npos) return false;
    pi = star_p + 1;
    si = ++star_s;
  }
  while (pi < p.size() && p[pi] == '%') ++pi;
  return pi == p.size();
}

namespace {

void arity(std::string_view name, const std::vector<TypedValue>& args, std::size_t n) {
  if (args.size() != n) {
    sql_error(174, "The " + std::string(name) + " function requires " + std::to_string(n) + " argument(s).");
  }
}

DateTimeOffset as_offset(const TypedValue& v) {
  if (const auto* o = std::get_if<DateTimeOffset>(&v.value)) return *o;
  return std::get<DateTimeOffset>(convert(ColumnType{SqlKind::DateTimeOffset, 0, 0, 7, false}, v, 0).value);
}

int offset_minutes(const TypedValue& v) {
  if (const auto* s = std::get_if<std::string>(&v.value)) {
    const auto parsed = parse_datetime("1900-01-01 00:00 " + trim(*s), false);
    if (!parsed || std::abs(parsed->offset_minutes) > 14 * 60) {
      sql_error(9819, "The timezone provided to builtin function switchoffset is invalid.");
    }
    return parsed->offset_minutes;
  }
  return static_cast<int>(as_int(v));
}

std::string datepart_name(const TypedValue& v) {
  const std::string p = lower(text_of(v, 0));
  if (p == "yy" || p == "yyyy") return "year";
  if (p == "qq" || p == "q") return "quarter";
  if (p == "mm" || p == "m") return "month";
  if (p == "dd" || p == "d") return "day";
  if (p == "dy" || p == "y") return "dayofyear";
  if (p == "hh") return "hour";
  if (p == "mi" || p == "n") return "minute";
  if (p == "ss" || p == "s") return "second";
  if (p == "ms") return "millisecond";
  if (p == "mcs") return "microsecond";
  if (p == "ns") return "nanosecond";
  if (p == "tz") return "tzoffset";
  return p;
}

TypedValue now_utc(const ColumnType& type) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const DateTime2 utc = normalized(kDays1970, micros * 10);
  if (type.kind == SqlKind::DateTimeOffset) return {type, DateTimeOffset{utc, 0}};
  return convert(type, TypedValue{ColumnType{SqlKind::DateTime2, 0, 0, 7, false}, utc}, 0);
}

}  // namespace

std::optional<TypedValue> builtin(std::string_view name, const std::vector<TypedValue>& args) {
  const std::string fn = lower(name);
  if (fn == "isnull") {
    arity("isnull", args, 2);
    return is_null(args[0].value) ? convert(args[0].type, args[1], 0) : args[0];
  }
  if (fn == "coalesce") {
    if (args.size() < 2) sql_error(189, "The coalesce function requires 2 to 2147483647 arguments.");
    for (const auto& a : args) {
      if (!is_null(a.value)) return a;
    }
    return args[0];
  }
  if (fn == "sysdatetimeoffset")
    return arity(fn, args, 0), now_utc(ColumnType{SqlKind::DateTimeOffset, 0, 0, 7, false});
  if (fn == "sysutcdatetime" || fn == "sysdatetime") {
    return arity(fn, args, 0), now_utc(ColumnType{SqlKind::DateTime2, 0, 0, 7, false});
  }
  if (fn == "getdate" || fn == "getutcdate")
    return arity(fn, args, 0), now_utc(ColumnType{SqlKind::DateTime, 0, 0, 3, false});
  if (fn == "switchoffset") {
    arity(fn, args, 2);
    const ColumnType t{SqlKind::DateTimeOffset, 0, 0,
                       args[0].type.kind == SqlKind::DateTimeOffset ? args[0].type.scale : std::uint8_t{7}, false};
    if (is_null(args[0].value) || is_null(args[1].value)) return TypedValue{t, std::monostate{}};
    DateTimeOffset v = as_offset(args[0]);
    v.offset_minutes = static_cast<std::int16_t>(offset_minutes(args[1]));
    return TypedValue{t, v};
  }
  if (fn == "datepart") {
    arity(fn, args, 2);
    const ColumnType t{SqlKind::Int};
    if (is_null(args[1].value)) return TypedValue{t, std::monostate{}};
    const std::string part = datepart_name(args[0]);
    if (part == "tzoffset") return TypedValue{t, std::int64_t{as_offset(args[1]).offset_minutes}};
    DateTime2 local;
    if (const auto* d = std::get_if<DateTime2>(&args[1].value)) {
      local = *d;
    } else {
      local = local_of(as_offset(args[1]));
    }
    const Civil c = civil_of(local.days);
    const std::int64_t seconds = local.ticks / 10000000;
    std::int64_t r = 0;
    if (part == "year") r = c.y;
    else if (part == "quarter") r = (c.m - 1) / 3 + 1;
    else if (part == "month") r = c.m;
    else if (part == "day") r = c.d;
    else if (part == "dayofyear") r = local.days - days_of(c.y, 1, 1) + 1;
    else if (part == "hour") r = seconds / 3600;
    else if (part == "minute") r = seconds / 60 % 60;
    else if (part == "second") r = seconds % 60;
    else if (part == "millisecond") r = local.ticks % 10000000 / 10000;
    else if (part == "microsecond") r = local.ticks % 10000000 / 10;
    else if (part == "nanosecond") r = local.ticks % 10000000 * 100;
    else sql_error(155, "'" + part + "' is not a recognized datepart option.");
    return TypedValue{t, r};
  }
  if (fn == "dateadd") {
    arity(fn, args, 3);
    const TypedValue& base = args[2];
    ColumnType t = base.type;
    if (is_text(t.kind)) t = ColumnType{SqlKind::DateTime, 0, 0, 3, false};
    if (is_null(args[1].value) || is_null(base.value)) return TypedValue{t, std::monostate{}};
    const std::string part = datepart_name(args[0]);
    const std::int64_t n = as_int(args[1]);
    const bool offset = t.kind == SqlKind::DateTimeOffset;
    DateTime2 v =
        offset ? local_of(std::get<DateTimeOffset>(base.value)) : std::get<DateTime2>(convert(t, base, 0).value);
    static const std::map<std::string, std::int64_t, std::less<>> kTicks{
        {"week", 7 * kTicksPerDay}, {"day", kTicksPerDay}, {"dayofyear", kTicksPerDay},
        {"hour", 36000000000},      {"minute", 600000000}, {"second", 10000000},
        {"millisecond", 10000},     {"microsecond", 10},   {"nanosecond", 0}};
    if (const auto it = kTicks.find(part); it != kTicks.end()) {
      v = normalized(v.days, v.ticks + n * it->second);
    } else if (part == "month" || part == "year" || part == "quarter") {
      const Civil c = civil_of(v.days);
      const std::int64_t months = c.y * 12LL + (c.m - 1) + n * (part == "year" ? 12 : part == "quarter" ? 3 : 1);
      const int y = static_cast<int>(months / 12), m = static_cast<int>(months % 12 + 1);
      static const std::array<int, 12> kLast{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
      const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
      const int last = kLast[static_cast<std::size_t>(m - 1)] + (m == 2 && leap ? 1 : 0);
      v = DateTime2{days_of(y, m, std::min(c.d, last)), v.ticks};
    } else {
      sql_error(155, "'" + part + "' is not a recognized dateadd option.");
    }
    if (v.days < 0 || v.days > days_of(9999, 12, 31)) {
      sql_error(517, "Adding a value to a '" + kind_name(t) + "' column caused an overflow.");
    }
    if (offset) {
      const auto minutes = std::get<DateTimeOffset>(base.value).offset_minutes;
      return TypedValue{t, DateTimeOffset{normalized(v.days, v.ticks - minutes * 600000000LL), minutes}};
    }
    return TypedValue{t, v};
  }
  if (fn == "upper" || fn == "lower") {
    arity(fn, args, 1);
    if (is_null(args[0].value)) return args[0];
    std::string s = text_of(args[0], 0);
    for (char& ch : s)
      ch = static_cast<char>(fn == "upper" ? std::toupper(static_cast<unsigned char>(ch))
                                           : std::tolower(static_cast<unsigned char>(ch)));
    return TypedValue{is_text(args[0].type.kind) ? args[0].type : max_text(SqlKind::VarChar), s};
  }
  if (fn == "len") {
    arity(fn, args, 1);
    if (is_null(args[0].value)) return TypedValue{ColumnType{SqlKind::Int}, std::monostate{}};
    std::string s = text_of(args[0], 0);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return TypedValue{ColumnType{SqlKind::Int}, static_cast<std::int64_t>(utf16_units(s))};
  }
  if (fn == "abs") {
    arity(fn, args, 1);
    if (is_null(args[0].value)) return args[0];
    return compare(args[0], TypedValue{ColumnType{SqlKind::Int}, std::int64_t{0}}) < 0 ? negate(args[0]) : args[0];
  }
  return std::nullopt;
}

}  // namespace mssqlcdc::tds
