// stored.hpp: the emulator's stored cells as TDS values, and its column types as SQL Server's
// catalog describes them (sys.columns, TYPE_NAME, COL_LENGTH). Every emulator type maps: money
// and smallmoney to decimal(19,4)/(10,4), smalldatetime to datetime, text/ntext/image to the
// (max) types, rowversion to binary(8), uniqueidentifier to its 16 bytes in wire order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mssqlcdc/emu/sqlite.hpp"
#include "mssqlcdc/emu/types.hpp"
#include "mssqlcdc/lsn.hpp"
#include "mssqlcdc/tds/types.hpp"

namespace mssqlcdc::tds {

[[nodiscard]] ColumnType column_type(const emu::SqlType& type);
// NULL cells are monostate; throws Error(Corrupt) when a cell is not the type's storage form.
[[nodiscard]] Value cell_value(const emu::Cell& cell, const emu::SqlType& type);

// An LSN argument as converting to binary(10) reads it: shorter bytes padded with zeros on the
// right, longer ones cut; nullopt for NULL or a value that is not binary.
[[nodiscard]] std::optional<Lsn> lsn_of(const Value& value);
[[nodiscard]] Value lsn_value(const std::optional<Lsn>& lsn);  // NULL for nullopt

// A naive local time in microseconds since 1970 as a DateTime2, and back (truncating to 100 ns).
[[nodiscard]] DateTime2 micros_to_datetime2(std::int64_t micros);
[[nodiscard]] std::int64_t datetime2_to_micros(const DateTime2& value);
// The same in 100-ns ticks since 1970, the storage of datetime2, time and datetimeoffset.
[[nodiscard]] DateTime2 ticks_to_datetime2(std::int64_t ticks);
[[nodiscard]] std::int64_t datetime2_to_ticks(const DateTime2& value);

// One column as sys.columns shows it.
struct TypeFacts {
  std::uint8_t system_type_id = 0;
  std::int16_t max_length = 0;  // bytes; -1 for (max)
  std::uint8_t precision = 0;
  std::uint8_t scale = 0;
  bool collated = false;  // character types carry a collation (the column's, SqlType::collation)
};

[[nodiscard]] TypeFacts type_facts(const emu::SqlType& type);
// INFORMATION_SCHEMA's numeric and date facts of a type: NUMERIC_PRECISION, NUMERIC_PRECISION_RADIX,
// NUMERIC_SCALE and DATETIME_PRECISION, each nullopt where the view shows NULL.
struct NumericFacts {
  std::optional<std::int64_t> precision, radix, scale, datetime_precision;
};
[[nodiscard]] NumericFacts numeric_facts(const emu::SqlType& type);
// TYPE_NAME(system_type_id) for the system types; nullopt for an unknown id.
[[nodiscard]] std::optional<std::string> system_type_name(std::int64_t system_type_id);

}  // namespace mssqlcdc::tds
