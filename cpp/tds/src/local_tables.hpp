// local_tables.hpp: a batch's own tables, internal to src/tds: table variables (`DECLARE @t
// TABLE (...)`, filled by INSERT ... VALUES, SELECT or EXEC) and the common table expressions
// of the statement running (`WITH x AS (...)`). A BatchCatalog serves them by name before the
// database's objects, so the query engine reads `FROM @t` and `FROM x` as any table. Each read
// sees the rows as they were when its statement began (a copy), so a result that streams after
// the batch ran shows what the SELECT saw.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "relations.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {

// A table of the batch: its columns and rows.
struct LocalTable {
  std::string name;  // as the batch wrote it: "@t" or a CTE's name
  std::vector<RelColumn> columns;
  std::vector<std::vector<Value>> rows;
};

// The catalog a batch's statements read: its table variables and CTEs, then the database's.
class BatchCatalog : public Catalog {
 public:
  explicit BatchCatalog(Catalog& database) : database_(database) {}

  // Forgets every table variable and CTE: a batch starts with none.
  void clear() {
    variables_.clear();
    ctes_.clear();
  }
  // Declares table variable `name` ("@t") with no rows.
  void declare(const std::string& name, std::vector<RelColumn> columns);
  // The table variable `name` to insert into; throws 1087 when the batch declared none.
  LocalTable& variable(const std::string& name);
  // Makes a CTE's rows readable by its name until forget_ctes().
  void put_cte(LocalTable table);
  // Ends the CTEs of the statement that ran.
  void forget_ctes() { ctes_.clear(); }

  // Catalog: a one-part name is a CTE or (with '@') a table variable, else the database's object.
  std::unique_ptr<Relation> relation(const ObjectName& name) override;
  // Catalog: the database's table-valued functions.
  std::unique_ptr<Relation> function(const ObjectName& name, const std::vector<TypedValue>& args) override {
    return database_.function(name, args);
  }
  // Catalog: the database's scalar functions.
  std::optional<TypedValue> scalar(const ObjectName& name, const std::vector<TypedValue>& args) override {
    return database_.scalar(name, args);
  }

 private:
  Catalog& database_;
  std::map<std::string, std::shared_ptr<LocalTable>> variables_;  // lower-case "@t"
  std::map<std::string, std::shared_ptr<LocalTable>> ctes_;       // lower-case names
};

// The columns of `DECLARE @t TABLE (definition)`: each `name type [NULL | NOT NULL]`; PRIMARY
// KEY, UNIQUE, DEFAULT and CHECK are read and not enforced, IDENTITY is refused (50000).
// `definition` holds the tokens between the parentheses. Throws 102 for a malformed one.
[[nodiscard]] std::vector<RelColumn> table_columns(const std::vector<SqlToken>& definition);

// Appends one row, converting `values` to the table's columns (or to `targets`, indexes into
// the columns, when an INSERT names them). Throws 213 when the count differs and 515 for NULL
// in a NOT NULL column, as SQL Server's INSERT does; conversions fail as CAST's.
void append_row(LocalTable& table, const std::vector<std::size_t>& targets, const std::vector<TypedValue>& values);

}  // namespace mssqlcdc::tds
