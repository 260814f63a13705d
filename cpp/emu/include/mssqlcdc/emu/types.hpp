// types.hpp: SQL Server column types as the emulator knows them: the type
// grammar and canonical names, coercion of caller values into storage cells (with SQL Server's
// errors 2628, 8115, 515, 273), and the Arrow type each one reads as.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "mssqlcdc/emu/collation.hpp"
#include "mssqlcdc/emu/sqlite.hpp"

namespace mssqlcdc::emu {

// The SQL Server base types the emulator supports.
enum class Base : std::uint8_t {
  Bit,
  TinyInt,
  SmallInt,
  Int,
  BigInt,
  Decimal,
  Numeric,
  Money,
  SmallMoney,
  Real,
  Float,
  Date,
  Time,
  DateTime,
  SmallDateTime,
  DateTime2,
  DateTimeOffset,
  Char,
  VarChar,
  NChar,
  NVarChar,
  Text,
  NText,
  UniqueIdentifier,
  Binary,
  VarBinary,
  Image,
  RowVersion,
  Xml,  // kept as text; a large value (is_lob) without the (max) rule of operation 3
  // The types with no Spark form, held opaquely as bytes so the library's refusal of them can
  // be tested: the value is not parsed and reads back as the bytes written (docs/emulator.md).
  SqlVariant,
  HierarchyId,
  Geometry,
  Geography,
};

// Families within which alter_column may change a type.
enum class Family : std::uint8_t {
  Bit,
  Integer,
  Exact,
  Approximate,
  Temporal,
  Character,
  Binary,
  Guid,
  RowVersion,
  Xml,
  Opaque  // sql_variant, hierarchyid, geometry, geography: bytes, never changed by alter_column
};

// One column type: a base type with its length, precision and scale. A plain value.
struct SqlType {
  Base base = Base::Int;
  int length = 0;     // char/binary n; -1 for (max); 0 where not applicable
  int precision = 0;  // decimal p; fractional digits of time/datetime2/datetimeoffset
  int scale = 0;      // decimal s
  // A character type's collation (the database default unless declared); nullptr for others.
  const Collation* collation = nullptr;

  // Case-insensitive, spaces optional: name, name(n|max), name(p[,s]), then for a character
  // type an optional "COLLATE name". Throws EmuSchema (an unknown collation, or COLLATE on
  // another type, names the collation and lists the supported ones).
  static SqlType parse(std::string_view text);
  [[nodiscard]] std::string canonical() const;  // lower-case, e.g. decimal(18,2), nvarchar(max)
  // canonical() and, for a character type, " COLLATE " and the collation's name: the form the
  // catalog stores, which parse() reads back.
  [[nodiscard]] std::string declared() const;
  // The collation's name, or "" for a type without one.
  [[nodiscard]] std::string collation_name() const { return collation ? collation->name() : std::string(); }
  // The family alter_column changes within.
  [[nodiscard]] Family family() const;
  [[nodiscard]] bool is_lob() const;      // text, ntext, image and the (max) types
  [[nodiscard]] bool is_old_lob() const;  // text, ntext, image
  [[nodiscard]] bool is_max() const { return length == -1; }
  [[nodiscard]] bool is_opaque() const { return family() == Family::Opaque; }  // held as bytes
  // time, datetime2 and datetimeoffset store 100-ns ticks, SQL Server's seven digits (decision
  // 1326); date stores days and datetime/smalldatetime microseconds.
  [[nodiscard]] bool stores_ticks() const {
    return base == Base::Time || base == Base::DateTime2 || base == Base::DateTimeOffset;
  }
  [[nodiscard]] std::string arrow_format() const;  // Arrow C Data Interface format string
  [[nodiscard]] std::string arrow_name() const;    // pyarrow's name of that type
  bool operator==(const SqlType&) const = default;
};

// A caller's value, tagged by the Python type it came from; coercion checks it per column type.
struct Value {
  enum class Kind : std::uint8_t { Null, Bool, Int, Float, Text, Bytes, Decimal, Date, Time, DateTime, DateTimeTz };
  Kind kind = Kind::Null;
  std::int64_t i = 0;  // Bool, Int; Date days; Time/DateTime/DateTimeTz microseconds
  int sub_ticks = 0;   // Time/DateTime/DateTimeTz: 100-ns ticks beyond `i`, 0..9 (TDS values only)
  double f = 0;
  std::string s;  // Text, Bytes, Decimal as plain "[-]digits[.digits]"
};

// Converts `value` for a column of type `type` into its storage cell. `what` names the column
// for messages ("dbo.orders.amount"). Throws EmuConstraint with 2628/8115/273 or Type.
Cell coerce(const Value& value, const SqlType& type, std::string_view what);

// Converts a stored cell of type `from` into type `to` (alter_column); throws as coerce does.
Cell convert(const Cell& stored, const SqlType& from, const SqlType& to, std::string_view what);

// Decimal storage: 16 bytes big-endian two's complement with the sign bit flipped, so byte
// order is numeric order. These convert to and from the scaled 128-bit integer.
// decimal_decode expects exactly the 16 stored bytes.
std::string decimal_encode(__int128 scaled);
__int128 decimal_decode(std::string_view stored);
std::string decimal_text(std::string_view stored, int scale);  // "-12.50"

// uniqueidentifier: 36-character text <-> the 16 stored bytes in SQL Server's sort order.
std::string guid_to_text(std::string_view stored);

// A stored tick count (stores_ticks()) as whole microseconds, rounded down, and the ticks left.
std::int64_t ticks_to_micros(std::int64_t ticks);
int ticks_beyond_micros(std::int64_t ticks);
// A stored datetime2 tick count (or a datetimeoffset's UTC instant) as CONVERT(nvarchar, ...)
// writes it: "yyyy-mm-dd hh:mm:ss", then a point and `digits` (0..7) fractional digits unless
// `digits` is 0, e.g. "0001-01-01 00:00:00.0000001" for tick 1 of year 1 (decision 1345).
std::string ticks_text(std::int64_t ticks, int digits);

// Datetime rounding of microsecond values: to SQL Server's 1/300 s ticks (halves up), or up to
// the next tick at or above the value.
std::int64_t round_to_tick(std::int64_t micros);
std::int64_t ceil_to_tick(std::int64_t micros);

}  // namespace mssqlcdc::emu
