// Comparison and arithmetic: SQL Server's data type precedence decides which side converts, a
// number meeting text converts the text (245), and results take SQL Server's types (int at
// least, decimal scale by operator). Overflow is 8115, division by zero 8134.
#include <algorithm>
#include <cmath>

#include "builtins.hpp"
#include "scalar_calendar.hpp"
#include "scalar_kinds.hpp"
#include "scalar_numeric.hpp"
#include "scalar_text.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {

using namespace scalar;

namespace {

Bytes without_trailing_zeros(const Bytes& b) {
  auto end = b.end();
  while (end != b.begin() && *(end - 1) == 0) --end;
  return Bytes(b.begin(), end);
}

// uniqueidentifier order: the wire bytes (the first three groups little-endian) compared in the
// order 10-15, 8-9, 6-7, 4-5, 0-3, as SqlGuid documents SQL Server's comparison.
int compare_guids(const Bytes& x, const Bytes& y) {
  static constexpr std::size_t kOrder[16] = {10, 11, 12, 13, 14, 15, 8, 9, 6, 7, 4, 5, 0, 1, 2, 3};
  if (x.size() != 16 || y.size() != 16) return x < y ? -1 : x == y ? 0 : 1;
  for (const std::size_t i : kOrder) {
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return 0;
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
    // Every collation ignores trailing spaces; the rest is the collation's (emu/collation.hpp).
    return comparison_collation(a.type, b.type).compare(*x, *y);
  }
  if (const auto* x = std::get_if<Bytes>(&a.value)) {
    const auto* y = std::get_if<Bytes>(&b.value);
    if (y == nullptr) sql_error(402, "The data types are incompatible in the comparison.");
    if (ka == SqlKind::UniqueIdentifier) return compare_guids(*x, *y);
    // SQL Server pads the shorter operand with zero bytes (0x00 = 0x0000), as it pads text with
    // spaces; with the pad byte the smallest, that is comparing with trailing zeros dropped.
    const Bytes l = without_trailing_zeros(*x), r = without_trailing_zeros(*y);
    return std::lexicographical_compare(l.begin(), l.end(), r.begin(), r.end()) ? -1 : l == r ? 0 : 1;
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

}  // namespace

const emu::Collation& comparison_collation(const ColumnType& a, const ColumnType& b) {
  if (a.collation != nullptr && a.explicit_collation) return *a.collation;
  if (b.collation != nullptr && b.explicit_collation) return *b.collation;
  if (a.collation != nullptr) return *a.collation;
  if (b.collation != nullptr) return *b.collation;
  return emu::Collation::database_default();
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
  // Appended to the tag rather than "x" + text: GCC 12 at -O3 warns falsely (-Wrestrict, its bug
  // 105651) on a literal prepended to a temporary string, and -Werror makes that a failure.
  const auto tagged = [](char tag, const std::string& body) { return std::string(1, tag).append(body); };
  if (is_null(v.value)) return std::string(1, '\0');
  if (is_numeric(v.type.kind)) {
    if (is_float(v.type.kind)) return tagged('f', std::to_string(as_double(v)));
    const __int128 u = unscaled_at(v, 10);
    return tagged('n', text_of(TypedValue{ColumnType{SqlKind::Decimal, 17, 38, 10, false}, Decimal{u}}, 0));
  }
  if (const auto* s = std::get_if<std::string>(&v.value)) {
    const emu::Collation& c = v.type.collation ? *v.type.collation : emu::Collation::database_default();
    return tagged('s', c.sort_key(*s));
  }
  if (const auto* b = std::get_if<Bytes>(&v.value)) {
    if (v.type.kind == SqlKind::UniqueIdentifier) return tagged('b', hex(*b, false));
    return tagged('b', hex(without_trailing_zeros(*b), false));  // groups as compare() equates
  }
  if (const auto* d = std::get_if<DateTimeOffset>(&v.value)) {
    return tagged('t', std::to_string(d->utc.days) + "." + std::to_string(d->utc.ticks));
  }
  if (const auto* d = std::get_if<DateTime2>(&v.value))
    return tagged('t', std::to_string(d->days) + "." + std::to_string(d->ticks));
  return "?";
}

TypedValue negate(const TypedValue& v) {
  if (is_null(v.value)) return v;
  if (const auto* i = std::get_if<std::int64_t>(&v.value)) return {v.type, -*i};
  if (const auto* d = std::get_if<Decimal>(&v.value)) return {v.type, Decimal{-d->unscaled}};
  if (const auto* f = std::get_if<double>(&v.value)) return {v.type, -*f};
  sql_error(8117, "Operand data type " + kind_name(v.type) + " is invalid for minus operator.");
}

namespace {

// datetime (not datetime2) plus or minus a number of days, or minus another datetime (counted
// from 1900-01-01, datetime's zero), as SQL Server's datetime arithmetic gives: GETDATE() - 1
// is a day earlier, + 0.5 twelve hours later; past datetime's range is error 517.
TypedValue datetime_days(char op, const TypedValue& at, const TypedValue& n) {
  const ColumnType t{SqlKind::DateTime};
  if (is_null(at.value) || is_null(n.value)) return {t, std::monostate{}};
  constexpr std::int64_t kTicksPerDay = 864'000'000'000;
  const auto overflow = [] { sql_error(517, "Adding a value to a 'datetime' column caused an overflow."); };
  const auto& d = std::get<DateTime2>(at.value);
  double days = 0;
  if (n.type.kind == SqlKind::DateTime) {
    const auto& e = std::get<DateTime2>(n.value);
    days = static_cast<double>(e.days - days_of(1900, 1, 1)) + static_cast<double>(e.ticks) / kTicksPerDay;
  } else {
    days = as_double(n);
  }
  if (!std::isfinite(days) || std::abs(days) > 4'000'000) overflow();  // beyond any datetime span
  const auto delta = static_cast<std::int64_t>(std::llround(days * kTicksPerDay));
  const std::int64_t total = (d.days * kTicksPerDay) + d.ticks + (op == '-' ? -delta : delta);
  const DateTime2 out = normalized(total / kTicksPerDay, total % kTicksPerDay);
  if (out.days < days_of(1753, 1, 1) || out.days > days_of(9999, 12, 31)) overflow();
  return {t, out};
}

}  // namespace

TypedValue arithmetic(char op, const TypedValue& a, const TypedValue& b) {
  const SqlKind ka = a.type.kind, kb = b.type.kind;
  if (ka == SqlKind::DateTime && (op == '+' || op == '-') && (is_numeric(kb) || kb == SqlKind::DateTime))
    return datetime_days(op, a, b);
  if (kb == SqlKind::DateTime && op == '+' && is_numeric(ka)) return datetime_days(op, b, a);
  // The other date and time types take no numbers: SQL Server's operand clash, 206.
  const auto dated = [](SqlKind k) {
    return k == SqlKind::DateTime2 || k == SqlKind::Date || k == SqlKind::Time || k == SqlKind::DateTimeOffset;
  };
  if ((dated(ka) && is_numeric(kb)) || (is_numeric(ka) && dated(kb)))
    sql_error(206, "Operand type clash: " + kind_name(a.type) + " is incompatible with " + kind_name(b.type));
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
    // numeric's 38 digits bound every result; a step past __int128 is past them too (8115).
    bool over = false;
    const auto mul = [&over](__int128 p, __int128 q) {
      __int128 out = 0;
      over = over || __builtin_mul_overflow(p, q, &out);
      return out;
    };
    switch (op) {
      case '+': over = __builtin_add_overflow(x, y, &r); break;
      case '-': over = __builtin_sub_overflow(x, y, &r); break;
      case '*': r = mul(unscaled_at(a, a.type.scale), unscaled_at(b, b.type.scale)); break;
      case '/':
        if (y == 0) zero();
        r = mul(x, pow10_128(s)) / y;
        break;
      default:
        if (y == 0) zero();
        r = x % y;
        break;
    }
    if (op != '*' && op != '/') r = mul(r, pow10_128(s - in));
    const __int128 limit = pow10_128(38);
    if (over || r >= limit || r <= -limit) {
      sql_error(8115, "Arithmetic overflow error converting expression to data type numeric.");
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

}  // namespace mssqlcdc::tds
