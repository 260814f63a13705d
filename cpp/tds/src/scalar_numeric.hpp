// scalar_numeric.hpp: exact reads of numeric values (the integer kinds, bit, decimal as an
// unscaled 128-bit integer, float) and numbers read from text, with SQL Server's rounding and
// its errors (8114 not a number, 8115 overflow). Internal to src/tds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "relations.hpp"

namespace mssqlcdc::tds::scalar {

[[nodiscard]] std::int64_t pow10(int n);
[[nodiscard]] __int128 pow10_128(int n);

// The unscaled integer of a numeric value at `scale`, rounded half away from zero.
[[nodiscard]] __int128 unscaled_at(const TypedValue& v, int scale);
[[nodiscard]] double as_double(const TypedValue& v);
[[nodiscard]] std::int64_t as_int(const TypedValue& v);  // a decimal truncates, as SQL Server's

// Text to a number; nullopt when the text is no number or out of range.
[[nodiscard]] std::optional<__int128> parse_decimal(std::string_view s, int scale);
[[nodiscard]] std::optional<std::int64_t> parse_int(std::string_view s);  // '' is 0

// Throws 8115 when `v` does not fit the integer type `to`; `from` names the source type.
void check_int_range(std::int64_t v, const ColumnType& to, const std::string& from);

// The integer's bytes, big-endian, as CONVERT(binary(n), int) gives them; and back.
[[nodiscard]] Bytes int_bytes(std::int64_t v, std::size_t width);
[[nodiscard]] std::size_t int_width(SqlKind k);

}  // namespace mssqlcdc::tds::scalar
