// select_engine.hpp: the inside of run_select() (select.hpp), internal to src/tds. A query runs
// over a flat row: the columns of every FROM source side by side (a Scope). Expressions compile
// once into closures over that row (a Binder); rows flow through Producers. The modules, in
// pipeline order:
//   select_bind.cpp   names to slots (207, 209, 4104, 8120) and expressions to closures
//   select_from.cpp   FROM and JOIN: opening sources, range hints from WHERE, the join
//   select_group.cpp  GROUP BY with its aggregates, and the windows (ROW_NUMBER, NTILE)
//   select_order.cpp  ORDER BY (or the first relation's own order), OFFSET/FETCH/TOP
//   select_eval.cpp   one SELECT core from end to end, UNION ALL, run_select itself
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "select.hpp"

namespace mssqlcdc::tds::engine {

using Row = std::vector<Value>;
using Fn = std::function<TypedValue(const Row&)>;
using Producer = std::function<bool(Row&)>;  // fills the row and returns true, or false at the end

inline const ColumnType kBit{SqlKind::Bit};
inline const ColumnType kBigInt{SqlKind::BigInt};
inline const ColumnType kInt{SqlKind::Int};

// A condition's value as bit; nullopt is SQL's unknown, a NULL bit.
[[nodiscard]] TypedValue truth(std::optional<bool> b);
// SQL's three-valued logic: NULL is unknown. A value that is no condition is error 4145.
[[nodiscard]] std::optional<bool> truth_of(const TypedValue& v);

// COUNT, COUNT_BIG, MIN, MAX, SUM, AVG without OVER.
[[nodiscard]] bool is_aggregate_call(const Expr& e);
// Aggregates and windows an expression holds, outermost first.
void collect(const Expr& e, std::vector<const Expr*>& aggregates, std::vector<const Expr*>& windows);
// Whether the expression reads a row; one that does not is a runtime constant.
[[nodiscard]] bool has_column(const Expr& e);

struct Slot {
  std::string name;
  ColumnType type;
};

// The columns of the FROM sources side by side; each source a range of slots.
struct Scope {
  struct Range {
    std::string alias;  // lower-case
    std::size_t first = 0;
    std::size_t count = 0;
  };
  std::vector<Slot> slots;
  std::vector<Range> sources;

  void add(const std::string& alias, const std::vector<Slot>& columns);
  // The slot a column name (col or alias.col) reads; throws 207, 209 or 4104.
  [[nodiscard]] std::size_t resolve(const ObjectName& name) const;
};

// What a subquery may read of the query around it: that query's columns (a copy of its scope)
// and the row being evaluated, set before each run of the subquery.
struct Outer {
  Scope scope;
  const Row* row = nullptr;
  bool used = false;  // a column of the outer query was bound: the subquery is correlated
};

struct Env {
  Catalog& catalog;
  std::shared_ptr<const Params> params;
  bool outermost = true;                   // false inside a derived table, whose reads are never data reads
  std::shared_ptr<Outer> outer = nullptr;  // inside a subquery: the query around it
};

// A whole query, its UNION ALL cores and its ORDER BY; `owner` keeps the tree alive for as long
// as the rows are read.
[[nodiscard]] RowSource run_query(const Query& q, const std::shared_ptr<const Query>& owner, const Env& env);

// Compiles expressions against one row layout. In a grouped query the layout is the group's
// keys then its aggregates, and a column outside both is error 8120.
class Binder {
 public:
  Binder(const Env& env, const Scope& scope);

  // The grouped layout: slot i holds group_by[i], then aggregates.
  void group(const std::vector<const Expr*>& keys, const std::vector<const Expr*>& aggregates,
             std::vector<ColumnType> types);
  // Windows computed into slots after the scope's own.
  void windows(const std::vector<const Expr*>& windows);

  [[nodiscard]] const Row& null_row() const { return null_row_; }

  // A column-free expression compiles to a constant, evaluated once, on first use.
  [[nodiscard]] Fn compile(const Expr& e);

  // The type an expression has, from evaluating it over a row of NULLs; nullopt when that fails.
  [[nodiscard]] std::optional<ColumnType> probe(const Fn& fn) const;

 private:
  Fn slot(std::size_t i);
  bool same(const Expr& a, const Expr& b) const;
  Fn compile_node(const Expr& e);
  Fn variable(const Expr& e);
  Fn binary(const Expr& e);
  Fn case_of(const Expr& e);
  Fn at_time_zone(const Expr& e);
  Fn call(const Expr& e);
  Fn subquery(const Expr& e);  // (SELECT ...), EXISTS (SELECT ...) and x IN (SELECT ...)

  const Env& env_;
  const Scope& scope_;
  bool grouped_ = false;
  std::vector<const Expr*> keys_;
  std::unordered_map<const Expr*, std::size_t> extra_;
  std::vector<ColumnType> types_;
  Row null_row_;
};

// The rows of `prev` for which `test` is true (not false, not unknown).
[[nodiscard]] Producer filtered(Producer prev, Fn test);

// A FROM source once opened: its columns, its rows' order, and where its rows come from.
struct Opened {
  std::vector<Slot> columns;
  std::vector<std::string> ordered_by;  // the relation's own order, lower-case; empty if none
  std::shared_ptr<Relation> relation;   // null for a derived table
  RowSource derived;
  std::shared_ptr<RowStream> stream;  // the relation's scan, once joined_rows opened it
};

// Opens the core's FROM source and its JOINs in order (208 for an unknown object, 8155 for a
// derived table's unnamed column) and lays their columns side by side in `scope`.
[[nodiscard]] std::vector<Opened> open_sources(const SelectCore& c, const std::shared_ptr<const Query>& owner,
                                               const Env& env, Scope& scope);

// The rows of FROM and its JOINs, before WHERE. The first source streams, the others are held
// (with a hash on a column equality); a relation gets the range hints WHERE puts on its columns,
// and the first one `data_read` (ScanHints).
[[nodiscard]] Producer joined_rows(const SelectCore& c, std::vector<Opened>& opened, const Scope& scope, const Env& env,
                                   Binder& constants, bool data_read);

// GROUP BY: the groups of `rows`, each its keys then its aggregates, one row a group (one row
// for aggregates without GROUP BY, even over no rows); sets `binder` to that layout.
[[nodiscard]] std::vector<Row> grouped_rows(const SelectCore& c, const std::vector<const Expr*>& aggregates,
                                            const Producer& rows, Binder& source, Binder& binder);

// Numbers each window's rows (ROW_NUMBER, NTILE) into a slot after the row's last.
void compute_windows(std::vector<Row>& rows, const std::vector<const Expr*>& windows, Binder& binder);

// Sort keys compare NULL first, as SQL Server orders NULL below every value.
[[nodiscard]] int compare_keys(const std::vector<TypedValue>& a, const std::vector<TypedValue>& b,
                               const std::vector<bool>& desc);

// The value of TOP, OFFSET, FETCH or NTILE's argument; 10742 when negative or NULL.
[[nodiscard]] std::int64_t count_of(const Expr& e, Binder& constants, const char* what);

// What the select list gives: one closure and one column a output column.
struct Projection {
  std::vector<Fn> fns;
  std::vector<Column> columns;
};

// A core's rows projected, in the query's ORDER BY and cut by OFFSET/FETCH/TOP. `ordering` is
// null for a core of a UNION (the union sorts its result). The rows are held and sorted only
// when the first relation's order does not already give the ORDER BY.
[[nodiscard]] Producer ordered_rows(const SelectCore& c, const Query* ordering, Producer rows,
                                    const Projection& projection, const Scope& scope, const std::vector<Opened>& opened,
                                    bool holds_rows, Binder& binder, Binder& constants);

// The rows of a UNION ALL sorted by its ORDER BY, which names output columns (104 otherwise).
[[nodiscard]] Producer sorted_union(Producer all, const std::vector<Column>& columns,
                                    const std::vector<OrderItem>& order_by);

}  // namespace mssqlcdc::tds::engine
