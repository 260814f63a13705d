// A batch's table variables and CTEs (local_tables.hpp), and the statements that fill and read
// them: DECLARE @t TABLE (https://learn.microsoft.com/en-us/sql/t-sql/data-types/table-transact-sql),
// INSERT ... VALUES | SELECT | EXEC into one
// (https://learn.microsoft.com/en-us/sql/t-sql/statements/insert-transact-sql), and WITH
// common_table_expression
// (https://learn.microsoft.com/en-us/sql/t-sql/queries/with-common-table-expression-transact-sql), whose CTEs are
// computed once, in order, before the statement that follows them (decision 1420).
#include "local_tables.hpp"

#include <optional>
#include <utility>

#include "batch.hpp"
#include "builtins.hpp"
#include "procedures.hpp"
#include "select.hpp"
#include "statements.hpp"

namespace mssqlcdc::tds {
namespace {

// A copy of a local table's rows, read as a relation.
class LocalRelation : public Relation {
 public:
  explicit LocalRelation(std::shared_ptr<const LocalTable> table) : table_(std::move(table)) {}
  [[nodiscard]] const std::vector<RelColumn>& columns() const override { return table_->columns; }
  [[nodiscard]] std::unique_ptr<RowStream> scan(const ScanHints&) override { return std::make_unique<Stream>(table_); }

 private:
  class Stream : public RowStream {
   public:
    explicit Stream(std::shared_ptr<const LocalTable> table) : table_(std::move(table)) {}
    bool next(std::vector<Value>& row) override {
      if (at_ >= table_->rows.size()) return false;
      row = table_->rows[at_++];
      return true;
    }

   private:
    std::shared_ptr<const LocalTable> table_;
    std::size_t at_ = 0;
  };
  std::shared_ptr<const LocalTable> table_;
};

[[noreturn]] void syntax_error_near(const std::vector<SqlToken>& t, std::size_t at) {
  sql_error(102, "Incorrect syntax near '" + (at < t.size() ? t[at].text : (t.empty() ? ";" : t.back().text)) + "'.");
}

// The index of the ')' that closes the '(' at `open`.
std::size_t closing(const std::vector<SqlToken>& t, std::size_t open) {
  int depth = 0;
  for (std::size_t k = open; k < t.size(); ++k) {
    if (t[k].is_symbol('(')) ++depth;
    if (t[k].is_symbol(')') && --depth == 0) return k;
  }
  syntax_error_near(t, t.size());
}

std::vector<SqlToken> slice(const std::vector<SqlToken>& t, std::size_t from, std::size_t to) {
  return {t.begin() + static_cast<std::ptrdiff_t>(from), t.begin() + static_cast<std::ptrdiff_t>(to)};
}

// The top-level comma-separated parts of `t`.
std::vector<std::vector<SqlToken>> split_commas(const std::vector<SqlToken>& t) {
  std::vector<std::vector<SqlToken>> out(1);
  int depth = 0;
  for (const SqlToken& x : t) {
    if (x.is_symbol('(')) ++depth;
    if (x.is_symbol(')')) --depth;
    if (depth == 0 && x.is_symbol(',')) {
      out.emplace_back();
      continue;
    }
    out.back().push_back(x);
  }
  return out;
}

// A result's rows, all of them.
std::vector<std::vector<Value>> all_rows(RowSource& rows) {
  std::vector<std::vector<Value>> out;
  std::vector<Value> row;
  while (rows.next(row)) out.push_back(row);
  return out;
}

}  // namespace

void BatchCatalog::declare(const std::string& name, std::vector<RelColumn> columns) {
  auto t = std::make_shared<LocalTable>();
  t->name = name;
  t->columns = std::move(columns);
  variables_[lower(name)] = std::move(t);
}

LocalTable& BatchCatalog::variable(const std::string& name) {
  const auto it = variables_.find(lower(name));
  if (it == variables_.end()) sql_error(1087, "Must declare the table variable \"" + name + "\".");
  return *it->second;
}

void BatchCatalog::put_cte(LocalTable table) {
  const std::string key = lower(table.name);
  ctes_[key] = std::make_shared<LocalTable>(std::move(table));
}

std::unique_ptr<Relation> BatchCatalog::relation(const ObjectName& name) {
  if (name.size() == 1) {
    const std::string key = lower(name[0]);
    if (key.starts_with("@")) {
      const auto it = variables_.find(key);
      if (it == variables_.end()) sql_error(1087, "Must declare the table variable \"" + name[0] + "\".");
      return std::make_unique<LocalRelation>(std::make_shared<const LocalTable>(*it->second));
    }
    if (const auto it = ctes_.find(key); it != ctes_.end()) return std::make_unique<LocalRelation>(it->second);
  }
  return database_.relation(name);
}

std::vector<RelColumn> table_columns(const std::vector<SqlToken>& definition) {
  std::vector<RelColumn> out;
  for (const auto& part : split_commas(definition)) {
    if (part.empty()) syntax_error_near(definition, definition.size());
    const SqlToken& head = part.front();
    if (head.kind == TokenKind::Word &&
        (head.is("PRIMARY") || head.is("UNIQUE") || head.is("CONSTRAINT") || head.is("INDEX") || head.is("CHECK"))) {
      continue;  // a table constraint: read, not enforced
    }
    if (!head.is_name() || part.size() < 2 || !part[1].is_name()) syntax_error_near(part, part.size() < 2 ? 0 : 1);
    RelColumn c;
    c.name = head.text;
    std::optional<int> first, second;
    std::size_t at = 2;
    if (at < part.size() && part[at].is_symbol('(')) {
      const std::size_t end = closing(part, at);
      const auto sizes = split_commas(slice(part, at + 1, end));
      const auto size_of = [&](const std::vector<SqlToken>& s) -> int {
        if (s.size() == 1 && s[0].is("max")) return -1;
        if (s.size() != 1 || s[0].kind != TokenKind::Number) syntax_error_near(part, at);
        return std::stoi(s[0].text);
      };
      first = size_of(sizes[0]);
      if (sizes.size() > 1) second = size_of(sizes[1]);
      at = end + 1;
    }
    c.type = type_named(part[1].text, first, second);
    for (; at < part.size(); ++at) {
      if (part[at].is("IDENTITY")) {
        sql_error(50000, "The emulator's table variables have no IDENTITY columns; column '" + c.name +
                             "' must be given its values by the INSERT.");
      }
      if (part[at].is("NOT") && at + 1 < part.size() && part[at + 1].is("NULL")) c.nullable = false;
      if (part[at].is("PRIMARY")) c.nullable = false;
    }
    out.push_back(std::move(c));
  }
  if (out.empty()) syntax_error_near(definition, 0);
  return out;
}

void append_row(LocalTable& table, const std::vector<std::size_t>& targets, const std::vector<TypedValue>& values) {
  const std::size_t expected = targets.empty() ? table.columns.size() : targets.size();
  if (values.size() != expected) {
    sql_error(213, "Column name or number of supplied values does not match table definition.");
  }
  std::vector<Value> row(table.columns.size());
  for (std::size_t k = 0; k < values.size(); ++k) {
    const std::size_t c = targets.empty() ? k : targets[k];
    row[c] = convert(table.columns[c].type, values[k], 0).value;
  }
  for (std::size_t c = 0; c < row.size(); ++c) {
    if (is_null(row[c]) && !table.columns[c].nullable) {
      sql_error(515, "Cannot insert the value NULL into column '" + table.columns[c].name + "', table '" + table.name +
                         "'; column does not allow nulls. INSERT fails.");
    }
  }
  table.rows.push_back(std::move(row));
}

WriteCount Database::insert_local(const std::vector<SqlToken>& t, const Params& params) {
  std::size_t at = 1;
  if (at < t.size() && t[at].is("INTO")) ++at;
  LocalTable& table = batch_catalog_->variable(t[at].text);
  ++at;
  std::vector<std::size_t> targets;
  if (at < t.size() && t[at].is_symbol('(') && !(at + 1 < t.size() && t[at + 1].is("SELECT"))) {
    const std::size_t end = closing(t, at);
    for (const auto& part : split_commas(slice(t, at + 1, end))) {
      if (part.size() != 1 || !part[0].is_name()) syntax_error_near(part, 0);
      std::size_t c = 0;
      while (c < table.columns.size() && lower(table.columns[c].name) != lower(part[0].text)) ++c;
      if (c == table.columns.size()) {
        sql_error(207, "Invalid column name '" + part[0].text + "'.");
      }
      targets.push_back(c);
    }
    at = end + 1;
  }
  if (at >= t.size()) syntax_error_near(t, at);
  // Every row is computed before any is added, so a failing row leaves the table as it was.
  std::vector<std::vector<TypedValue>> rows;
  if (t[at].is("VALUES")) {
    for (const auto& tuple : split_commas(slice(t, at + 1, t.size()))) {
      if (tuple.size() < 2 || !tuple.front().is_symbol('(') || closing(tuple, 0) != tuple.size() - 1) {
        syntax_error_near(tuple, 0);
      }
      std::vector<SqlToken> select{SqlToken{TokenKind::Word, "SELECT"}};
      select.insert(select.end(), tuple.begin() + 1, tuple.end() - 1);
      rows.push_back(*evaluate(select, params));
    }
  } else if (t[at].is("EXEC") || t[at].is("EXECUTE")) {
    for (const ResultSet& set : run_procedure(*storage_, parse_exec(t, at + 1, params))) {
      const auto add = [&](const std::vector<Value>& row) {
        std::vector<TypedValue> typed;
        for (std::size_t k = 0; k < row.size() && k < set.columns.size(); ++k) {
          typed.push_back(TypedValue{set.columns[k].type, row[k]});
        }
        rows.push_back(std::move(typed));
      };
      for (const auto& row : set.rows) add(row);
      std::vector<Value> row;
      while (set.more && set.more(row)) add(row);
    }
  } else if (t[at].is("SELECT") || t[at].is_symbol('(') || t[at].is("WITH")) {
    RowSource source = run_select(parse_select(slice(t, at, t.size())), *batch_catalog_, session_params(params));
    for (auto& row : all_rows(source)) {
      std::vector<TypedValue> typed;
      for (std::size_t k = 0; k < row.size(); ++k) typed.push_back(TypedValue{source.columns[k].type, row[k]});
      rows.push_back(std::move(typed));
    }
  } else {
    syntax_error_near(t, at);
  }
  LocalTable staged{table.name, table.columns, {}};
  for (const auto& row : rows) append_row(staged, targets, row);
  for (auto& row : staged.rows) table.rows.push_back(std::move(row));
  return WriteCount{rows.size(), 0xC3};
}

StatementResult Database::run_with_ctes(const std::vector<SqlToken>& t, const Params& params, bool first) {
  // WITH name [(columns)] AS (query) [, ...] statement
  struct Forget {
    BatchCatalog& c;
    ~Forget() { c.forget_ctes(); }
  } forget{*batch_catalog_};
  std::size_t at = 1;
  while (true) {
    if (at >= t.size() || !t[at].is_name()) syntax_error_near(t, at);
    LocalTable cte;
    cte.name = t[at++].text;
    std::vector<std::string> names;
    if (at < t.size() && t[at].is_symbol('(')) {
      const std::size_t end = closing(t, at);
      for (const auto& part : split_commas(slice(t, at + 1, end))) {
        if (part.size() != 1 || !part[0].is_name()) syntax_error_near(part, 0);
        names.push_back(part[0].text);
      }
      at = end + 1;
    }
    if (at + 1 >= t.size() || !t[at].is("AS") || !t[at + 1].is_symbol('(')) syntax_error_near(t, at);
    const std::size_t end = closing(t, at + 1);
    RowSource rows = run_select(parse_select(slice(t, at + 2, end)), *batch_catalog_, session_params(params));
    if (!names.empty() && names.size() < rows.columns.size()) {
      sql_error(8158, "'" + cte.name + "' has more columns than were specified in the column list.");
    }
    if (!names.empty() && names.size() > rows.columns.size()) {
      sql_error(8159, "'" + cte.name + "' has fewer columns than were specified in the column list.");
    }
    for (std::size_t k = 0; k < rows.columns.size(); ++k) {
      const std::string& column = names.empty() ? rows.columns[k].name : names[k];
      if (column.empty()) {
        sql_error(8155, "No column name was specified for column " + std::to_string(k + 1) + " of '" + cte.name + "'.");
      }
      cte.columns.push_back(RelColumn{column, rows.columns[k].type, true});
    }
    cte.rows = all_rows(rows);
    batch_catalog_->put_cte(std::move(cte));
    at = end + 1;
    if (at < t.size() && t[at].is_symbol(',')) {
      ++at;
      continue;
    }
    break;
  }
  if (at >= t.size()) syntax_error_near(t, at);
  return run_statement(slice(t, at, t.size()), params, first);
}

}  // namespace mssqlcdc::tds
