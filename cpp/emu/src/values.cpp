// values.cpp: coercion of caller values into storage cells with SQL Server's errors, the
// storage encodings (decimals, GUIDs) and datetime rounding.
#include "mssqlcdc/emu/types.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

constexpr std::int64_t kMicrosPerSecond = 1'000'000;
constexpr std::int64_t kMicrosPerDay = 86'400 * kMicrosPerSecond;
constexpr std::int64_t kTicksPerDay = 10 * kMicrosPerDay;

[[noreturn]] void constraint(int number, std::string message) {
  throw Error(ErrorKind::EmuConstraint, std::move(message), number);
}

[[noreturn]] void wrong_type(std::string_view what, std::string_view type, std::string_view got) {
  throw Error(ErrorKind::Type, std::string(what) + ": a " + std::string(type) + " column does not take " +
                                   std::string(got) + "; pass a value of the column's Python type");
}

std::string_view kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::Null: return "None";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::Text: return "str";
    case Value::Kind::Bytes: return "bytes";
    case Value::Kind::Decimal: return "Decimal";
    case Value::Kind::Date: return "date";
    case Value::Kind::Time: return "time";
    case Value::Kind::DateTime: return "datetime";
    case Value::Kind::DateTimeTz: return "aware datetime";
  }
  return "?";
}

// 10^38: past 38 digits no decimal can hold a value, and stopping there keeps 128 bits exact.
constexpr __int128 kDecimalLimit =
    static_cast<__int128>(1'000'000'000'000'000'000LL) * 100'000'000'000'000'000LL * 1000;

// Parses "[-]digits[.digits]" and rounds half away from zero to `scale`; nullopt past 38 digits.
std::optional<__int128> parse_scaled(std::string_view text, int scale) {
  bool negative = false;
  std::size_t pos = 0;
  if (pos < text.size() && (text[pos] == '-' || text[pos] == '+')) negative = text[pos++] == '-';
  __int128 value = 0;
  int frac_digits = 0;
  bool seen_point = false;
  bool any = false;
  int round_digit = -1;
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;
    any = true;
    if (seen_point && frac_digits >= scale) {
      if (round_digit < 0) round_digit = c - '0';
      continue;
    }
    if (value > (kDecimalLimit - (c - '0')) / 10) return std::nullopt;
    value = value * 10 + (c - '0');
    if (seen_point) ++frac_digits;
  }
  if (!any) return std::nullopt;
  for (; frac_digits < scale; ++frac_digits) {
    if (value > kDecimalLimit / 10) return std::nullopt;
    value *= 10;
  }
  if (round_digit >= 5) value += 1;
  return negative ? -value : value;
}

__int128 pow10(int n) {
  __int128 v = 1;
  for (int i = 0; i < n; ++i) v *= 10;
  return v;
}

std::string scaled_to_text(__int128 v, int scale) {
  const bool neg = v < 0;
  unsigned __int128 u = neg ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  } while (u != 0);
  while (static_cast<int>(digits.size()) <= scale) digits.insert(digits.begin(), '0');
  if (scale > 0) digits.insert(digits.end() - scale, '.');
  return neg ? "-" + digits : digits;
}

// Code points and UTF-16 units of a UTF-8 string (validated by Python before it gets here).
std::pair<std::size_t, std::size_t> text_length(std::string_view s) {
  std::size_t points = 0;
  std::size_t units = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) == 0x80) continue;
    ++points;
    units += c >= 0xF0 ? 2 : 1;
  }
  return {points, units};
}

std::int64_t round_to_unit(std::int64_t micros, std::int64_t unit) {
  // Halves up, floor-based so negative times (before 1970) round the same way.
  const std::int64_t shifted = micros + unit / 2;
  std::int64_t q = shifted / unit;
  if (shifted % unit < 0) --q;
  return q * unit;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if (a % b < 0) --q;
  return q;
}

// Microseconds within a second of tick k (0..300): the whole milliseconds SQL Server shows.
std::int64_t tick_micros(std::int64_t k) { return ((k * 1000 + 150) / 300) * 1000; }

std::string guid_from_text(std::string_view text, std::string_view what) {
  std::string hex;
  for (char c : text) {
    if (c == '-') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) hex.clear(), hex.push_back('!');
    hex.push_back(c);
  }
  if (text.size() != 36 || hex.size() != 32 || hex.find('!') != std::string::npos || text[8] != '-' ||
      text[13] != '-' || text[18] != '-' || text[23] != '-') {
    throw Error(ErrorKind::InvalidArgument, std::string(what) + ": '" + std::string(text) +
                                                "' is not a uniqueidentifier; pass a uuid.UUID or 36-character text");
  }
  std::array<std::uint8_t, 16> be{};
  for (int i = 0; i < 16; ++i) be[i] = static_cast<std::uint8_t>(std::stoi(hex.substr(i * 2, 2), nullptr, 16));
  // SQL Server's binary form: the first three groups little-endian.
  const std::array<std::uint8_t, 16> bin{be[3], be[2], be[1],  be[0],  be[5],  be[4],  be[7],  be[6],
                                         be[8], be[9], be[10], be[11], be[12], be[13], be[14], be[15]};
  static constexpr std::array<int, 16> kOrder{10, 11, 12, 13, 14, 15, 8, 9, 6, 7, 4, 5, 0, 1, 2, 3};
  std::string out(16, '\0');
  for (int i = 0; i < 16; ++i) out[i] = static_cast<char>(bin[kOrder[i]]);
  return out;
}

// 100-ns ticks rounded (halves up) to `digits` fractional digits, 0..7.
std::int64_t round_fraction(std::int64_t ticks, int digits) {
  if (digits >= 7) return ticks;
  std::int64_t unit = 1;
  for (int i = digits; i < 7; ++i) unit *= 10;
  return round_to_unit(ticks, unit);
}

std::int64_t ticks_of(const Value& v) { return v.i * 10 + v.sub_ticks; }

}  // namespace

std::int64_t round_to_tick(std::int64_t micros) {
  const std::int64_t sec = floor_div(micros, kMicrosPerSecond);
  const std::int64_t within = micros - sec * kMicrosPerSecond;
  const std::int64_t k = (within * 300 + kMicrosPerSecond / 2) / kMicrosPerSecond;
  return sec * kMicrosPerSecond + tick_micros(k);
}

std::int64_t ceil_to_tick(std::int64_t micros) {
  const std::int64_t sec = floor_div(micros, kMicrosPerSecond);
  const std::int64_t within = micros - sec * kMicrosPerSecond;
  std::int64_t k = within * 300 / kMicrosPerSecond;
  while (tick_micros(k) < within) ++k;
  return sec * kMicrosPerSecond + tick_micros(k);
}

std::string decimal_encode(__int128 scaled) {
  auto u = static_cast<unsigned __int128>(scaled);
  u ^= static_cast<unsigned __int128>(1) << 127;
  std::string out(16, '\0');
  for (int i = 15; i >= 0; --i) {
    out[i] = static_cast<char>(static_cast<std::uint8_t>(u & 0xFF));
    u >>= 8;
  }
  return out;
}

__int128 decimal_decode(std::string_view stored) {
  unsigned __int128 u = 0;
  for (std::size_t i = 0; i < 16 && i < stored.size(); ++i) u = (u << 8) | static_cast<std::uint8_t>(stored[i]);
  u ^= static_cast<unsigned __int128>(1) << 127;
  return static_cast<__int128>(u);
}

std::string decimal_text(std::string_view stored, int scale) { return scaled_to_text(decimal_decode(stored), scale); }

std::string guid_to_text(std::string_view stored) {
  static constexpr std::array<int, 16> kOrder{10, 11, 12, 13, 14, 15, 8, 9, 6, 7, 4, 5, 0, 1, 2, 3};
  std::array<std::uint8_t, 16> bin{};
  for (int i = 0; i < 16 && i < static_cast<int>(stored.size()); ++i)
    bin[kOrder[i]] = static_cast<std::uint8_t>(stored[i]);
  const std::array<std::uint8_t, 16> be{bin[3], bin[2], bin[1],  bin[0],  bin[5],  bin[4],  bin[7],  bin[6],
                                        bin[8], bin[9], bin[10], bin[11], bin[12], bin[13], bin[14], bin[15]};
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[be[i] >> 4];
    out += kHex[be[i] & 0xF];
  }
  return out;
}

Cell coerce(const Value& v, const SqlType& t, std::string_view what) {
  if (v.kind == Value::Kind::Null) return Cell::null();
  const std::string type = t.canonical();
  auto out_of_range = [&](const std::string& shown) -> void {
    constraint(8115, std::string(what) + ": value " + shown + " does not fit " + type +
                         " (error 8115); pass a smaller value or widen the column");
  };
  switch (t.base) {
    case Base::Bit:
      if (v.kind == Value::Kind::Bool) return Cell::integer(v.i != 0 ? 1 : 0);
      if (v.kind == Value::Kind::Int) {
        if (v.i != 0 && v.i != 1) out_of_range(std::to_string(v.i));
        return Cell::integer(v.i);
      }
      wrong_type(what, type, kind_name(v.kind));
    case Base::TinyInt:
    case Base::SmallInt:
    case Base::Int:
    case Base::BigInt: {
      if (v.kind != Value::Kind::Int) wrong_type(what, type, kind_name(v.kind));
      std::int64_t lo = std::numeric_limits<std::int64_t>::min();
      std::int64_t hi = std::numeric_limits<std::int64_t>::max();
      if (t.base == Base::TinyInt) lo = 0, hi = 255;
      if (t.base == Base::SmallInt) lo = -32768, hi = 32767;
      if (t.base == Base::Int)
        lo = std::numeric_limits<std::int32_t>::min(), hi = std::numeric_limits<std::int32_t>::max();
      if (v.i < lo || v.i > hi) out_of_range(std::to_string(v.i));
      return Cell::integer(v.i);
    }
    case Base::Decimal:
    case Base::Numeric:
    case Base::Money:
    case Base::SmallMoney: {
      std::string text;
      if (v.kind == Value::Kind::Int) text = std::to_string(v.i);
      else if (v.kind == Value::Kind::Decimal || v.kind == Value::Kind::Text) text = v.s;
      else if (v.kind == Value::Kind::Float && !v.s.empty()) text = v.s;
      else wrong_type(what, type, kind_name(v.kind));
      const auto scaled = parse_scaled(text, t.scale);
      if (!scaled) {
        if (v.kind == Value::Kind::Text) {
          throw Error(ErrorKind::InvalidArgument, std::string(what) + ": '" + text + "' is not a number for " + type);
        }
        out_of_range(text);
      }
      const __int128 limit = pow10(t.precision);
      if (*scaled >= limit || *scaled <= -limit) out_of_range(text);
      return Cell::blob(decimal_encode(*scaled));
    }
    case Base::Real:
    case Base::Float: {
      double d = 0;
      if (v.kind == Value::Kind::Float) d = v.f;
      else if (v.kind == Value::Kind::Int) d = static_cast<double>(v.i);
      else wrong_type(what, type, kind_name(v.kind));
      if (!std::isfinite(d)) out_of_range(std::to_string(d));
      if (t.base == Base::Real) {
        if (std::fabs(d) > std::numeric_limits<float>::max()) out_of_range(std::to_string(d));
        d = static_cast<double>(static_cast<float>(d));
      }
      return Cell::real(d);
    }
    case Base::Date:
      if (v.kind != Value::Kind::Date) wrong_type(what, type, kind_name(v.kind));
      return Cell::integer(v.i);
    case Base::Time: {
      if (v.kind != Value::Kind::Time) wrong_type(what, type, kind_name(v.kind));
      const std::int64_t r = round_fraction(ticks_of(v), t.precision);
      return Cell::integer(r >= kTicksPerDay ? kTicksPerDay - 1 : r);
    }
    case Base::DateTime:
    case Base::SmallDateTime:
    case Base::DateTime2: {
      if (v.kind != Value::Kind::DateTime) wrong_type(what, type, kind_name(v.kind));
      if (t.base == Base::DateTime) return Cell::integer(round_to_tick(v.i));
      if (t.base == Base::SmallDateTime) {
        // Through datetime's 1/300 s ticks first: 29.998 s rounds down, 29.999 s (tick 30.000) up.
        return Cell::integer(round_to_unit(round_to_tick(v.i), 60 * kMicrosPerSecond));
      }
      return Cell::integer(round_fraction(ticks_of(v), t.precision));
    }
    case Base::DateTimeOffset:
      if (v.kind != Value::Kind::DateTimeTz && v.kind != Value::Kind::DateTime)
        wrong_type(what, type, kind_name(v.kind));
      return Cell::integer(round_fraction(ticks_of(v), t.precision));
    case Base::Char:
    case Base::VarChar:
    case Base::NChar:
    case Base::NVarChar:
    case Base::Text:
    case Base::NText:
    case Base::Xml: {
      // xml is not parsed: a malformed document is stored as given (SQL Server refuses it).
      if (v.kind != Value::Kind::Text) wrong_type(what, type, kind_name(v.kind));
      if (t.length > 0) {
        const auto [points, units] = text_length(v.s);
        const bool national = t.base == Base::NChar || t.base == Base::NVarChar;
        const std::size_t n = national ? units : points;
        if (n > static_cast<std::size_t>(t.length)) {
          constraint(2628,
                     std::string(what) + ": a value of " + std::to_string(n) + " characters does not fit " + type +
                         " (error 2628, string or binary data would be truncated); shorten it or widen the column");
        }
        if (t.base == Base::Char || t.base == Base::NChar) {
          return Cell::text(v.s + std::string(static_cast<std::size_t>(t.length) - n, ' '));
        }
      }
      return Cell::text(v.s);
    }
    case Base::UniqueIdentifier:
      if (v.kind != Value::Kind::Text) wrong_type(what, type, kind_name(v.kind));
      return Cell::blob(guid_from_text(v.s, what));
    case Base::Binary:
    case Base::VarBinary:
    case Base::Image: {
      if (v.kind != Value::Kind::Bytes) wrong_type(what, type, kind_name(v.kind));
      if (t.length > 0 && v.s.size() > static_cast<std::size_t>(t.length)) {
        constraint(2628, std::string(what) + ": a value of " + std::to_string(v.s.size()) + " bytes does not fit " +
                             type +
                             " (error 2628, string or binary data would be truncated); shorten it or widen the column");
      }
      if (t.base == Base::Binary)
        return Cell::blob(v.s + std::string(static_cast<std::size_t>(t.length) - v.s.size(), '\0'));
      return Cell::blob(v.s);
    }
    case Base::SqlVariant:
    case Base::HierarchyId:
    case Base::Geometry:
    case Base::Geography:
      // Held opaquely: the bytes are not checked against the type's own format.
      if (v.kind != Value::Kind::Bytes) wrong_type(what, type, kind_name(v.kind));
      return Cell::blob(v.s);
    case Base::RowVersion:
      constraint(273, std::string(what) +
                          ": cannot insert an explicit value into a rowversion column (error 273); "
                          "leave it out, the emulator fills it");
  }
  wrong_type(what, type, kind_name(v.kind));
}

namespace {

std::string base_name(const SqlType& t) {
  const std::string c = t.canonical();
  return c.substr(0, c.find('('));
}

// Whether `text` reads as a number: [sign] digits [. digits], and an exponent for a float.
bool number_text(const std::string& text, bool exponent) {
  std::size_t i = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
  bool digit = false;
  bool point = false;
  for (; i < text.size(); ++i) {
    const char ch = text[i];
    if (std::isdigit(static_cast<unsigned char>(ch)) != 0) {
      digit = true;
    } else if (ch == '.' && !point) {
      point = true;
    } else if ((ch == 'e' || ch == 'E') && exponent && digit) {
      return number_text(text.substr(i + 1), false) && text.find('.', i) == std::string::npos;
    } else {
      return false;
    }
  }
  return digit;
}

// SQL Server's implicit conversion of one value across type families (the CAST and CONVERT
// chart): numbers to text, text to numbers (245, 248, 8114), decimals and floats to integers
// (truncated), integers to bit (nonzero is 1).
Value across_families(Value v, const SqlType& from, const SqlType& to, std::string_view what) {
  const Family target = to.family();
  if (target == Family::Character) {
    if (v.kind == Value::Kind::Int) v.s = std::to_string(v.i);
    v.kind = Value::Kind::Text;  // a decimal's text is its digits at its scale, as CAST gives
    return v;
  }
  if (v.kind == Value::Kind::Text) {
    std::string text = v.s;
    while (!text.empty() && text.front() == ' ') text.erase(text.begin());
    while (!text.empty() && text.back() == ' ') text.pop_back();
    if (target == Family::Integer || target == Family::Bit) {
      const auto scaled = parse_scaled(text, 0);
      const bool digits_only = !text.empty() && text.find('.') == std::string::npos;
      if (!scaled || !digits_only) {
        constraint(245, "Conversion failed when converting the " + base_name(from) + " value '" + v.s +
                            "' to data type " + base_name(to) + ". (error 245): " + std::string(what) +
                            "; change or delete that row before the ALTER COLUMN");
      }
      __int128 lo = std::numeric_limits<std::int64_t>::min();
      __int128 hi = std::numeric_limits<std::int64_t>::max();
      if (to.base == Base::Int)
        lo = std::numeric_limits<std::int32_t>::min(), hi = std::numeric_limits<std::int32_t>::max();
      if (to.base == Base::SmallInt) lo = -32768, hi = 32767;
      if (to.base == Base::TinyInt) lo = 0, hi = 255;
      if (*scaled < lo || *scaled > hi) {
        const std::string name = base_name(to);
        constraint(248, "The conversion of the " + base_name(from) + " value '" + v.s + "' overflowed " +
                            (name.front() == 'i' ? "an " : "a ") + name + " column. (error 248): " + std::string(what));
      }
      v.kind = Value::Kind::Int;
      v.i = static_cast<std::int64_t>(*scaled);
    } else {
      if (!number_text(text, target == Family::Approximate)) {
        constraint(8114, "Error converting data type " + base_name(from) + " to " +
                             (target == Family::Exact ? std::string("numeric") : base_name(to)) + ". (error 8114): " +
                             std::string(what) + "; change or delete that row before the ALTER COLUMN");
      }
      v.kind = target == Family::Exact ? Value::Kind::Decimal : Value::Kind::Float;
      v.s = text;
      v.f = std::stod(text);
    }
  } else if (target == Family::Integer || target == Family::Bit) {
    if (v.kind == Value::Kind::Decimal) {
      const __int128 scaled = *parse_scaled(v.s, from.scale);
      v.i = static_cast<std::int64_t>(scaled / pow10(from.scale));
    } else if (v.kind == Value::Kind::Float) {
      v.i = static_cast<std::int64_t>(std::trunc(v.f));
    }
    v.kind = Value::Kind::Int;
    if (target == Family::Bit && v.i != 0) v.i = 1;
  } else if (target == Family::Approximate && v.kind == Value::Kind::Decimal) {
    v.kind = Value::Kind::Float;
    v.f = std::stod(v.s);
  } else if (target == Family::Exact && v.kind == Value::Kind::Float) {
    v.kind = Value::Kind::Decimal;
    v.s = std::to_string(v.f);
  }
  return v;
}

}  // namespace

std::int64_t ticks_to_micros(std::int64_t ticks) { return floor_div(ticks, 10); }
int ticks_beyond_micros(std::int64_t ticks) { return static_cast<int>(ticks - 10 * floor_div(ticks, 10)); }

std::string ticks_text(std::int64_t ticks, int digits) {
  using namespace std::chrono;
  const std::int64_t day = floor_div(ticks, kTicksPerDay);
  std::int64_t within = ticks - day * kTicksPerDay;  // 0 .. one day of ticks
  const year_month_day ymd{sys_days{days{day}}};
  const std::int64_t fraction = within % 10'000'000;
  within /= 10'000'000;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02lld:%02lld:%02lld.%07lld", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<long long>(within / 3600), static_cast<long long>(within / 60 % 60),
                static_cast<long long>(within % 60), static_cast<long long>(fraction));
  const int kept = std::clamp(digits, 0, 7);
  return std::string(buf, static_cast<std::size_t>(19 + (kept == 0 ? 0 : 1 + kept)));
}

Cell convert(const Cell& stored, const SqlType& from, const SqlType& to, std::string_view what) {
  if (stored.is_null()) return stored;
  Value v;
  switch (from.family()) {
    case Family::Bit:
    case Family::Integer:
      v.kind = Value::Kind::Int;
      v.i = stored.i;
      break;
    case Family::Exact:
      v.kind = Value::Kind::Decimal;
      v.s = scaled_to_text(decimal_decode(stored.s), from.scale);
      break;
    case Family::Approximate:
      v.kind = Value::Kind::Float;
      v.f = stored.d;
      break;
    case Family::Temporal:
      v.i = from.stores_ticks() ? ticks_to_micros(stored.i) : stored.i;
      v.sub_ticks = from.stores_ticks() ? ticks_beyond_micros(stored.i) : 0;
      v.kind = to.base == Base::Date   ? Value::Kind::Date
               : to.base == Base::Time ? Value::Kind::Time
                                       : Value::Kind::DateTime;
      if (from.base == Base::Date && to.base != Base::Date) v.i = stored.i * kMicrosPerDay;
      if (from.base != Base::Date && to.base == Base::Date) v.i = floor_div(v.i, kMicrosPerDay), v.sub_ticks = 0;
      break;
    case Family::Xml:
      v.kind = Value::Kind::Text;
      v.s = stored.s;
      break;
    case Family::Character: {
      v.kind = Value::Kind::Text;
      v.s = stored.s;
      // Padding belongs to the old fixed-length type; the new type pads again if it is fixed.
      if (from.base == Base::Char || from.base == Base::NChar) {
        while (!v.s.empty() && v.s.back() == ' ') v.s.pop_back();
      }
      break;
    }
    case Family::Binary:
      v.kind = Value::Kind::Bytes;
      v.s = stored.s;
      break;
    default: return stored;
  }
  if (from.family() != to.family()) v = across_families(std::move(v), from, to, what);
  return coerce(v, to, what);
}

}  // namespace mssqlcdc::emu
