// Text: what each type prints as (text_of, CONVERT to a character type), hex and GUID forms,
// and LIKE. SQL Server's default collation is case-insensitive, so LIKE compares lower-case.
#include <cstdio>
#include <string>

#include "builtins.hpp"
#include "scalar_calendar.hpp"
#include "scalar_numeric.hpp"
#include "scalar_text.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds::scalar {

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

}  // namespace mssqlcdc::tds::scalar

namespace mssqlcdc::tds {

using namespace scalar;

namespace {

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
  // A character, not the text "0": GCC 12 at -O3 warns falsely on inserting a literal (-Wrestrict).
  if (e != std::string::npos && out.size() - e == 4) out.insert(e + 2, 1, '0');
  return out;
}

}  // namespace

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
      digits.insert(digits.size() - t.scale, 1, '.');  // a character: see float_text
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

bool like(std::string_view text, std::string_view pattern, bool case_sensitive) {
  const std::string s = case_sensitive ? std::string(text) : lower(text);
  const std::string p = case_sensitive ? std::string(pattern) : lower(pattern);
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

}  // namespace mssqlcdc::tds
