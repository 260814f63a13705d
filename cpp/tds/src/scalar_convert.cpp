// CAST and CONVERT: a type named in T-SQL, and a value converted to it with SQL Server's styles
// (1 and 2 for binary as hex text, 120/121/126 for ISO dates) and errors: 245/8114/241/8169 for
// text that is no value of the type, 8115 for overflow, 529 for a conversion SQL Server forbids;
// and assigned(), the implicit conversion of INSERT and UPDATE (decision 1451).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "builtins.hpp"
#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/wire.hpp"
#include "scalar_assign.hpp"
#include "scalar_calendar.hpp"
#include "scalar_kinds.hpp"
#include "scalar_numeric.hpp"
#include "scalar_text.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {

using namespace scalar;

namespace {

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

Bytes utf16le(const std::string& text) {
  Writer w;
  w.utf16(text);
  return w.take();
}

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

namespace {

// The groups the implicit conversion chart treats alike.
enum class Group : std::uint8_t { Text, Number, Binary, DateTime, Temporal, Guid };

Group group_of(SqlKind k) {
  if (is_text(k)) return Group::Text;
  if (is_numeric(k)) return Group::Number;
  if (is_binary(k)) return Group::Binary;
  if (k == SqlKind::DateTime) return Group::DateTime;  // datetime and smalldatetime
  if (is_temporal(k)) return Group::Temporal;          // date, time, datetime2, datetimeoffset
  return Group::Guid;
}

[[noreturn]] void explicit_only(const TypedValue& v, const ColumnType& to) {
  sql_error(257, "Implicit conversion from data type " + kind_name(v.type) + " to " + kind_name(to) +
                     " is not allowed. Use the CONVERT function to run this query.");
}

[[noreturn]] void clash(const TypedValue& v, const ColumnType& to) {
  sql_error(206, "Operand type clash: " + kind_name(v.type) + " is incompatible with " + kind_name(to));
}

// A number as datetime: days since 1900-01-01, the fraction a part of a day (8115 outside
// 1753-01-01 .. 9999-12-31).
TypedValue number_as_datetime(const ColumnType& to, const TypedValue& v) {
  const double d = as_double(v);
  const double whole = std::floor(d);
  const double first = days_of(1753, 1, 1) - days_of(1900, 1, 1);
  const double last = days_of(9999, 12, 31) - days_of(1900, 1, 1);
  if (whole < first || whole > last) {
    sql_error(8115, "Arithmetic overflow error converting expression to data type datetime.");
  }
  const auto ticks = static_cast<std::int64_t>(std::llround((d - whole) * 864'000'000'000.0));
  const TypedValue exact{ColumnType{SqlKind::DateTime2, 0, 0, 7, false},
                         normalized(days_of(1900, 1, 1) + static_cast<std::int64_t>(whole), ticks)};
  return convert(to, exact, 0);
}

}  // namespace

TypedValue assigned(const ColumnType& to, const TypedValue& v) {
  if (is_null(v.value)) return {to, std::monostate{}};
  const SqlKind from = v.type.kind;
  const Group source = group_of(from);
  const Group target = group_of(to.kind);
  // The chart's refusals: an explicit-only pair is 257, a pair with no conversion at all 206.
  switch (source) {
    case Group::Text:
      if (target == Group::Binary) explicit_only(v, to);
      break;
    case Group::Number:
      if (target == Group::Temporal || target == Group::Guid) clash(v, to);
      if (target == Group::Binary && !is_int(from)) explicit_only(v, to);
      if (target == Group::DateTime) return number_as_datetime(to, v);
      break;
    case Group::Binary:
      if (target == Group::Temporal || is_float(to.kind)) clash(v, to);
      if (target == Group::DateTime || to.kind == SqlKind::Decimal || to.kind == SqlKind::Bit) {
        // The chart converts these implicitly; the emulator does not model how.
        sql_error(50000, "The emulator's TDS front end does not convert " + kind_name(v.type) + " to " + kind_name(to) +
                             ": write a value of the column's type, or CAST it to one.");
      }
      break;
    case Group::DateTime:
      if (target == Group::Number || target == Group::Binary) explicit_only(v, to);
      if (target == Group::Guid) clash(v, to);
      break;
    case Group::Temporal:
      if (target == Group::Number || target == Group::Binary || target == Group::Guid) clash(v, to);
      if ((from == SqlKind::Date && to.kind == SqlKind::Time) || (from == SqlKind::Time && to.kind == SqlKind::Date)) {
        clash(v, to);
      }
      break;
    case Group::Guid:
      if (target != Group::Text && target != Group::Binary && target != Group::Guid) clash(v, to);
      break;
  }
  // Character and binary targets keep the whole value: a longer one is the caller's 2628.
  // (A fixed-length target is read as its varying form: the emulator pads it.)
  ColumnType whole = to;
  if (target == Group::Text || target == Group::Binary) whole.length = kMax;
  if (to.kind == SqlKind::Char) whole.kind = SqlKind::VarChar;
  if (to.kind == SqlKind::NChar) whole.kind = SqlKind::NVarChar;
  if (to.kind == SqlKind::Binary) whole.kind = SqlKind::VarBinary;
  try {
    return convert(whole, v, 0);
  } catch (const Error& e) {
    if (e.number() != 8115 || !is_int(to.kind) || to.kind == SqlKind::Bit) throw;
    if (source == Group::Text) {
      // SQL Server's 248 names the text and the column's type.
      const std::string name = kind_name(to);
      sql_error(248, "The conversion of the " + kind_name(v.type) + " value '" + std::get<std::string>(v.value) +
                         "' overflowed " + (name.front() == 'i' ? "an " : "a ") + name + " column. Use a larger " +
                         "integer column.");
    }
    if (!is_float(from)) {
      sql_error(8115, "Arithmetic overflow error converting expression to data type " + kind_name(to) + ".");
    }
    throw;
  }
}

}  // namespace mssqlcdc::tds
