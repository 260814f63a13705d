// columns.cpp: SQL Server column values as Arrow columns: a builder per type and the append
// of one stored SQLite value.
#include "scan.hpp"

#include <cctype>

#include "mssqlcdc/emu/log.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

void check_text_column(const std::string& name, const std::optional<SqlType>& type, std::string_view what) {
  if (!type) {
    throw Error(ErrorKind::InvalidArgument,
                std::string(what) + ": text_columns names " + name + ", which is not a column the read returns");
  }
  if (type->base != Base::DateTime2 && type->base != Base::DateTimeOffset) {
    throw Error(ErrorKind::InvalidArgument, std::string(what) + ": text_columns names " + name + ", a " +
                                                type->declared() +
                                                "; only datetime2 and datetimeoffset columns read as text");
  }
}

ColumnBuilder make_builder(const std::string& name, const SqlType& type, bool as_text) {
  using L = ColumnBuilder::Layout;
  if (as_text) return {name, "u", L::Variable, 0};
  const std::string f = type.arrow_format();
  switch (type.base) {
    case Base::Bit: return {name, f, L::Bool, 0};
    case Base::TinyInt:
    case Base::SmallInt: return {name, f, L::Fixed, 2};
    case Base::Int:
    case Base::Real:
    case Base::Date: return {name, f, L::Fixed, 4};
    case Base::BigInt:
    case Base::Float:
    case Base::Time:
    case Base::DateTime:
    case Base::SmallDateTime:
    case Base::DateTime2:
    case Base::DateTimeOffset: return {name, f, L::Fixed, 8};
    case Base::Decimal:
    case Base::Numeric:
    case Base::Money:
    case Base::SmallMoney: return {name, f, L::Fixed, 16};
    default: return {name, f, L::Variable, 0};
  }
}

void append_stored(ColumnBuilder& b, sqlite3_stmt* st, int column, const SqlType& type, bool as_text) {
  if (sqlite3_column_type(st, column) == SQLITE_NULL) {
    b.append_null();
    return;
  }
  if (as_text) {
    // All seven digits the ticks hold, as CONVERT(nvarchar, ...) writes them (decision 1345).
    std::string text = ticks_text(sqlite3_column_int64(st, column), type.precision);
    if (type.base == Base::DateTimeOffset) text += " +00:00";  // the file keeps the UTC instant
    b.append_bytes(text.data(), text.size());
    return;
  }
  switch (type.base) {
    case Base::Bit: b.append_bool(sqlite3_column_int64(st, column) != 0); return;
    case Base::TinyInt:
    case Base::SmallInt: {
      const auto v = static_cast<std::int16_t>(sqlite3_column_int64(st, column));
      b.append_fixed(&v);
      return;
    }
    case Base::Int:
    case Base::Date: {
      const auto v = static_cast<std::int32_t>(sqlite3_column_int64(st, column));
      b.append_fixed(&v);
      return;
    }
    case Base::Real: {
      const auto v = static_cast<float>(sqlite3_column_double(st, column));
      b.append_fixed(&v);
      return;
    }
    case Base::Float: {
      const double v = sqlite3_column_double(st, column);
      b.append_fixed(&v);
      return;
    }
    case Base::BigInt:
    case Base::DateTime:
    case Base::SmallDateTime: {
      const std::int64_t v = sqlite3_column_int64(st, column);
      b.append_fixed(&v);
      return;
    }
    case Base::Time: {
      // Stored in 100-ns ticks; Arrow's time64 in nanoseconds keeps the seventh digit, which
      // time's text form shows (decision 1347).
      const std::int64_t v = sqlite3_column_int64(st, column) * 100;
      b.append_fixed(&v);
      return;
    }
    case Base::DateTime2:
    case Base::DateTimeOffset: {
      // Stored in 100-ns ticks; Arrow's unit is the microsecond, so the seventh digit is cut.
      const std::int64_t v = ticks_to_micros(sqlite3_column_int64(st, column));
      b.append_fixed(&v);
      return;
    }
    case Base::Decimal:
    case Base::Numeric:
    case Base::Money:
    case Base::SmallMoney: {
      const auto* p = static_cast<const char*>(sqlite3_column_blob(st, column));
      const __int128 v =
          decimal_decode(std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(st, column))));
      b.append_fixed(&v);  // little-endian two's complement, as Arrow's decimal128
      return;
    }
    case Base::UniqueIdentifier: {
      const auto* p = static_cast<const char*>(sqlite3_column_blob(st, column));
      const std::string text =
          guid_to_text(std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(st, column))));
      b.append_bytes(text.data(), text.size());
      return;
    }
    case Base::Binary:
    case Base::VarBinary:
    case Base::Image:
    case Base::RowVersion:
    case Base::SqlVariant:
    case Base::HierarchyId:
    case Base::Geometry:
    case Base::Geography:
      b.append_bytes(sqlite3_column_blob(st, column), static_cast<std::size_t>(sqlite3_column_bytes(st, column)));
      return;
    default:
      b.append_bytes(sqlite3_column_text(st, column), static_cast<std::size_t>(sqlite3_column_bytes(st, column)));
      return;
  }
}

}  // namespace mssqlcdc::emu
