// computed.hpp: computed columns (`total AS (price * qty)` in SQL Server's CREATE TABLE). The
// emulator takes the column's type with the expression, "decimal(18,2) AS (price * qty)",
// keeps the definition in emu_meta and the value in the source table; change rows hold NULL
// for it, as SQL Server's capture writes them (decision 1221).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mssqlcdc/emu/sqlite.hpp"
#include "mssqlcdc/emu/types.hpp"

namespace mssqlcdc::emu {

struct ExprNode;

// A parsed expression: column references, number and string literals, unary minus, + - * /
// and parentheses; + joins two strings.
// Immutable once parsed, so it may be shared between threads.
class Expression {
 public:
  // A column an expression may use: its name, id and type, and whether it is computed itself.
  struct Operand {
    std::string name;
    std::int64_t column_id = 0;
    SqlType type;
    bool computed = false;
  };
  // Parses `text` and checks it against the columns it may use and the column's type `result`;
  // throws EmuSchema (207 for an unknown column, 1759 for a computed one, a malformed
  // expression, a value `result` cannot hold) naming `what`.
  static Expression parse(const std::string& text, const std::vector<Operand>& columns, const SqlType& result,
                          const std::string& what);

  // The value for a row whose cells `cell_of(column_id)` gives, coerced into the result type
  // (8115 when it does not fit, 8134 on a division by zero).
  template <typename CellOf>
  Cell evaluate(CellOf cell_of) const {
    std::vector<Cell> cells;
    for (const auto& id : columns_) cells.push_back(cell_of(id));
    return evaluate_cells(cells);
  }
  // The expression as given to parse(), as stored and shown.
  [[nodiscard]] const std::string& text() const { return text_; }
  [[nodiscard]] const std::vector<std::int64_t>& columns() const { return columns_; }  // referenced ids

 private:
  Cell evaluate_cells(const std::vector<Cell>& cells) const;

  std::string text_;
  std::string what_;
  SqlType result_;
  std::vector<std::int64_t> columns_;
  std::vector<SqlType> column_types_;
  std::shared_ptr<const ExprNode> root_;
};

// Splits "decimal(18,2) AS (price * qty)" into the type text (kept in `type_text`) and the
// expression text; nullopt when there is no AS clause.
std::optional<std::string> split_computed(std::string& type_text);

// Stores a computed column's expression text in emu_meta, in the caller's write transaction.
void store_computed(Db& db, std::int64_t table_id, std::int64_t column_id, const std::string& expression);
// (column id, expression text) of every computed column of the table.
std::vector<std::pair<std::int64_t, std::string>> load_computed(Db& db, std::int64_t table_id);

}  // namespace mssqlcdc::emu
