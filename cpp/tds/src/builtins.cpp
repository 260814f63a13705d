// The built-in scalar functions (ISNULL, COALESCE, the clocks, SWITCHOFFSET, DATEPART, DATEADD,
// UPPER, LOWER, LEN, ABS; SUBSTRING, NCHAR and HASHBYTES live in builtins_text.cpp), and the
// error and name helpers every TDS module shares. The value semantics they build on live in
// scalar_*.cpp: arithmetic, convert, text.
#include "builtins.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <map>

#include "mssqlcdc/error.hpp"
#include "scalar_calendar.hpp"
#include "scalar_kinds.hpp"
#include "scalar_numeric.hpp"
#include "scalar_text.hpp"
#include "tsql.hpp"

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

using namespace scalar;

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
  if (fn == "todatetimeoffset") {
    // The value is the local time at the given offset (TODATETIMEOFFSET's page); a DateTimeOffset
    // keeps UTC, so the offset is taken off the local time.
    arity(fn, args, 2);
    const bool dt = args[0].type.kind == SqlKind::DateTime;
    const ColumnType t{SqlKind::DateTimeOffset, 0, 0, dt ? std::uint8_t{3} : args[0].type.scale, false};
    if (is_null(args[0].value) || is_null(args[1].value)) return TypedValue{t, std::monostate{}};
    const int minutes = offset_minutes(args[1]);
    if (std::abs(minutes) > 14 * 60) {
      sql_error(9819, "The timezone provided to builtin function todatetimeoffset is invalid.");
    }
    const DateTime2 local =
        std::get<DateTime2>(convert(ColumnType{SqlKind::DateTime2, 0, 0, 7, false}, args[0], 0).value);
    return TypedValue{t, DateTimeOffset{normalized(local.days, local.ticks - std::int64_t{minutes} * 600'000'000),
                                        static_cast<std::int16_t>(minutes)}};
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
  if (fn == "datediff" || fn == "datediff_big") {
    arity(fn, args, 3);
    const ColumnType t{fn == "datediff" ? SqlKind::Int : SqlKind::BigInt};
    if (is_null(args[1].value) || is_null(args[2].value)) return TypedValue{t, std::monostate{}};
    const std::string part = datepart_name(args[0]);
    // An offset value counts in UTC, as DATEDIFF's page says; the others by their own clock.
    const auto instant = [](const TypedValue& v) {
      if (const auto* d = std::get_if<DateTime2>(&v.value)) return *d;
      return as_offset(v).utc;
    };
    const DateTime2 a = instant(args[1]), b = instant(args[2]);
    const auto floor_div = [](__int128 x, __int128 y) {
      return x / y - static_cast<__int128>(x % y != 0 && ((x < 0) != (y < 0)));
    };
    const __int128 ta = static_cast<__int128>(a.days) * kTicksPerDay + a.ticks;
    const __int128 tb = static_cast<__int128>(b.days) * kTicksPerDay + b.ticks;
    static const std::map<std::string, std::int64_t, std::less<>> kUnit{
        {"day", kTicksPerDay}, {"dayofyear", kTicksPerDay}, {"hour", 36000000000}, {"minute", 600000000},
        {"second", 10000000},  {"millisecond", 10000},      {"microsecond", 10}};
    __int128 r = 0;
    if (const auto it = kUnit.find(part); it != kUnit.end()) {
      r = floor_div(tb, it->second) - floor_div(ta, it->second);  // boundaries crossed, not time elapsed
    } else if (part == "nanosecond") {
      r = (tb - ta) * 100;
    } else if (part == "week") {
      r = floor_div(b.days + 1, 7) - floor_div(a.days + 1, 7);  // weeks start on Sunday; 0001-01-01 was a Monday
    } else if (part == "month" || part == "quarter" || part == "year") {
      const Civil ca = civil_of(a.days), cb = civil_of(b.days);
      const int per_year = part == "year" ? 1 : part == "quarter" ? 4 : 12;
      const int span = 12 / per_year;
      r = (static_cast<__int128>(cb.y) * per_year + (cb.m - 1) / span) -
          (static_cast<__int128>(ca.y) * per_year + (ca.m - 1) / span);
    } else {
      sql_error(155, "'" + part + "' is not a recognized datediff option.");
    }
    const __int128 limit = fn == "datediff" ? 2147483647 : 9223372036854775807;
    if (r > limit || r < -limit - 1) {
      sql_error(535,
                "The " + fn +
                    " function resulted in an overflow. The number of dateparts separating two date/time instances "
                    "is too large. Try to use " +
                    fn + " with a less precise datepart.");
    }
    return TypedValue{t, static_cast<std::int64_t>(r)};
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
  if (auto v = text_builtin(fn, args)) return v;
  if (fn == "abs") {
    arity(fn, args, 1);
    if (is_null(args[0].value)) return args[0];
    return compare(args[0], TypedValue{ColumnType{SqlKind::Int}, std::int64_t{0}}) < 0 ? negate(args[0]) : args[0];
  }
  return std::nullopt;
}

}  // namespace mssqlcdc::tds
