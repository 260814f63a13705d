// select.hpp: the query engine. parse_select() reads the SELECT subset the T-SQL backends send
// and a person types into a tree (recursive descent over tsql.hpp's tokens); run_select()
// evaluates it over a Catalog. A query with no GROUP BY, aggregate or window, whose ORDER BY is
// a prefix of its first relation's ordered_by(), streams: rows come one at a time from the
// RowStream and are never collected. Otherwise rows are held to group, number or sort them.
// Errors are SQL Server's: 102 syntax, 207 column, 208 object, 209 ambiguous, 4104 unbound
// multi-part name, 8120 column outside GROUP BY, 195/4121 unknown function, 174 arity.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mssqlcdc/tds/tokens.hpp"
#include "relations.hpp"

namespace mssqlcdc::tds {

struct SqlToken;

using Params = std::map<std::string, TypedValue>;  // lower-case names with their '@'

enum class ExprKind : std::uint8_t {
  Literal,     // `value`
  Variable,    // @param or @@global, `name[0]` as written
  Column,      // `name`: alias.col or col
  Call,        // `name`(args); aggregates and windows too, `star` for COUNT(*)
  Unary,       // `op` "-" or "NOT" over args[0]
  Binary,      // `op` + - * / % = <> < <= > >= AND OR over args[0], args[1]
  Between,     // args[0] BETWEEN args[1] AND args[2]; `negated`
  In,          // args[0] IN (args[1..]) or IN (`subquery`); `negated`
  IsNull,      // args[0] IS [NOT] NULL; `negated` for IS NOT
  Like,        // args[0] LIKE args[1]; `negated`
  Case,        // [operand?] WHEN/THEN pairs in args, then ELSE; see `has_operand`, `has_else`
  Convert,     // CAST/CONVERT to `target`; args[0], optional style args[1]
  AtTimeZone,  // args[0] AT TIME ZONE args[1]
  Collate,     // args[0] COLLATE `op`, a modelled collation's name
  Subquery,    // (SELECT ...) as a value: `subquery`
  Exists,      // EXISTS (SELECT ...): `subquery`
};

struct Expr;
struct Query;
using ExprPtr = std::unique_ptr<Expr>;

struct OrderItem {
  ExprPtr expr;
  bool descending = false;
};

struct Expr {
  ExprKind kind = ExprKind::Literal;
  std::string op;
  ObjectName name;
  TypedValue value;
  std::vector<ExprPtr> args;
  ColumnType target;
  bool negated = false;
  bool star = false;
  bool has_operand = false;
  bool has_else = false;
  bool over = false;  // a window: OVER ([PARTITION BY partition] ORDER BY order)
  std::vector<ExprPtr> partition;
  std::vector<OrderItem> order;
  std::shared_ptr<const Query> subquery;  // Subquery, Exists, and IN (SELECT ...)
  std::string text;                       // the expression as normalized text, to match GROUP BY expressions
  int depth = 1;                          // levels of operators below and including this one (parser's bound: 191)
};

struct Query;

struct SelectItem {
  ExprPtr expr;                        // null for * and alias.*
  std::optional<std::string> star_of;  // "x" for x.*, "" for *
  std::optional<std::string> alias;
};

struct Source {
  ObjectName name;  // a table, or a function when `call`
  bool call = false;
  std::vector<ExprPtr> args;
  std::unique_ptr<Query> derived;  // (SELECT ...) AS alias
  std::string alias;               // defaults to the last name part
  bool read_uncommitted = false;   // WITH (NOLOCK) or WITH (READUNCOMMITTED): a dirty read
};

struct Join {
  Source source;
  bool left = false;
  ExprPtr on;
};

struct SelectCore {
  ExprPtr top;
  std::vector<SelectItem> items;
  std::optional<Source> from;
  std::vector<Join> joins;
  ExprPtr where;
  std::vector<ExprPtr> group_by;
  ExprPtr having;
};

struct Query {
  std::vector<SelectCore> cores;  // joined by UNION ALL
  std::vector<OrderItem> order_by;
  ExprPtr offset;
  ExprPtr fetch;
};

// Parses one SELECT statement (its tokens, without the trailing ';').
[[nodiscard]] std::unique_ptr<Query> parse_select(const std::vector<SqlToken>& tokens);

// The rows of a result: columns first, then rows from `next` until it returns false. `next`
// owns everything it reads (relations, streams, parameters), so it may outlive the caller.
struct RowSource {
  std::vector<Column> columns;
  std::function<bool(std::vector<Value>&)> next;
};

// The values of @@globals drivers probe on connect (@@VERSION, @@SPID...); nullopt for others.
[[nodiscard]] std::optional<TypedValue> global_variable(const std::string& lower_name);

// Evaluates `query`. `catalog` must outlive the returned source.
[[nodiscard]] RowSource run_select(std::shared_ptr<const Query> query, Catalog& catalog, Params params);

}  // namespace mssqlcdc::tds
