// Exact numeric reads and numbers from text; see scalar_numeric.hpp.
#include "scalar_numeric.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "builtins.hpp"
#include "scalar_kinds.hpp"

namespace mssqlcdc::tds::scalar {

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
    // Rounded in floating point, then checked: numeric holds at most 38 digits, and a value past
    // them (or past what __int128 holds) is 8115, never a wrapped integer.
    const long double x = std::round(static_cast<long double>(*f) * std::pow(10.0L, scale));
    if (!std::isfinite(x) || std::fabs(x) >= 1e38L) {
      sql_error(8115, "Arithmetic overflow error converting " + kind_name(v.type) + " to data type numeric.");
    }
    return static_cast<__int128>(x);
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

}  // namespace mssqlcdc::tds::scalar
