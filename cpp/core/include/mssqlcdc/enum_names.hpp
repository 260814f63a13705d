// enum_names.hpp: one table of names per enum that crosses the binding as text. The binding
// converts both ways through the same table and hands the tables to Python, where a test
// checks them against the Literal types, so the C++ names and the Python ones cannot drift.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace mssqlcdc {

// One row of a name table: an enumerator and its text.
template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

// A table lists every enumerator once, in declaration order (enumerator i at index i), so a
// lookup by value is an index and an enumerator missing from the middle fails to compile.
template <typename E, std::size_t N>
constexpr bool in_declaration_order(const std::array<EnumName<E>, N>& table) {
  for (std::size_t i = 0; i < N; ++i) {
    if (static_cast<std::size_t>(table[i].value) != i) return false;
  }
  return true;
}

// The text of `value` in `table`; empty for a value outside the table. Requires a table for
// which in_declaration_order() holds.
template <typename E, std::size_t N>
constexpr std::string_view name_of(const std::array<EnumName<E>, N>& table, E value) {
  const auto i = static_cast<std::size_t>(value);
  return i < N ? table[i].name : std::string_view();
}

// The enumerator whose text is exactly `name` (case matters), or std::nullopt.
template <typename E, std::size_t N>
constexpr std::optional<E> value_of(const std::array<EnumName<E>, N>& table, std::string_view name) {
  for (const EnumName<E>& entry : table) {
    if (entry.name == name) return entry.value;
  }
  return std::nullopt;
}

}  // namespace mssqlcdc
