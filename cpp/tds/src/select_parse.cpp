// The clauses of a SELECT statement: UNION ALL of cores, the SELECT list with its aliases and
// stars, FROM sources (tables, table-valued functions, derived tables) and their JOINs, WHERE,
// GROUP BY, HAVING, ORDER BY with OFFSET/FETCH. Expressions are read by select_parse_expr.cpp.
#include <utility>

#include "select_parser.hpp"

namespace mssqlcdc::tds {
namespace parser {

bool reserved(const SqlToken& t) {
  static const char* const kWords[] = {"FROM",   "WHERE",   "GROUP",   "ORDER",    "HAVING", "UNION", "JOIN", "LEFT",
                                       "INNER",  "RIGHT",   "FULL",    "CROSS",    "ON",     "AS",    "AND",  "OR",
                                       "NOT",    "IS",      "IN",      "LIKE",     "WHEN",   "THEN",  "ELSE", "END",
                                       "SELECT", "TOP",     "BETWEEN", "CASE",     "NULL",   "BY",    "ASC",  "DESC",
                                       "OVER",   "COLLATE", "OUTER",   "DISTINCT", "ALL",    "INTO",  "WITH"};
  for (const char* w : kWords) {
    if (t.is(w)) return true;
  }
  return false;
}

std::unique_ptr<Query> Parser::query() {
  const Nested nested(*this);
  auto q = std::make_unique<Query>();
  q->cores.push_back(core());
  while (word("UNION")) {
    expect_word("ALL");  // UNION without ALL removes duplicates: not needed by any caller
    q->cores.push_back(core());
  }
  if (word("ORDER")) {
    expect_word("BY");
    q->order_by = order_list();
    if (word("OFFSET")) {
      q->offset = expression();
      if (!word("ROWS") && !word("ROW")) fail();
      if (word("FETCH")) {
        if (!word("NEXT") && !word("FIRST")) fail();
        q->fetch = expression();
        if (!word("ROWS") && !word("ROW")) fail();
        expect_word("ONLY");
      }
    }
  }
  return q;
}

SelectCore Parser::core() {
  SelectCore c;
  expect_word("SELECT");
  word("ALL");
  if (word("TOP")) {
    if (symbol('(')) {
      c.top = expression();
      expect_symbol(')');
    } else {
      c.top = primary();
    }
  }
  do {
    c.items.push_back(item());
  } while (symbol(','));
  if (word("FROM")) {
    c.from = source();
    for (;;) {
      bool left = false;
      if (word("LEFT")) {
        word("OUTER");
        left = true;
      } else {
        word("INNER");
      }
      if (!left && !(peek() != nullptr && peek()->is("JOIN"))) break;
      expect_word("JOIN");
      Join j{source(), left, nullptr};
      expect_word("ON");
      j.on = expression();
      c.joins.push_back(std::move(j));
    }
  }
  if (word("WHERE")) c.where = expression();
  if (word("GROUP")) {
    expect_word("BY");
    do {
      c.group_by.push_back(expression());
    } while (symbol(','));
  }
  if (word("HAVING")) c.having = expression();
  return c;
}

SelectItem Parser::item() {
  SelectItem it;
  if (symbol('*')) {
    it.star_of = "";
    return it;
  }
  if (peek() != nullptr && peek()->is_name() && next_is_symbol('.', 1) && next_is_symbol('*', 2)) {
    it.star_of = lower(next().text);
    i_ += 2;
    return it;
  }
  // alias = expr
  if (peek() != nullptr && peek()->is_name() && !reserved(*peek()) && next_is_symbol('=', 1)) {
    it.alias = next().text;
    ++i_;
    it.expr = expression();
    return it;
  }
  it.expr = expression();
  it.alias = alias();
  return it;
}

std::optional<std::string> Parser::alias() {
  if (word("AS")) {
    const SqlToken& a = next();
    if (!a.is_name() && a.kind != TokenKind::String) --i_, fail();
    return a.text;
  }
  if (peek() != nullptr && (peek()->kind == TokenKind::QuotedName || (peek()->is_name() && !reserved(*peek())))) {
    return next().text;
  }
  if (peek() != nullptr && peek()->kind == TokenKind::String) return next().text;
  return std::nullopt;
}

ObjectName Parser::dotted() {
  ObjectName name;
  const SqlToken& first = next();
  if (!first.is_name()) --i_, fail();
  name.push_back(first.text);
  while (next_is_symbol('.') && peek(1) != nullptr && peek(1)->is_name()) {
    ++i_;
    name.push_back(next().text);
  }
  return name;
}

Source Parser::source() {
  Source s;
  if (symbol('(')) {
    s.derived = query();
    expect_symbol(')');
  } else if (peek() != nullptr && peek()->kind == TokenKind::Variable) {
    s.name = {next().text};  // a table variable (local_tables.hpp)
    s.alias = s.name.back();
  } else {
    s.name = dotted();
    // msdb's tables keep their database in the schema part: msdb.dbo.cdc_jobs (catalog_meta.hpp).
    if (s.name.size() == 3 && lower(s.name[0]) == "msdb") {
      s.name = {"msdb." + (s.name[1].empty() ? std::string("dbo") : s.name[1]), s.name[2]};
    }
    if (s.name.size() == 4 || s.name.size() == 3) s.name.erase(s.name.begin());  // [server.]database.
    if (symbol('(')) {
      s.call = true;
      if (!symbol(')')) {
        do {
          s.args.push_back(expression());
        } while (symbol(','));
        expect_symbol(')');
      }
    }
    s.alias = s.name.back();
  }
  if (const auto a = alias()) {
    s.alias = *a;
  } else if (s.derived) {
    fail();  // a derived table needs a name
  }
  if (!s.derived && !s.call) table_hints(s);
  s.alias = lower(s.alias);
  return s;
}

std::vector<OrderItem> Parser::order_list() {
  std::vector<OrderItem> items;
  do {
    OrderItem o{expression(), false};
    if (word("DESC")) {
      o.descending = true;
    } else {
      word("ASC");
    }
    items.push_back(std::move(o));
  } while (symbol(','));
  return items;
}
}  // namespace parser

std::unique_ptr<Query> parse_select(const std::vector<SqlToken>& tokens) { return parser::Parser(tokens).statement(); }

}  // namespace mssqlcdc::tds
