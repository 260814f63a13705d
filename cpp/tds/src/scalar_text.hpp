// scalar_text.hpp: the text forms the scalar modules share: hex for binary (CONVERT styles 1
// and 2), the uniqueidentifier's text in its wire byte order, and the trimming SQL Server applies
// before converting text. Internal to src/tds; text_of() itself is public (builtins.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "relations.hpp"

namespace mssqlcdc::tds::scalar {

[[nodiscard]] std::string trim(std::string_view s);  // spaces, tabs and line ends, both sides

[[nodiscard]] std::string hex(const Bytes& b, bool prefix);    // upper-case; "0x" when `prefix`
[[nodiscard]] std::optional<Bytes> unhex(std::string_view s);  // nullopt unless pairs of hex digits

// 8-4-4-4-12 upper-case hex; the first three groups are little-endian on the wire.
[[nodiscard]] std::string guid_text(const Bytes& b);

// CONCAT, SUBSTRING, NCHAR, HASHBYTES (builtins_text.cpp) or FORMAT by lower-case name; nullopt for another name.
[[nodiscard]] std::optional<TypedValue> text_builtin(std::string_view fn, const std::vector<TypedValue>& args);

// FORMAT(value, format[, culture]) for the en-US culture (builtins_format.cpp); NULL for a format
// string .NET would reject, as SQL Server answers.
[[nodiscard]] std::optional<TypedValue> format_builtin(const std::vector<TypedValue>& args);

}  // namespace mssqlcdc::tds::scalar
