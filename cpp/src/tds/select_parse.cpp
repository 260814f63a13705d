// The SELECT grammar, by precedence from loosest: OR, AND, NOT, comparisons (= <> < <= > >=,
// BETWEEN, IN, LIKE, IS NULL), + -, * / %, unary minus, postfix COLLATE and AT TIME ZONE.
#include <algorithm>
#include <utility>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/builtins.hpp"
#include "mssqlcdc/tds/select.hpp"
#include "mssqlcdc/tds/tsql.hpp"

namespace mssqlcdc::tds {
namespace {

// Words that end an expression or a select item, so they are never read as an implicit alias.
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

bool is_aggregate(const std::string& name) {
  return name == "count" || name == "count_big" || name == "min" || name == "max" || name == "sum" || name == "avg";
}

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

  std::unique_ptr<Query> query() {
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

  SelectCore core() {
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

  SelectItem item() {
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

  std::optional<std::string> alias() {
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

  ObjectName dotted() {
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

  Source source() {
    Source s;
    if (symbol('(')) {
      s.derived = query();
      expect_symbol(')');
    } else {
      s.name = dotted();
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
    s.alias = lower(s.alias);
    return s;
  }

  std::vector<OrderItem> order_list() {
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

  static ExprPtr make(ExprKind kind, std::string op, std::vector<ExprPtr> args) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->op = std::move(op);
    e->args = std::move(args);
    for (const auto& a : e->args) e->depth = std::max(e->depth, a->depth + 1);
    // A long chain (1+1+...+1) nests as deeply as parentheses do, for the evaluator's recursion.
    if (e->depth > kMaxNesting) nested_too_deeply();
    e->text = e->op + "(";
    for (const auto& a : e->args) e->text += a->text + ",";
    e->text += ")";
    return e;
  }
  static std::vector<ExprPtr> list(ExprPtr a, ExprPtr b = nullptr, ExprPtr c = nullptr) {
    std::vector<ExprPtr> v;
    v.push_back(std::move(a));
    if (b) v.push_back(std::move(b));
    if (c) v.push_back(std::move(c));
    return v;
  }

  ExprPtr expression() {
    const Nested nested(*this);
    return disjunction();
  }

  ExprPtr disjunction() {
    ExprPtr e = conjunction();
    while (word("OR")) e = make(ExprKind::Binary, "OR", list(std::move(e), conjunction()));
    return e;
  }
  ExprPtr conjunction() {
    ExprPtr e = negation();
    while (word("AND")) e = make(ExprKind::Binary, "AND", list(std::move(e), negation()));
    return e;
  }
  // Prefix operators are counted in a loop and applied after, so a run of them deepens the
  // tree (bounded by make()) but not the parser's recursion.
  ExprPtr negation() {
    int nots = 0;
    while (word("NOT")) ++nots;
    ExprPtr e = comparison();
    while (nots-- > 0) e = make(ExprKind::Unary, "NOT", list(std::move(e)));
    return e;
  }

  ExprPtr comparison() {
    ExprPtr e = additive();
    const SqlToken* t = peek();
    if (t == nullptr) return e;
    if (t->kind == TokenKind::Symbol && (t->text == "=" || t->text == "<" || t->text == ">" || t->text == "!")) {
      std::string op = next().text;
      if (peek() != nullptr && (peek()->is_symbol('=') || peek()->is_symbol('>')) && op != "=") op += next().text;
      if (op == "!") fail();
      if (op == "!=") op = "<>";
      return make(ExprKind::Binary, op, list(std::move(e), additive()));
    }
    const bool negated = word("NOT");
    if (word("BETWEEN")) {
      ExprPtr lo = additive();
      expect_word("AND");
      auto b = make(ExprKind::Between, "BETWEEN", list(std::move(e), std::move(lo), additive()));
      b->negated = negated;
      return b;
    }
    if (word("IN")) {
      expect_symbol('(');
      std::vector<ExprPtr> args = list(std::move(e));
      do {
        args.push_back(expression());
      } while (symbol(','));
      expect_symbol(')');
      auto in = make(ExprKind::In, "IN", std::move(args));
      in->negated = negated;
      return in;
    }
    if (word("LIKE")) {
      auto l = make(ExprKind::Like, "LIKE", list(std::move(e), additive()));
      l->negated = negated;
      return l;
    }
    if (negated) fail();
    if (word("IS")) {
      const bool is_not = word("NOT");
      expect_word("NULL");
      auto n = make(ExprKind::IsNull, "ISNULL", list(std::move(e)));
      n->negated = is_not;
      return n;
    }
    return e;
  }

  ExprPtr additive() {
    ExprPtr e = multiplicative();
    while (peek() != nullptr && (peek()->is_symbol('+') || peek()->is_symbol('-'))) {
      std::string op = next().text;
      e = make(ExprKind::Binary, op, list(std::move(e), multiplicative()));
    }
    return e;
  }
  ExprPtr multiplicative() {
    ExprPtr e = unary();
    while (peek() != nullptr && (peek()->is_symbol('*') || peek()->is_symbol('/') || peek()->is_symbol('%'))) {
      std::string op = next().text;
      e = make(ExprKind::Binary, op, list(std::move(e), unary()));
    }
    return e;
  }
  ExprPtr unary() {
    int minuses = 0;
    for (;;) {
      if (symbol('-')) {
        ++minuses;
      } else if (!symbol('+')) {
        break;
      }
    }
    ExprPtr e = postfix();
    while (minuses-- > 0) e = make(ExprKind::Unary, "-", list(std::move(e)));
    return e;
  }

  ExprPtr postfix() {
    ExprPtr e = primary();
    for (;;) {
      if (word("COLLATE")) {
        // Collations are accepted and not applied: comparisons use the default collation.
        if (peek() == nullptr || !peek()->is_name()) fail();
        next();
      } else if (peek() != nullptr && peek()->is("AT") && peek(1) != nullptr && peek(1)->is("TIME")) {
        i_ += 2;
        expect_word("ZONE");
        e = make(ExprKind::AtTimeZone, "ATTIMEZONE", list(std::move(e), primary()));
      } else {
        return e;
      }
    }
  }

  ColumnType type() {
    const SqlToken& name = next();
    if (!name.is_name()) --i_, fail();
    std::optional<int> first, second;
    if (symbol('(')) {
      const SqlToken& n = next();
      if (n.is("max")) {
        first = -1;
      } else if (n.kind == TokenKind::Number) {
        first = std::stoi(n.text);
      } else {
        --i_, fail();
      }
      if (symbol(',')) {
        const SqlToken& s = next();
        if (s.kind != TokenKind::Number) --i_, fail();
        second = std::stoi(s.text);
      }
      expect_symbol(')');
    }
    return type_named(name.text, first, second);
  }

  static ExprPtr literal(TypedValue v, std::string text) {
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::Literal;
    e->value = std::move(v);
    e->text = "'" + text;
    return e;
  }

  ExprPtr number(const SqlToken& t) {
    const std::string& s = t.text;
    if (s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      const ColumnType text{SqlKind::VarChar, kMax};
      TypedValue v = convert(ColumnType{SqlKind::VarBinary, static_cast<std::uint16_t>((s.size() - 2 + 1) / 2)},
                             TypedValue{text, s.size() % 2 == 0 ? s : "0x0" + s.substr(2)}, 1);
      return literal(std::move(v), s);
    }
    const ColumnType text{SqlKind::VarChar, kMax};
    if (s.find_first_of("eE") != std::string::npos) {
      return literal(convert(ColumnType{SqlKind::Float}, TypedValue{text, s}, 0), s);
    }
    if (const auto dot = s.find('.'); dot != std::string::npos) {
      const auto scale = static_cast<std::uint8_t>(s.size() - dot - 1);
      const auto precision = static_cast<std::uint8_t>(std::max<std::size_t>(s.size() - 1, scale + 1));
      if (precision > 38) fail();
      return literal(convert(ColumnType{SqlKind::Decimal, 17, precision, scale, false}, TypedValue{text, s}, 0), s);
    }
    if (s.find_first_not_of("0123456789") != std::string::npos) --i_, fail();
    if (s.size() > 38) fail();
    const ColumnType dec{SqlKind::Decimal, 17, static_cast<std::uint8_t>(s.size()), 0, false};
    TypedValue v = convert(dec, TypedValue{text, s}, 0);
    const __int128 u = std::get<Decimal>(v.value).unscaled;
    if (u <= INT32_MAX) return literal(TypedValue{ColumnType{SqlKind::Int}, static_cast<std::int64_t>(u)}, s);
    return literal(std::move(v), s);  // SQL Server types a literal past int as numeric
  }

  ExprPtr primary() {
    const SqlToken& t = next();
    switch (t.kind) {
      case TokenKind::String:
      case TokenKind::UnicodeString: {
        const auto n = static_cast<std::uint16_t>(std::max<std::size_t>(1, utf16_units(t.text)));
        const SqlKind kind = t.kind == TokenKind::String ? SqlKind::VarChar : SqlKind::NVarChar;
        return literal(TypedValue{ColumnType{kind, n}, t.text}, t.text);
      }
      case TokenKind::Number: return number(t);
      case TokenKind::Variable: {
        auto e = std::make_unique<Expr>();
        e->kind = ExprKind::Variable;
        e->name = {t.text};
        e->text = lower(t.text);
        return e;
      }
      case TokenKind::Symbol:
        if (t.is_symbol('(')) {
          if (peek() != nullptr && peek()->is("SELECT")) --i_, fail();  // scalar subqueries: not served
          ExprPtr e = expression();
          expect_symbol(')');
          return e;
        }
        --i_;
        fail();
      case TokenKind::Word:
      case TokenKind::QuotedName: break;
    }
    if (t.is("NULL")) return literal(TypedValue{ColumnType{SqlKind::Int}, std::monostate{}}, "null");
    if (t.is("CASE")) return case_expression();
    if ((t.is("CAST") || t.is("CONVERT") || t.is("TRY_CAST")) && next_is_symbol('(')) {
      ++i_;
      auto e = make(ExprKind::Convert, "CONVERT", {});
      if (t.is("CONVERT")) {
        e->target = type();
        expect_symbol(',');
        e->args.push_back(expression());
        if (symbol(',')) e->args.push_back(expression());
      } else {
        e->args.push_back(expression());
        expect_word("AS");
        e->target = type();
      }
      expect_symbol(')');
      e->text = "convert(" + type_name(e->target) + "," + e->args[0]->text +
                (e->args.size() > 1 ? "," + e->args[1]->text : "") + ")";
      return e;
    }
    if (t.kind == TokenKind::Word && reserved(t)) --i_, fail();
    --i_;
    ObjectName name = dotted();
    if (!symbol('(')) {
      auto e = std::make_unique<Expr>();
      e->kind = ExprKind::Column;
      e->name = std::move(name);
      e->text = lower(joined(e->name));
      return e;
    }
    auto e = make(ExprKind::Call, "", {});
    e->name = std::move(name);
    e->op = lower(joined(e->name));
    const bool datepart_first = e->op == "dateadd" || e->op == "datepart" || e->op == "datediff" || e->op == "datename";
    if (symbol('*')) {
      e->star = true;
      expect_symbol(')');
    } else if (!symbol(')')) {
      if (is_aggregate(e->op)) word("ALL");
      do {
        if (datepart_first && e->args.empty() && peek() != nullptr && peek()->kind == TokenKind::Word) {
          const std::string part = next().text;  // DATEADD(minute, ...): the datepart is a word
          e->args.push_back(literal(TypedValue{ColumnType{SqlKind::VarChar, 30}, part}, lower(part)));
        } else {
          e->args.push_back(expression());
        }
      } while (symbol(','));
      expect_symbol(')');
    }
    if (word("OVER")) {
      e->over = true;
      expect_symbol('(');
      if (word("PARTITION")) {
        expect_word("BY");
        do {
          e->partition.push_back(expression());
        } while (symbol(','));
      }
      if (word("ORDER")) {
        expect_word("BY");
        e->order = order_list();
      }
      expect_symbol(')');
    }
    for (const auto& a : e->args) e->depth = std::max(e->depth, a->depth + 1);
    if (e->depth > kMaxNesting) nested_too_deeply();
    e->text = e->op + (e->star ? "(*" : "(");
    for (const auto& a : e->args) e->text += a->text + ",";
    e->text += e->over ? ")over" : ")";
    return e;
  }

  ExprPtr case_expression() {
    auto e = make(ExprKind::Case, "CASE", {});
    if (!(peek() != nullptr && peek()->is("WHEN"))) {
      e->has_operand = true;
      e->args.push_back(expression());
    }
    if (!(peek() != nullptr && peek()->is("WHEN"))) fail();
    while (word("WHEN")) {
      e->args.push_back(expression());
      expect_word("THEN");
      e->args.push_back(expression());
    }
    if (word("ELSE")) {
      e->has_else = true;
      e->args.push_back(expression());
    }
    expect_word("END");
    e->text = "case(";
    for (const auto& a : e->args) e->text += a->text + ",";
    e->text += ")";
    return e;
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

}  // namespace

std::unique_ptr<Query> parse_select(const std::vector<SqlToken>& tokens) { return Parser(tokens).statement(); }

}  // namespace mssqlcdc::tds
