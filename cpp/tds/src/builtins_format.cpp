// FORMAT(value, format[, culture]): SQL Server hands the value to a .NET Framework format string,
// so this reads those strings for the en-US culture, the session default of a us_english
// login. Dates take the standard one-letter formats ('d', 'D', 'g', 'o', 's' ...) or custom
// patterns (yyyy, MM, dd, HH, hh, mm, ss, f..., tt, quoted and escaped literals); time values
// are TimeSpans, whose custom patterns must quote or escape every literal ('hh\:mm'); numbers
// take N, F, D, X, C, P, E, G with a precision, or custom patterns (0, #, '.', ',', '%', sections
// split by ';'). A format string .NET would reject gives NULL, as FORMAT's page documents; a
// culture other than en-US is refused, since the emulator carries no other culture's names.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "builtins.hpp"
#include "scalar_calendar.hpp"
#include "scalar_kinds.hpp"
#include "scalar_numeric.hpp"
#include "scalar_text.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds::scalar {

namespace {

constexpr std::array<std::string_view, 12> kMonths{"January",   "February", "March",    "April",
                                                   "May",       "June",     "July",     "August",
                                                   "September", "October",  "November", "December"};
constexpr std::array<std::string_view, 7> kDays{"Sunday",   "Monday", "Tuesday", "Wednesday",
                                                "Thursday", "Friday", "Saturday"};

// The parts appended in order: one buffer, no chain of temporaries (GCC 12's -Wrestrict misreads
// a literal prepended to a temporary string at -O3).
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  (out.append(std::string_view(parts)), ...);
  return out;
}

std::string padded(std::int64_t n, std::size_t width) {
  std::string s = std::to_string(n < 0 ? -n : n);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return n < 0 ? cat("-", s) : s;
}

// ---- dates and times -------------------------------------------------------------------------

struct Moment {
  int year = 1, month = 1, day = 1, weekday = 1;  // weekday 0 is Sunday
  int hour = 0, minute = 0, second = 0;
  std::int64_t fraction = 0;  // 100 ns ticks within the second
  std::optional<int> offset;  // minutes east of UTC, for datetimeoffset only
};

Moment moment_of(const DateTime2& local, std::optional<int> offset) {
  const Civil c = civil_of(local.days);
  const std::int64_t seconds = local.ticks / 10000000;
  // 0001-01-01 was a Monday.
  const int weekday = static_cast<int>((local.days % 7 + 8) % 7);
  return Moment{c.y,
                c.m,
                c.d,
                weekday,
                static_cast<int>(seconds / 3600),
                static_cast<int>(seconds / 60 % 60),
                static_cast<int>(seconds % 60),
                local.ticks % 10000000,
                offset};
}

std::string offset_of(int minutes, int width) {  // z, zz, zzz
  const int m = std::abs(minutes);
  std::string out = minutes < 0 ? "-" : "+";
  out += width == 1 ? std::to_string(m / 60) : padded(m / 60, 2);
  if (width >= 3) out.append(":").append(padded(m % 60, 2));
  return out;
}

// A quoted string, an escaped character or a '%' marker at f[i]: appends what it stands for to
// `out` and moves `i` past it. nullopt: no literal starts here; false: an unclosed quote or a
// trailing backslash, which .NET rejects.
std::optional<bool> literal(std::string_view f, std::size_t& i, std::string& out) {
  const char ch = f[i];
  if (ch == '\'' || ch == '"') {
    const std::size_t close = f.find(ch, i + 1);
    if (close == std::string_view::npos) return false;
    out += f.substr(i + 1, close - i - 1);
    i = close + 1;
    return true;
  }
  if (ch == '\\') {
    if (i + 1 >= f.size()) return false;
    out += f[i + 1];
    i += 2;
    return true;
  }
  if (ch == '%') {  // a single custom specifier: "%d" is the day, not the short date
    i += 1;
    return true;
  }
  return std::nullopt;
}

// One custom date pattern; nullopt for a pattern .NET rejects (an unclosed quote, a trailing
// backslash, more than seven f's).
std::optional<std::string> custom_date(std::string_view f, const Moment& m) {
  std::string out;
  for (std::size_t i = 0; i < f.size();) {
    if (const auto lit = literal(f, i, out)) {
      if (!*lit) return std::nullopt;
      continue;
    }
    const char ch = f[i];
    std::size_t n = 1;
    while (i + n < f.size() && f[i + n] == ch) ++n;
    const auto fixed = [&](std::int64_t v, std::size_t max_width) { out += padded(v, n >= 2 ? max_width : 1); };
    switch (ch) {
      case 'd':
        if (n <= 2) fixed(m.day, 2);
        else out += n == 3 ? kDays[m.weekday].substr(0, 3) : kDays[m.weekday];
        break;
      case 'M':
        if (n <= 2) fixed(m.month, 2);
        else out += n == 3 ? kMonths[m.month - 1].substr(0, 3) : kMonths[m.month - 1];
        break;
      case 'y':
        if (n <= 2) out += padded(m.year % 100, n);
        else out += padded(m.year, n);
        break;
      case 'h': fixed(m.hour % 12 == 0 ? 12 : m.hour % 12, 2); break;
      case 'H': fixed(m.hour, 2); break;
      case 'm': fixed(m.minute, 2); break;
      case 's': fixed(m.second, 2); break;
      case 'f':
      case 'F': {
        if (n > 7) return std::nullopt;
        std::string digits = padded(m.fraction, 7).substr(0, n);
        if (ch == 'F') {
          while (!digits.empty() && digits.back() == '0') digits.pop_back();
          if (digits.empty() && !out.empty() && out.back() == '.') out.pop_back();
        }
        out += digits;
        break;
      }
      case 't': out += n == 1 ? (m.hour < 12 ? "A" : "P") : (m.hour < 12 ? "AM" : "PM"); break;
      case 'z': out += offset_of(m.offset.value_or(0), static_cast<int>(std::min<std::size_t>(n, 3))); break;
      case 'K':
        for (std::size_t k = 0; k < n; ++k) out += m.offset ? offset_of(*m.offset, 3) : "";
        break;
      case 'g': out += "A.D."; break;
      default: out.append(n, ch); break;
    }
    i += n;
  }
  return out;
}

std::optional<std::string> standard_date(char f, const Moment& local, const Moment& utc) {
  switch (f) {
    case 'd': return custom_date("M/d/yyyy", local);
    case 'D': return custom_date("dddd, MMMM d, yyyy", local);
    case 'f': return custom_date("dddd, MMMM d, yyyy h:mm tt", local);
    case 'F': return custom_date("dddd, MMMM d, yyyy h:mm:ss tt", local);
    case 'g': return custom_date("M/d/yyyy h:mm tt", local);
    case 'G': return custom_date("M/d/yyyy h:mm:ss tt", local);
    case 'M':
    case 'm': return custom_date("MMMM d", local);
    case 'O':
    case 'o': return custom_date("yyyy'-'MM'-'dd'T'HH':'mm':'ss'.'fffffffK", local);
    case 'R':
    case 'r': return custom_date("ddd, dd MMM yyyy HH':'mm':'ss 'GMT'", utc);
    case 's': return custom_date("yyyy'-'MM'-'dd'T'HH':'mm':'ss", local);
    case 't': return custom_date("h:mm tt", local);
    case 'T': return custom_date("h:mm:ss tt", local);
    case 'u': return custom_date("yyyy'-'MM'-'dd HH':'mm':'ss'Z'", utc);
    case 'U': return custom_date("dddd, MMMM d, yyyy h:mm:ss tt", utc);
    case 'Y':
    case 'y': return custom_date("MMMM yyyy", local);
    default: return std::nullopt;
  }
}

// A time value is a .NET TimeSpan: its custom patterns take d, h, m, s, f and F, and every other
// character must be quoted or escaped, so 'hh:mm' is no pattern (NULL) while 'hh\:mm' is.
std::optional<std::string> time_span(std::string_view f, std::int64_t ticks) {
  const std::int64_t seconds = ticks / 10000000, fraction = ticks % 10000000;
  const std::int64_t h = seconds / 3600, mi = seconds / 60 % 60, s = seconds % 60;
  if (f == "c" || f == "t" || f == "T") {
    return cat(padded(h, 2), ":", padded(mi, 2), ":", padded(s, 2), fraction ? "." : "",
               fraction ? padded(fraction, 7) : "");
  }
  if (f == "g") {
    std::string frac = padded(fraction, 7);
    while (!frac.empty() && frac.back() == '0') frac.pop_back();
    return cat(std::to_string(h), ":", padded(mi, 2), ":", padded(s, 2), frac.empty() ? "" : ".", frac);
  }
  if (f == "G") return cat("0:", padded(h, 2), ":", padded(mi, 2), ":", padded(s, 2), ".", padded(fraction, 7));
  if (f.size() == 1) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < f.size();) {
    if (const auto lit = literal(f, i, out)) {
      if (!*lit) return std::nullopt;
      continue;
    }
    const char ch = f[i];
    std::size_t n = 1;
    while (i + n < f.size() && f[i + n] == ch) ++n;
    switch (ch) {
      case 'd': out += padded(0, n); break;
      case 'h':
        if (n > 2) return std::nullopt;
        out += padded(h, n);
        break;
      case 'm':
        if (n > 2) return std::nullopt;
        out += padded(mi, n);
        break;
      case 's':
        if (n > 2) return std::nullopt;
        out += padded(s, n);
        break;
      case 'f':
      case 'F': {
        if (n > 7) return std::nullopt;
        std::string digits = padded(fraction, 7).substr(0, n);
        if (ch == 'F')
          while (!digits.empty() && digits.back() == '0') digits.pop_back();
        out += digits;
        break;
      }
      default: return std::nullopt;  // an unescaped literal: .NET's FormatException
    }
    i += n;
  }
  return out;
}

// ---- numbers -----------------------------------------------------------------------------------

// |value| = digits x 10^exponent, digits without leading zeros ("" for zero).
struct Number {
  bool negative = false;
  std::string digits;
  int exponent = 0;
};

Number number_of(const TypedValue& v) {
  Number n;
  std::string text;
  if (const auto* i = std::get_if<std::int64_t>(&v.value)) {
    n.negative = *i < 0;
    text = std::to_string(*i);
  } else if (const auto* b = std::get_if<bool>(&v.value)) {
    text.push_back(*b ? '1' : '0');
  } else if (std::holds_alternative<Decimal>(v.value)) {
    const __int128 u = unscaled_at(v, v.type.scale);
    n.negative = u < 0;
    __int128 a = u < 0 ? -u : u;
    do {
      text.insert(text.begin(), static_cast<char>('0' + static_cast<int>(a % 10)));
      a /= 10;
    } while (a != 0);
    n.exponent = -static_cast<int>(v.type.scale);
  } else {
    // .NET Framework formats a double from its 15 significant digits.
    const double d = as_double(v);
    n.negative = std::signbit(d) && d != 0;
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.14e", std::fabs(d));
    const std::string s = buf;
    const std::size_t e = s.find('e');
    text = s.substr(0, 1) + s.substr(2, e - 2);
    n.exponent = std::stoi(s.substr(e + 1)) - 14;
  }
  if (!text.empty() && text[0] == '-') text.erase(0, 1);
  const std::size_t first = text.find_first_not_of('0');
  n.digits = first == std::string::npos ? "" : text.substr(first);
  while (!n.digits.empty() && n.digits.back() == '0') n.digits.pop_back(), ++n.exponent;
  if (n.digits.empty()) n.negative = false;
  return n;
}

// The value rounded half away from zero to `decimals` places: its integer digits and exactly
// `decimals` fraction digits.
std::pair<std::string, std::string> fixed_digits(const Number& n, int decimals) {
  std::string all = n.digits;  // all x 10^exponent
  int exponent = n.exponent;
  if (exponent < -decimals) {  // drop digits below the last place, rounding
    const std::size_t drop = static_cast<std::size_t>(-decimals - exponent);
    const bool up = drop <= all.size() && all[all.size() - drop] >= '5';
    all = drop < all.size() ? all.substr(0, all.size() - drop) : "";
    exponent = -decimals;
    if (up) {
      int k = static_cast<int>(all.size()) - 1;
      while (k >= 0 && all[static_cast<std::size_t>(k)] == '9') all[static_cast<std::size_t>(k--)] = '0';
      if (k < 0) all.insert(all.begin(), '1');
      else ++all[static_cast<std::size_t>(k)];
    }
  }
  if (exponent > -decimals) all.append(static_cast<std::size_t>(exponent + decimals), '0');
  if (all.size() < static_cast<std::size_t>(decimals) + 1) all.insert(0, decimals + 1 - all.size(), '0');
  const std::size_t split = all.size() - static_cast<std::size_t>(decimals);
  std::string whole = all.substr(0, split);
  const std::size_t first = whole.find_first_not_of('0');
  whole = first == std::string::npos ? "" : whole.substr(first);
  return {whole, all.substr(split)};
}

std::string grouped(const std::string& whole) {
  std::string out;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    if (i > 0 && (whole.size() - i) % 3 == 0) out += ',';
    out += whole[i];
  }
  return out;
}

bool is_zero(const std::string& whole, const std::string& fraction) {
  return whole.find_first_not_of('0') == std::string::npos && fraction.find_first_not_of('0') == std::string::npos;
}

std::optional<std::string> standard_number(char f, int precision, bool has_precision, const TypedValue& v) {
  Number n = number_of(v);
  const bool integral = std::holds_alternative<std::int64_t>(v.value) || std::holds_alternative<bool>(v.value);
  const auto signed_text = [&](const std::string& body, const std::string& whole, const std::string& fraction) {
    return cat(n.negative && !is_zero(whole, fraction) ? "-" : "", body);
  };
  switch (f) {
    case 'N':
    case 'F':
    case 'C':
    case 'P': {
      if (f == 'P') n.exponent += 2;
      const auto [whole, fraction] = fixed_digits(n, has_precision ? precision : 2);
      std::string body = f == 'F' ? (whole.empty() ? "0" : whole) : (whole.empty() ? "0" : grouped(whole));
      if (!fraction.empty()) body.append(".").append(fraction);
      if (f == 'C') {
        // en-US currency: $1,234.50, and a negative amount in parentheses (.NET Framework's pattern).
        return n.negative && !is_zero(whole, fraction) ? cat("($", body, ")") : cat("$", body);
      }
      if (f == 'P') body += " %";
      return signed_text(body, whole, fraction);
    }
    case 'D': {
      if (!integral) return std::nullopt;
      std::string whole = n.digits.empty() ? "0" : n.digits + std::string(static_cast<std::size_t>(n.exponent), '0');
      if (whole.size() < static_cast<std::size_t>(precision)) whole.insert(0, precision - whole.size(), '0');
      return cat(n.negative ? "-" : "", whole);
    }
    case 'X': {
      if (!integral) return std::nullopt;
      const std::int64_t i =
          std::holds_alternative<bool>(v.value) ? std::get<bool>(v.value) : std::get<std::int64_t>(v.value);
      const int bits = v.type.kind == SqlKind::BigInt     ? 64
                       : v.type.kind == SqlKind::SmallInt ? 16
                       : v.type.kind == SqlKind::TinyInt  ? 8
                                                          : 32;
      const auto u = static_cast<std::uint64_t>(i) & (bits == 64 ? ~0ULL : ((1ULL << bits) - 1));
      char buf[24];
      std::snprintf(buf, sizeof buf, "%llX", static_cast<unsigned long long>(u));
      std::string out = buf;
      if (out.size() < static_cast<std::size_t>(precision)) out.insert(0, precision - out.size(), '0');
      return out;
    }
    case 'E': {
      const int p = has_precision ? precision : 6;
      if (n.digits.empty()) return cat("0.", std::string(static_cast<std::size_t>(p), '0'), "E+000");
      int e = n.exponent + static_cast<int>(n.digits.size()) - 1;  // scientific exponent
      Number scaled{false, n.digits, n.exponent - e};
      auto [whole, fraction] = fixed_digits(scaled, p);
      if (whole.size() > 1) {  // rounding carried to 10.000
        ++e;
        scaled.exponent -= 1;
        std::tie(whole, fraction) = fixed_digits(scaled, p);
      }
      return cat(n.negative ? "-" : "", whole, p > 0 ? "." : "", p > 0 ? fraction : "", "E", e < 0 ? "-" : "+",
                 padded(std::abs(e), 3));
    }
    case 'G': {
      if (has_precision && precision > 0) return std::nullopt;  // only plain G is read here
      if (std::holds_alternative<Decimal>(v.value)) return text_of(v, 0);
      if (integral) {
        return cat(n.negative ? "-" : "", n.digits.empty() ? "0" : n.digits,
                   std::string(static_cast<std::size_t>(n.exponent), '0'));
      }
      const int e = n.exponent + static_cast<int>(n.digits.size()) - 1;
      if (n.digits.empty()) return "0";
      if (e < -5 || e >= 15) {
        std::string m = n.digits.substr(0, 1);
        if (n.digits.size() > 1) m.append(".").append(n.digits.substr(1));
        return cat(n.negative ? "-" : "", m, "E", e < 0 ? "-" : "+", padded(std::abs(e), 2));
      }
      const int decimals = std::max(0, -n.exponent);
      const auto [whole, fraction] = fixed_digits(n, decimals);
      return cat(n.negative ? "-" : "", whole.empty() ? "0" : whole, fraction.empty() ? "" : ".", fraction);
    }
    default: return std::nullopt;
  }
}

// Splits a custom number pattern at unquoted ';' into its sections.
std::vector<std::string> sections_of(std::string_view f) {
  std::vector<std::string> out(1);
  for (std::size_t i = 0; i < f.size(); ++i) {
    const char ch = f[i];
    if (ch == '\\' && i + 1 < f.size()) {
      out.back() += f.substr(i, 2);
      ++i;
    } else if (ch == '\'' || ch == '"') {
      const std::size_t close = f.find(ch, i + 1);
      const std::size_t end = close == std::string_view::npos ? f.size() : close + 1;
      out.back() += f.substr(i, end - i);
      i = end - 1;
    } else if (ch == ';') {
      out.emplace_back();
    } else {
      out.back() += ch;
    }
  }
  return out;
}

std::optional<std::string> custom_number(std::string_view pattern, Number n, bool signed_out) {
  // First pass: where the point is, how many placeholders on each side, grouping and scaling.
  int int_places = 0, min_int = 0, frac_places = 0, min_frac = 0, percents = 0;
  bool seen_point = false, grouping = false, seen_int_zero = false;
  int pending_commas = 0;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char ch = pattern[i];
    if (ch == '\\') {
      ++i;
      continue;
    }
    if (ch == '\'' || ch == '"') {
      const std::size_t close = pattern.find(ch, i + 1);
      if (close == std::string_view::npos) return std::nullopt;
      i = close;
      continue;
    }
    if (ch == '0' || ch == '#') {
      if (pending_commas > 0 && !seen_point) grouping = true;
      pending_commas = 0;
      if (seen_point) {
        ++frac_places;
        if (ch == '0') min_frac = frac_places;
      } else {
        ++int_places;
        if (ch == '0') seen_int_zero = true;
        if (seen_int_zero) ++min_int;
      }
    } else if (ch == ',' && !seen_point && int_places > 0) {
      ++pending_commas;
    } else if (ch == '.' && !seen_point) {
      seen_point = true;
      n.exponent -= 3 * pending_commas;  // commas just before the point divide by 1000 each
      pending_commas = 0;
    } else if (ch == '%') {
      ++percents;
    }
  }
  if (!seen_point) n.exponent -= 3 * pending_commas;
  n.exponent += 2 * percents;
  auto [whole, fraction] = fixed_digits(n, frac_places);
  while (static_cast<int>(fraction.size()) > min_frac && fraction.back() == '0') fraction.pop_back();
  if (static_cast<int>(whole.size()) < min_int) whole.insert(0, min_int - whole.size(), '0');
  if (grouping) whole = grouped(whole);
  const bool zero = is_zero(whole, fraction);
  // Second pass: write. Integer placeholders take the digits from the right; the first one takes
  // every digit left over.
  std::string out = signed_out && n.negative && !zero ? "-" : "";
  int int_seen = 0;
  std::size_t frac_at = 0;
  seen_point = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char ch = pattern[i];
    if (ch == '\\') {
      if (i + 1 < pattern.size()) out += pattern[++i];
      continue;
    }
    if (ch == '\'' || ch == '"') {
      const std::size_t close = pattern.find(ch, i + 1);
      out += pattern.substr(i + 1, close - i - 1);
      i = close;
      continue;
    }
    if ((ch == '0' || ch == '#') && !seen_point) {
      ++int_seen;
      if (grouping) {
        if (int_seen == 1) out += whole;
        continue;
      }
      const int from_right = int_places - int_seen;  // placeholders after this one
      const int len = static_cast<int>(whole.size());
      if (int_seen == 1) {
        if (len > from_right) out += whole.substr(0, static_cast<std::size_t>(len - from_right));
      } else if (len > from_right) {
        out += whole[static_cast<std::size_t>(len - from_right - 1)];
      }
      continue;
    }
    if ((ch == '0' || ch == '#') && seen_point) {
      if (frac_at < fraction.size()) out += fraction[frac_at];
      ++frac_at;
      continue;
    }
    if (ch == '.' && !seen_point) {
      seen_point = true;
      if (!fraction.empty()) out += '.';
      continue;
    }
    if (ch == ',') continue;
    out += ch;
  }
  return out;
}

std::optional<std::string> format_number(std::string_view f, const TypedValue& v) {
  const char first = static_cast<char>(std::toupper(static_cast<unsigned char>(f.empty() ? ' ' : f[0])));
  const bool standard =
      !f.empty() && std::string_view("NFCPDXEGR").find(first) != std::string_view::npos &&
      (f.size() == 1 || (f.size() <= 3 && f.substr(1).find_first_not_of("0123456789") == std::string_view::npos));
  if (standard) {
    const int precision = f.size() > 1 ? std::stoi(std::string(f.substr(1))) : 0;
    return standard_number(first == 'R' ? 'G' : first, precision, f.size() > 1, v);
  }
  // A lone letter that names no standard format is .NET's FormatException, not a pattern.
  if (f.size() == 1 && std::isalpha(static_cast<unsigned char>(f[0])) != 0) return std::nullopt;
  const Number n = number_of(v);
  const auto sections = sections_of(f);
  if (sections.size() > 3) return std::nullopt;
  const auto [whole, fraction] = fixed_digits(n, 10);
  if (is_zero(whole, fraction) && sections.size() == 3) return custom_number(sections[2], n, false);
  if (n.negative && sections.size() >= 2 && !sections[1].empty()) return custom_number(sections[1], n, false);
  return custom_number(sections[0], n, true);
}

std::optional<std::string> format_value(const TypedValue& v, std::string_view f) {
  if (const auto* o = std::get_if<DateTimeOffset>(&v.value)) {
    const Moment local = moment_of(local_of(*o), o->offset_minutes);
    const Moment utc = moment_of(o->utc, 0);
    return f.size() == 1 ? standard_date(f[0], local, utc) : custom_date(f, local);
  }
  if (const auto* d = std::get_if<DateTime2>(&v.value)) {
    if (v.type.kind == SqlKind::Time) return time_span(f, d->ticks);
    const Moment m = moment_of(*d, std::nullopt);
    return f.size() == 1 ? standard_date(f[0], m, m) : custom_date(f, m);
  }
  return format_number(f, v);
}

}  // namespace

std::optional<TypedValue> format_builtin(const std::vector<TypedValue>& args) {
  if (args.size() < 2 || args.size() > 3) sql_error(174, "The format function requires 2 to 3 argument(s).");
  const ColumnType t{SqlKind::NVarChar, 4000};
  const TypedValue& v = args[0];
  const SqlKind k = v.type.kind;
  if (!is_null(v.value) && !is_numeric(k) && !std::holds_alternative<DateTime2>(v.value) &&
      !std::holds_alternative<DateTimeOffset>(v.value)) {
    sql_error(8116, cat("Argument data type ", kind_name(v.type), " is invalid for argument 1 of format function."));
  }
  if (args.size() == 3 && !is_null(args[2].value)) {
    const std::string culture = lower(text_of(args[2], 0));
    if (culture != "en-us" && culture != "en") {
      sql_error(50000, cat("The emulator's FORMAT knows the en-US culture only, not '", text_of(args[2], 0),
                           "': leave the culture out or pass 'en-US'."));
    }
  }
  if (is_null(v.value) || is_null(args[1].value)) return TypedValue{t, std::monostate{}};
  const std::string f = text_of(args[1], 0);
  if (f.empty() || f.size() > 4000) return TypedValue{t, std::monostate{}};
  const auto out = format_value(v, f);
  return out ? TypedValue{t, *out} : TypedValue{t, std::monostate{}};
}

}  // namespace mssqlcdc::tds::scalar
