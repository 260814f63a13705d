// catalog_values.cpp: stored cells as TDS values, and the type facts of sys.columns.
#include <algorithm>
#include <array>

#include "mssqlcdc/error.hpp"
#include "stored.hpp"

namespace mssqlcdc::tds {
namespace {

using emu::Base;

constexpr std::int32_t kDaysTo1970 = 719162;  // from 0001-01-01, the day datetime2 counts from
constexpr std::int64_t kMicrosPerDay = 86'400'000'000;

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

std::uint16_t length_of(const emu::SqlType& t) { return t.is_max() ? kMax : static_cast<std::uint16_t>(t.length); }

// Storage bytes of a fractional-seconds type: 3, 4 or 5 for time(0-2), (3-4), (5-7).
std::int16_t time_bytes(int p) { return static_cast<std::int16_t>(p <= 2 ? 3 : p <= 4 ? 4 : 5); }

// The fractional types' precision: the digits of "hh:mm:ss" plus the point and fraction.
std::uint8_t with_fraction(int base, int p) { return static_cast<std::uint8_t>(base + (p > 0 ? p + 1 : 0)); }

std::int16_t decimal_bytes(int p) { return static_cast<std::int16_t>(p <= 9 ? 5 : p <= 19 ? 9 : p <= 28 ? 13 : 17); }

}  // namespace

std::optional<Lsn> lsn_of(const Value& value) {
  const auto* b = std::get_if<Bytes>(&value);
  if (b == nullptr) return std::nullopt;
  std::array<std::uint8_t, Lsn::kBytes> out{};
  std::copy_n(b->begin(), std::min(b->size(), out.size()), out.begin());
  return Lsn::from_bytes(out);
}

Value lsn_value(const std::optional<Lsn>& lsn) {
  if (!lsn) return std::monostate{};
  return Bytes(lsn->bytes().begin(), lsn->bytes().end());
}

DateTime2 micros_to_datetime2(std::int64_t micros) {
  const std::int64_t days = floor_div(micros, kMicrosPerDay);
  return DateTime2{static_cast<std::int32_t>(days + kDaysTo1970), (micros - days * kMicrosPerDay) * 10};
}

std::int64_t datetime2_to_micros(const DateTime2& value) {
  return (static_cast<std::int64_t>(value.days) - kDaysTo1970) * kMicrosPerDay + value.ticks / 10;
}

DateTime2 ticks_to_datetime2(std::int64_t ticks) {
  const std::int64_t days = floor_div(ticks, 10 * kMicrosPerDay);
  return DateTime2{static_cast<std::int32_t>(days + kDaysTo1970), ticks - days * 10 * kMicrosPerDay};
}

std::int64_t datetime2_to_ticks(const DateTime2& value) {
  return (static_cast<std::int64_t>(value.days) - kDaysTo1970) * 10 * kMicrosPerDay + value.ticks;
}

namespace {

ColumnType base_column_type(const emu::SqlType& t) {
  const auto p = static_cast<std::uint8_t>(t.precision);
  switch (t.base) {
    case Base::Bit: return {SqlKind::Bit};
    case Base::TinyInt: return {SqlKind::TinyInt};
    case Base::SmallInt: return {SqlKind::SmallInt};
    case Base::Int: return {SqlKind::Int};
    case Base::BigInt: return {SqlKind::BigInt};
    case Base::Decimal:
    case Base::Numeric:
    case Base::Money:
    case Base::SmallMoney: return {SqlKind::Decimal, 0, p, static_cast<std::uint8_t>(t.scale)};
    case Base::Real: return {SqlKind::Real};
    case Base::Float: return {SqlKind::Float};
    case Base::Date: return {SqlKind::Date};
    case Base::Time: return {SqlKind::Time, 0, 0, p};
    case Base::DateTime:
    case Base::SmallDateTime: return {SqlKind::DateTime};
    case Base::DateTime2: return {SqlKind::DateTime2, 0, 0, p};
    case Base::DateTimeOffset: return {SqlKind::DateTimeOffset, 0, 0, p};
    case Base::Char: return {SqlKind::Char, length_of(t)};
    case Base::VarChar: return {SqlKind::VarChar, length_of(t)};
    case Base::NChar: return {SqlKind::NChar, length_of(t)};
    case Base::NVarChar: return {SqlKind::NVarChar, length_of(t)};
    case Base::Text: return {SqlKind::VarChar, kMax};
    case Base::NText: return {SqlKind::NVarChar, kMax};
    case Base::UniqueIdentifier: return {SqlKind::UniqueIdentifier, 16};
    case Base::Binary: return {SqlKind::Binary, length_of(t)};
    case Base::VarBinary: return {SqlKind::VarBinary, length_of(t)};
    case Base::Image: return {SqlKind::VarBinary, kMax};
    case Base::RowVersion: return {SqlKind::Binary, 8};
    case Base::Xml: return {SqlKind::NVarChar, kMax};  // sent as nvarchar(max), not the XML token
    case Base::SqlVariant:
    case Base::HierarchyId:
    case Base::Geometry:
    case Base::Geography: return {SqlKind::VarBinary, kMax};  // the stored bytes, not the type's own token
  }
  return {};
}

}  // namespace

ColumnType column_type(const emu::SqlType& t) {
  ColumnType out = base_column_type(t);
  out.collation = t.collation;
  return out;
}

Value cell_value(const emu::Cell& c, const emu::SqlType& t) {
  using T = emu::Cell::Type;
  if (c.is_null()) return std::monostate{};
  const bool integer = c.type == T::Int;
  const bool bytes = c.type == T::Blob || c.type == T::Text;
  const auto bad = [&]() -> Value {
    throw Error(ErrorKind::Corrupt, "a stored " + t.canonical() + " value has the wrong storage form");
  };
  switch (t.base) {
    case Base::Bit: return integer ? Value{c.i != 0} : bad();
    case Base::TinyInt:
    case Base::SmallInt:
    case Base::Int:
    case Base::BigInt: return integer ? Value{c.i} : bad();
    case Base::Decimal:
    case Base::Numeric:
    case Base::Money:
    case Base::SmallMoney: return bytes ? Value{Decimal{emu::decimal_decode(c.s)}} : bad();
    case Base::Real:
    case Base::Float:
      if (c.type == T::Real) return c.d;
      return integer ? Value{static_cast<double>(c.i)} : bad();  // SQLite may keep a whole double as an integer
    case Base::Date: return integer ? Value{DateTime2{static_cast<std::int32_t>(c.i + kDaysTo1970), 0}} : bad();
    case Base::Time: return integer ? Value{DateTime2{0, c.i}} : bad();  // 100-ns ticks since midnight
    case Base::DateTime:
    case Base::SmallDateTime: return integer ? Value{micros_to_datetime2(c.i)} : bad();
    case Base::DateTime2: return integer ? Value{ticks_to_datetime2(c.i)} : bad();
    case Base::DateTimeOffset:  // stored as the UTC instant; the written offset is not kept
      return integer ? Value{DateTimeOffset{ticks_to_datetime2(c.i), 0}} : bad();
    case Base::Char:
    case Base::VarChar:
    case Base::NChar:
    case Base::NVarChar:
    case Base::Text:
    case Base::NText:
    case Base::Xml: return bytes ? Value{c.s} : bad();
    case Base::UniqueIdentifier: {
      if (!bytes || c.s.size() != 16) return bad();
      // Stored in SQL Server's sort order (emu/values.cpp); the wire wants the binary form.
      static constexpr std::array<int, 16> kOrder{10, 11, 12, 13, 14, 15, 8, 9, 6, 7, 4, 5, 0, 1, 2, 3};
      Bytes wire(16);
      for (std::size_t i = 0; i < 16; ++i)
        wire[static_cast<std::size_t>(kOrder[i])] = static_cast<std::uint8_t>(c.s[i]);
      return wire;
    }
    case Base::Binary:
    case Base::VarBinary:
    case Base::Image:
    case Base::RowVersion:
    case Base::SqlVariant:
    case Base::HierarchyId:
    case Base::Geometry:
    case Base::Geography: return bytes ? Value{Bytes(c.s.begin(), c.s.end())} : bad();
  }
  return bad();
}

TypeFacts type_facts(const emu::SqlType& t) {
  const int p = t.precision;
  const auto n = static_cast<std::int16_t>(t.is_max() ? -1 : t.length);
  const auto n2 = static_cast<std::int16_t>(t.is_max() ? -1 : 2 * t.length);
  const auto s = static_cast<std::uint8_t>(t.scale);
  const auto fp = static_cast<std::uint8_t>(p);
  switch (t.base) {
    case Base::Bit: return {104, 1, 1, 0};
    case Base::TinyInt: return {48, 1, 3, 0};
    case Base::SmallInt: return {52, 2, 5, 0};
    case Base::Int: return {56, 4, 10, 0};
    case Base::BigInt: return {127, 8, 19, 0};
    case Base::Decimal: return {106, decimal_bytes(p), fp, s};
    case Base::Numeric: return {108, decimal_bytes(p), fp, s};
    case Base::Money: return {60, 8, 19, 4};
    case Base::SmallMoney: return {122, 4, 10, 4};
    case Base::Real: return {59, 4, 24, 0};
    case Base::Float: return {62, 8, 53, 0};
    case Base::Date: return {40, 3, 10, 0};
    case Base::Time: return {41, time_bytes(p), with_fraction(8, p), fp};
    case Base::DateTime: return {61, 8, 23, 3};
    case Base::SmallDateTime: return {58, 4, 16, 0};
    case Base::DateTime2: return {42, static_cast<std::int16_t>(time_bytes(p) + 3), with_fraction(19, p), fp};
    case Base::DateTimeOffset: return {43, static_cast<std::int16_t>(time_bytes(p) + 5), with_fraction(26, p), fp};
    case Base::Char: return {175, n, 0, 0, true};
    case Base::VarChar: return {167, n, 0, 0, true};
    case Base::NChar: return {239, n2, 0, 0, true};
    case Base::NVarChar: return {231, n2, 0, 0, true};
    case Base::Text: return {35, 16, 0, 0, true};
    case Base::NText: return {99, 16, 0, 0, true};
    case Base::UniqueIdentifier: return {36, 16, 0, 0};
    case Base::Binary: return {173, n, 0, 0};
    case Base::VarBinary: return {165, n, 0, 0};
    case Base::Image: return {34, 16, 0, 0};
    case Base::RowVersion: return {189, 8, 0, 0};
    case Base::Xml: return {241, -1, 0, 0};
    case Base::SqlVariant: return {98, 8016, 0, 0};
    // The CLR types share system_type_id 240 (user_type_id 128, 129, 130 in SQL Server).
    case Base::HierarchyId: return {240, 892, 0, 0};
    case Base::Geometry:
    case Base::Geography: return {240, -1, 0, 0};
  }
  return {};
}

std::optional<std::string> system_type_name(std::int64_t id) {
  switch (id) {
    case 34: return "image";
    case 35: return "text";
    case 36: return "uniqueidentifier";
    case 40: return "date";
    case 41: return "time";
    case 42: return "datetime2";
    case 43: return "datetimeoffset";
    case 48: return "tinyint";
    case 52: return "smallint";
    case 56: return "int";
    case 58: return "smalldatetime";
    case 59: return "real";
    case 60: return "money";
    case 61: return "datetime";
    case 62: return "float";
    case 98: return "sql_variant";
    case 99: return "ntext";
    case 104: return "bit";
    case 106: return "decimal";
    case 108: return "numeric";
    case 122: return "smallmoney";
    case 127: return "bigint";
    case 165: return "varbinary";
    case 167: return "varchar";
    case 173: return "binary";
    case 175: return "char";
    case 189: return "timestamp";
    case 231: return "nvarchar";
    case 239: return "nchar";
    case 241: return "xml";
    case 256: return "sysname";  // a user type id, which TYPE_NAME also names
    default: return std::nullopt;
  }
}

NumericFacts numeric_facts(const emu::SqlType& t) {
  using B = emu::Base;
  NumericFacts f;
  const auto exact = [&](std::int64_t p, std::int64_t s) {
    f.precision = p;
    f.radix = 10;
    f.scale = s;
  };
  switch (t.base) {
    case B::TinyInt: exact(3, 0); break;
    case B::SmallInt: exact(5, 0); break;
    case B::Int: exact(10, 0); break;
    case B::BigInt: exact(19, 0); break;
    case B::Decimal:
    case B::Numeric: exact(t.precision, t.scale); break;
    case B::Money: exact(19, 4); break;
    case B::SmallMoney: exact(10, 4); break;
    case B::Real:
      f.precision = 24;
      f.radix = 2;
      break;
    case B::Float:
      f.precision = 53;
      f.radix = 2;
      break;
    case B::Date:
    case B::SmallDateTime: f.datetime_precision = 0; break;
    case B::DateTime: f.datetime_precision = 3; break;
    case B::Time:
    case B::DateTime2:
    case B::DateTimeOffset: f.datetime_precision = t.precision; break;
    default: break;
  }
  return f;
}

}  // namespace mssqlcdc::tds
