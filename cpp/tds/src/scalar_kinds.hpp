// scalar_kinds.hpp: the families of SqlKind the scalar modules (builtins.hpp) branch on, SQL
// Server's data type precedence, and a type's name as SQL Server's messages spell it. Internal
// to src/tds.
#pragma once

#include <string>

#include "relations.hpp"

namespace mssqlcdc::tds::scalar {

[[nodiscard]] inline bool is_int(SqlKind k) {
  return k == SqlKind::TinyInt || k == SqlKind::SmallInt || k == SqlKind::Int || k == SqlKind::BigInt ||
         k == SqlKind::Bit;
}
[[nodiscard]] inline bool is_float(SqlKind k) { return k == SqlKind::Float || k == SqlKind::Real; }
[[nodiscard]] inline bool is_numeric(SqlKind k) { return is_int(k) || is_float(k) || k == SqlKind::Decimal; }
[[nodiscard]] inline bool is_text(SqlKind k) {
  return k == SqlKind::Char || k == SqlKind::VarChar || k == SqlKind::NChar || k == SqlKind::NVarChar;
}
[[nodiscard]] inline bool is_binary(SqlKind k) { return k == SqlKind::Binary || k == SqlKind::VarBinary; }
[[nodiscard]] inline bool is_temporal(SqlKind k) {
  return k == SqlKind::DateTime2 || k == SqlKind::Date || k == SqlKind::Time || k == SqlKind::DateTime ||
         k == SqlKind::DateTimeOffset;
}

// SQL Server's data type precedence, higher wins; the lower side converts to the higher.
[[nodiscard]] int precedence(SqlKind k);

// "int", "varbinary": the type without its length, as error messages name it.
[[nodiscard]] std::string kind_name(const ColumnType& t);
// As kind_name, but decimal is "numeric", as the conversion messages say.
[[nodiscard]] std::string numeric_name(const ColumnType& t);

// varchar(max) or nvarchar(max): what text arithmetic and string functions return.
[[nodiscard]] inline ColumnType max_text(SqlKind kind) { return ColumnType{kind, kMax, 0, 0, false}; }

}  // namespace mssqlcdc::tds::scalar
