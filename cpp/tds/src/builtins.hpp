// builtins.hpp: SQL Server's scalar semantics over typed values, without any table: comparison
// (binary bytewise, text case-insensitive as the default collation), arithmetic with SQL
// Server's result types, CAST/CONVERT with styles, text as SQL Server prints each type, and the
// pure built-in functions (ISNULL, COALESCE, DATEADD, DATEPART, SWITCHOFFSET, the clocks).
// Every failure is SQL Server's own error: 245/8114 conversion, 8115 overflow, 8134 divide by
// zero, 174 wrong arity. Callers handle NULL before comparing; the others propagate it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "relations.hpp"

namespace mssqlcdc::tds {

[[noreturn]] void sql_error(int number, const std::string& text);

// The parts of a name joined by '.', as written: cdc.lsn_time_mapping.
[[nodiscard]] std::string joined(const ObjectName& name);

// A type named in CAST/CONVERT: "binary", length 10; "decimal", precision 38, scale 0.
// Throws 243 for a name that is no type.
[[nodiscard]] ColumnType type_named(std::string_view name, std::optional<int> first, std::optional<int> second);

// <0, 0, >0; both non-NULL. Mixed kinds convert the string side to the other's type (245).
[[nodiscard]] int compare(const TypedValue& a, const TypedValue& b);
// The collation comparing text of types a and b follows: an explicit COLLATE, else a column's,
// else the database default (SQL Server's collation precedence, without its conflict error 468).
[[nodiscard]] const emu::Collation& comparison_collation(const ColumnType& a, const ColumnType& b);
// A key equal for values compare() calls equal (hash joins, GROUP BY).
[[nodiscard]] std::string group_key(const TypedValue& v);

// op is one of + - * / %; a NULL operand gives a NULL of the result type.
[[nodiscard]] TypedValue arithmetic(char op, const TypedValue& a, const TypedValue& b);
[[nodiscard]] TypedValue negate(const TypedValue& v);

[[nodiscard]] TypedValue convert(const ColumnType& target, const TypedValue& v, int style);
// The text CONVERT(nvarchar(max), v, style) gives.
[[nodiscard]] std::string text_of(const TypedValue& v, int style);

// The LIKE pattern match (%, _, [set]); case-insensitive unless the collation is case-sensitive.
[[nodiscard]] bool like(std::string_view text, std::string_view pattern, bool case_sensitive = false);

// A built-in scalar function by lower-case name; nullopt when there is none.
[[nodiscard]] std::optional<TypedValue> builtin(std::string_view name, const std::vector<TypedValue>& args);

}  // namespace mssqlcdc::tds
