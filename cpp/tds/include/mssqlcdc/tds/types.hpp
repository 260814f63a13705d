// types.hpp: SQL Server column types on the wire (MS-TDS 2.2.5.4, TYPE_INFO) and their values
// (MS-TDS 2.2.5.5). The server writes result columns with the nullable "N" forms SQL Server itself
// sends (INTN, BITN, DECIMALN, DATETIME2N) and the 2-byte-length forms of character and binary
// types, (max) ones as PLP. Clients' RPC parameters are read with the same table, plus the
// fixed-length forms drivers send for parameters.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>

#include "mssqlcdc/emu/collation.hpp"
#include "mssqlcdc/tds/wire.hpp"

namespace mssqlcdc::tds {

// The column types the server sends and the parameter types it reads.
enum class SqlKind : std::uint8_t {
  TinyInt,
  SmallInt,
  Int,
  BigInt,
  Bit,
  Decimal,
  Float,
  Binary,
  VarBinary,
  Char,
  VarChar,
  NChar,
  NVarChar,
  DateTime2,
  Real,              // FLTN(4); values are doubles
  Date,              // DateTime2 value, ticks 0
  Time,              // DateTime2 value, days 0; `scale` fractional digits
  DateTime,          // DateTime2 value, rounded to 1/300 s on the wire
  DateTimeOffset,    // DateTimeOffset value; `scale` fractional digits
  UniqueIdentifier,  // 16 Bytes in SQL Server's wire order
};

inline constexpr std::uint16_t kMax = 0xFFFF;  // `length` of a (max) type

// SQL_Latin1_General_CP1_CI_AS: LCID 0x0409 with the case- and kana-insensitive flags, sort 52.
inline constexpr std::array<std::uint8_t, 5> kDefaultCollation{0x09, 0x04, 0xD0, 0x00, 0x34};

// One column's or parameter's type as TYPE_INFO carries it.
struct ColumnType {
  SqlKind kind = SqlKind::Int;
  std::uint16_t length = 0;    // binary/char: bytes; nchar/nvarchar: characters; kMax for (max)
  std::uint8_t precision = 0;  // decimal's precision, 1..38
  std::uint8_t scale = 0;      // decimal's scale, datetime2's fractional digits
  bool fixed = false;          // a client's fixed-length form (INT4, BIT, FLT8...): values carry no length
  // A character column's collation, which its comparisons follow; nullptr (the database
  // default) for literals, parameters and computed text. On the wire every character type
  // carries kDefaultCollation.
  const emu::Collation* collation = nullptr;
  bool explicit_collation = false;  // from a COLLATE clause, which wins over a column's
};

// The unscaled integer of a decimal: 12.34 in decimal(p, 2) is 1234.
struct Decimal {
  __int128 unscaled = 0;
  auto operator<=>(const Decimal&) const = default;
};

// A datetime2 as days since 0001-01-01 and 100-nanosecond ticks since midnight; the column's
// scale rounds the ticks down to its precision on the wire.
struct DateTime2 {
  std::int32_t days = 0;
  std::int64_t ticks = 0;
  auto operator<=>(const DateTime2&) const = default;
};

// A datetimeoffset: the instant in UTC as a DateTime2, and the offset the value was written in.
struct DateTimeOffset {
  DateTime2 utc;
  std::int16_t offset_minutes = 0;
  auto operator<=>(const DateTimeOffset&) const = default;
};

// NULL is monostate. Text is UTF-8; binary is bytes.
using Value =
    std::variant<std::monostate, std::int64_t, bool, Decimal, double, Bytes, std::string, DateTime2, DateTimeOffset>;

// Whether `v` is NULL.
[[nodiscard]] inline bool is_null(const Value& v) { return std::holds_alternative<std::monostate>(v); }

// A result column: its name, type and whether it may hold NULL.
struct Column {
  std::string name;
  ColumnType type;
  bool nullable = true;
};

// The type as T-SQL writes it, for messages and catalog views.
[[nodiscard]] std::string type_name(const ColumnType& type);  // "decimal(38,0)", "nvarchar(max)"

// Writes the TYPE_INFO of a result column of `type` (the nullable forms, with the default
// collation for character types).
void write_type_info(Writer& w, const ColumnType& type);
// Writes `value` as a row value of `type`; NULL as the type's NULL. Throws Error(InvalidArgument)
// when the value's alternative does not fit the type, or a number overflows it.
void write_value(Writer& w, const ColumnType& type, const Value& value);

// The reverse, for RPC parameters: TYPE_INFO, then one value of that type. Both throw
// Error(InvalidArgument) for a truncated message, a type this server does not read, or a value
// of a length its type does not allow.
[[nodiscard]] ColumnType read_type_info(Reader& r);
[[nodiscard]] Value read_value(Reader& r, const ColumnType& type);

}  // namespace mssqlcdc::tds
