// select_parser.hpp: the recursive-descent parser behind parse_select() (select.hpp), internal
// to src/tds. One class over a token cursor, its members defined in two files by what they
// read: select_parse.cpp the statement's clauses (UNION ALL, SELECT list, FROM and JOIN, WHERE,
// GROUP BY, HAVING, ORDER BY, OFFSET/FETCH), select_parse_expr.cpp the expressions, by
// precedence from loosest: OR, AND, NOT, comparisons (= <> < <= > >=, BETWEEN, IN, LIKE, IS
// NULL), + -, * / %, unary minus, postfix COLLATE and AT TIME ZONE, then the primaries. A syntax
// error is SQL Server's 102 (156 at a keyword); a statement nested too deeply is 191.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "builtins.hpp"
#include "mssqlcdc/error.hpp"
#include "select.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds::parser {

// Words that end an expression or a select item, so they are never read as an implicit alias.
[[nodiscard]] bool reserved(const SqlToken& t);

// Deeper statements get error 191: SQL Server's own limit is of this order, and a connection
// thread's stack holds this many levels of the parser and the evaluator with room to spare.
constexpr int kMaxNesting = 128;

class Parser {
 public:
  explicit Parser(const std::vector<SqlToken>& tokens) : t_(tokens) {}

  std::unique_ptr<Query> statement() {
    auto q = query();
    if (!at_end()) fail();
    return q;
  }

 private:
  // Clauses (select_parse.cpp).
  std::unique_ptr<Query> query();
  SelectCore core();
  SelectItem item();
  std::optional<std::string> alias();
  ObjectName dotted();
  Source source();
  void table_hints(Source& s);  // WITH (NOLOCK, TABLOCKX ...) after a table (table_hints.cpp)
  std::vector<OrderItem> order_list();

  // Expressions (select_parse_expr.cpp), one member a precedence level.
  static ExprPtr make(ExprKind kind, std::string op, std::vector<ExprPtr> args);  // bounds the depth
  static std::vector<ExprPtr> list(ExprPtr a, ExprPtr b = nullptr, ExprPtr c = nullptr);
  ExprPtr expression();
  ExprPtr disjunction();
  ExprPtr conjunction();
  ExprPtr negation();
  ExprPtr comparison();
  ExprPtr additive();
  ExprPtr multiplicative();
  ExprPtr unary();
  ExprPtr postfix();
  ColumnType type();  // the target of CAST/CONVERT
  static ExprPtr literal(TypedValue v, std::string text);
  ExprPtr number(const SqlToken& t);
  ExprPtr primary();
  ExprPtr case_expression();
  std::shared_ptr<const Query> subquery();  // (SELECT ...) after its '(' (scalar, EXISTS, IN)

  // The token cursor.
  const SqlToken* peek(std::size_t ahead = 0) const { return i_ + ahead < t_.size() ? &t_[i_ + ahead] : nullptr; }
  bool at_end() const { return i_ >= t_.size(); }
  const SqlToken& next() {
    if (at_end()) fail();
    return t_[i_++];
  }
  bool word(std::string_view w) {
    if (peek() != nullptr && peek()->is(w)) return ++i_, true;
    return false;
  }
  bool symbol(char c) {
    if (peek() != nullptr && peek()->is_symbol(c)) return ++i_, true;
    return false;
  }
  void expect_word(std::string_view w) {
    if (!word(w)) fail();
  }
  void expect_symbol(char c) {
    if (!symbol(c)) fail();
  }
  bool next_is_symbol(char c, std::size_t ahead = 0) const {
    return peek(ahead) != nullptr && peek(ahead)->is_symbol(c);
  }

  // SQL Server names the token it stopped at, or the last one at the end of the text.
  [[noreturn]] void fail() const {
    const SqlToken* at = peek();
    if (at == nullptr && !t_.empty()) at = &t_.back();
    if (at == nullptr) sql_error(102, "Incorrect syntax near ';'.");
    if (at->kind == TokenKind::Word && reserved(*at)) {
      sql_error(156, "Incorrect syntax near the keyword '" + at->text + "'.");
    }
    sql_error(102, "Incorrect syntax near '" + at->text + "'.");
  }

  // Counts the parser's recursion (parentheses, NOT, unary minus, derived tables) so a hostile
  // statement ends with SQL Server's error 191 instead of exhausting the connection thread's stack.
  class Nested {
   public:
    explicit Nested(Parser& p) : p_(p) {
      if (++p_.nesting_ > kMaxNesting) nested_too_deeply();
    }
    ~Nested() { --p_.nesting_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;

   private:
    Parser& p_;
  };

  [[noreturn]] static void nested_too_deeply() {
    throw Error(ErrorKind::Sql,
                "Some part of your SQL statement is nested too deeply. Rewrite the query or break it up into "
                "smaller queries.",
                191);
  }

  const std::vector<SqlToken>& t_;
  std::size_t i_ = 0;
  int nesting_ = 0;
};

}  // namespace mssqlcdc::tds::parser
