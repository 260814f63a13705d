// scalar_assign.hpp: SQL Server's implicit conversion of a value into a column's type, as
// INSERT and UPDATE apply it before a row reaches the emulator (decision 1451). Internal to
// src/tds; the conversions themselves are CAST's (scalar_convert.cpp).
#pragma once

#include "relations.hpp"

namespace mssqlcdc::tds {

// `v` converted to `to` by SQL Server's implicit conversion: the pairs the Data type
// conversion chart allows implicitly convert as CAST does (245, 248, 241, 8114, 8115, 8169
// when the value is no value of the type); an explicit-only pair is error 257, a pair SQL
// Server never converts error 206. NULL stays NULL. Character and binary targets are not cut
// here: the caller reports a value longer than the column (2628).
[[nodiscard]] TypedValue assigned(const ColumnType& to, const TypedValue& v);

}  // namespace mssqlcdc::tds
