// The expressions of a SELECT, by precedence from loosest: OR, AND, NOT, comparisons (= <> < <=
// > >=, BETWEEN, IN, LIKE, IS NULL), + -, * / %, unary minus, postfix COLLATE and AT TIME ZONE,
// then the primaries (literals typed as SQL Server types them, @variables, CASE, CAST/CONVERT,
// columns, calls with OVER). Each node keeps a normalized text, so GROUP BY matches expressions.
#include <algorithm>
#include <utility>

#include <cstdint>

#include "select_parser.hpp"

namespace mssqlcdc::tds::parser {
namespace {

bool is_aggregate(const std::string& name) {
  return name == "count" || name == "count_big" || name == "min" || name == "max" || name == "sum" || name == "avg";
}

}  // namespace

ExprPtr Parser::make(ExprKind kind, std::string op, std::vector<ExprPtr> args) {
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

std::vector<ExprPtr> Parser::list(ExprPtr a, ExprPtr b, ExprPtr c) {
  std::vector<ExprPtr> v;
  v.push_back(std::move(a));
  if (b) v.push_back(std::move(b));
  if (c) v.push_back(std::move(c));
  return v;
}

ExprPtr Parser::expression() {
  const Nested nested(*this);
  return disjunction();
}

ExprPtr Parser::disjunction() {
  ExprPtr e = conjunction();
  while (word("OR")) e = make(ExprKind::Binary, "OR", list(std::move(e), conjunction()));
  return e;
}

ExprPtr Parser::conjunction() {
  ExprPtr e = negation();
  while (word("AND")) e = make(ExprKind::Binary, "AND", list(std::move(e), negation()));
  return e;
}

// Prefix operators are counted in a loop and applied after, so a run of them deepens the
// tree (bounded by make()) but not the parser's recursion.
ExprPtr Parser::negation() {
  int nots = 0;
  while (word("NOT")) ++nots;
  ExprPtr e = comparison();
  while (nots-- > 0) e = make(ExprKind::Unary, "NOT", list(std::move(e)));
  return e;
}

ExprPtr Parser::comparison() {
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
    if (peek() != nullptr && peek()->is("SELECT")) {
      auto in = make(ExprKind::In, "IN", list(std::move(e)));
      in->subquery = subquery();
      in->negated = negated;
      in->text += "subquery#" + std::to_string(reinterpret_cast<std::uintptr_t>(in->subquery.get()));
      return in;
    }
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

ExprPtr Parser::additive() {
  ExprPtr e = multiplicative();
  while (peek() != nullptr && (peek()->is_symbol('+') || peek()->is_symbol('-'))) {
    std::string op = next().text;
    e = make(ExprKind::Binary, op, list(std::move(e), multiplicative()));
  }
  return e;
}

ExprPtr Parser::multiplicative() {
  ExprPtr e = unary();
  while (peek() != nullptr && (peek()->is_symbol('*') || peek()->is_symbol('/') || peek()->is_symbol('%'))) {
    std::string op = next().text;
    e = make(ExprKind::Binary, op, list(std::move(e), unary()));
  }
  return e;
}

ExprPtr Parser::unary() {
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

ExprPtr Parser::postfix() {
  ExprPtr e = primary();
  for (;;) {
    if (word("COLLATE")) {
      // The collation the expression's comparisons, ORDER BY and GROUP BY follow.
      if (peek() == nullptr || !peek()->is_name()) fail();
      const std::string name = next().text;
      if (emu::Collation::find(name) == nullptr) sql_error(448, "Invalid collation '" + name + "'.");
      e = make(ExprKind::Collate, name, list(std::move(e)));
    } else if (peek() != nullptr && peek()->is("AT") && peek(1) != nullptr && peek(1)->is("TIME")) {
      i_ += 2;
      expect_word("ZONE");
      e = make(ExprKind::AtTimeZone, "ATTIMEZONE", list(std::move(e), primary()));
    } else {
      return e;
    }
  }
}

ColumnType Parser::type() {
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

ExprPtr Parser::literal(TypedValue v, std::string text) {
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::Literal;
  e->value = std::move(v);
  e->text = "'" + text;
  return e;
}

ExprPtr Parser::number(const SqlToken& t) {
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

ExprPtr Parser::primary() {
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
        if (peek() != nullptr && peek()->is("SELECT")) {
          auto sub = make(ExprKind::Subquery, "SUBQUERY", {});
          sub->subquery = subquery();
          sub->text += "#" + std::to_string(reinterpret_cast<std::uintptr_t>(sub->subquery.get()));
          return sub;
        }
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
  if (t.is("EXISTS") && next_is_symbol('(') && peek(1) != nullptr && peek(1)->is("SELECT")) {
    ++i_;
    auto e = make(ExprKind::Exists, "EXISTS", {});
    e->subquery = subquery();
    e->text += "#" + std::to_string(reinterpret_cast<std::uintptr_t>(e->subquery.get()));
    return e;
  }
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
  const bool datepart_first = e->op == "dateadd" || e->op == "datepart" || e->op == "datediff" ||
                              e->op == "datediff_big" || e->op == "datename";
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

std::shared_ptr<const Query> Parser::subquery() {
  // After the '(': the query, then its ')'. Its text is unique, so GROUP BY never matches it.
  const Nested nested(*this);
  std::shared_ptr<const Query> q = query();
  expect_symbol(')');
  return q;
}

ExprPtr Parser::case_expression() {
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
}  // namespace mssqlcdc::tds::parser
