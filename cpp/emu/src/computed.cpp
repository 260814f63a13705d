// computed.cpp: the expressions of computed columns: parsing with a type check against the
// table's columns, and evaluation over a row's stored cells.
#include "mssqlcdc/emu/computed.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "ascii.hpp"
#include "mssqlcdc/emu/catalog.hpp"
#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

enum class Kind : std::uint8_t { Int, Dec, Float, Text };

[[noreturn]] void refuse(const std::string& what, const std::string& why, int number = 0) {
  throw Error(ErrorKind::EmuSchema, what + ": " + why, number);
}

}  // namespace

struct ExprNode {
  enum class Op : std::uint8_t { Column, Literal, Neg, Add, Sub, Mul, Div };
  Op op = Op::Literal;
  Kind kind = Kind::Int;
  std::size_t column = 0;  // index into the expression's referenced columns
  __int128 number = 0;     // Int value, or Dec scaled by `scale`
  int scale = 0;
  std::string text;
  std::shared_ptr<const ExprNode> left, right;
};

namespace {

struct Val {
  bool null = false;
  Kind kind = Kind::Int;
  __int128 n = 0;
  int scale = 0;
  double f = 0;
  std::string s;
};

__int128 pow10(int n) {
  __int128 p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

const __int128 kLimit = pow10(38);

Kind kind_of(const SqlType& t) {
  switch (t.family()) {
    case Family::Bit:
    case Family::Integer: return Kind::Int;
    case Family::Exact: return Kind::Dec;
    case Family::Approximate: return Kind::Float;
    case Family::Character: return Kind::Text;
    default: return Kind::Text;
  }
}

bool usable(const SqlType& t) {
  const Family f = t.family();
  return (f == Family::Bit || f == Family::Integer || f == Family::Exact || f == Family::Approximate ||
          f == Family::Character) &&
         !t.is_old_lob();
}

class Parser {
 public:
  Parser(const std::string& text, const std::vector<Expression::Operand>& columns, const std::string& what,
         std::vector<std::int64_t>& used, std::vector<SqlType>& used_types)
      : text_(text), columns_(columns), what_(what), used_(used), used_types_(used_types) {}

  std::shared_ptr<const ExprNode> whole() {
    auto e = sum();
    skip();
    if (at_ < text_.size()) bad("unexpected '" + text_.substr(at_) + "'");
    return e;
  }

 private:
  [[noreturn]] void bad(const std::string& why) {
    refuse(what_, "cannot read the computed column expression '" + text_ + "': " + why +
                      "; the emulator takes columns, numbers, 'strings', unary -, + - * / and parentheses");
  }
  void skip() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool symbol(char c) {
    skip();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  std::shared_ptr<const ExprNode> binary(ExprNode::Op op, std::shared_ptr<const ExprNode> l,
                                         std::shared_ptr<const ExprNode> r) {
    auto n = std::make_shared<ExprNode>();
    n->op = op;
    if (l->kind == Kind::Text || r->kind == Kind::Text) {
      // SQL Server would convert the other operand implicitly (error 245 for a non-number);
      // the emulator keeps strings to concatenation of strings.
      if (op != ExprNode::Op::Add || l->kind != r->kind)
        refuse(what_, "'" + text_ +
                          "' mixes strings with numbers or uses a string in - * /; the emulator joins "
                          "strings with + only (not modelled: implicit conversions)");
      n->kind = Kind::Text;
    } else {
      n->kind = std::max(l->kind, r->kind);
      if (op == ExprNode::Op::Div && n->kind == Kind::Dec)
        refuse(what_, "'" + text_ +
                          "' divides decimals; not modelled (SQL Server's result scale rules), "
                          "divide floats or integers instead");
      n->scale = op == ExprNode::Op::Mul ? l->scale + r->scale : std::max(l->scale, r->scale);
      if (n->kind == Kind::Dec && n->scale > 38)
        refuse(what_, "'" + text_ + "' gives a decimal scale of " + std::to_string(n->scale) +
                          "; not modelled past 38 (SQL Server would reduce it), use columns of smaller scale");
    }
    n->left = std::move(l);
    n->right = std::move(r);
    return n;
  }

  std::shared_ptr<const ExprNode> sum() {
    auto l = product();
    for (;;) {
      if (symbol('+')) l = binary(ExprNode::Op::Add, l, product());
      else if (symbol('-')) l = binary(ExprNode::Op::Sub, l, product());
      else return l;
    }
  }

  std::shared_ptr<const ExprNode> product() {
    auto l = unary();
    for (;;) {
      if (symbol('*')) l = binary(ExprNode::Op::Mul, l, unary());
      else if (symbol('/')) l = binary(ExprNode::Op::Div, l, unary());
      else return l;
    }
  }

  std::shared_ptr<const ExprNode> unary() {
    if (symbol('-')) {
      auto operand = unary();
      if (operand->kind == Kind::Text) bad("a string cannot be negated");
      auto n = std::make_shared<ExprNode>();
      n->op = ExprNode::Op::Neg;
      n->kind = operand->kind;
      n->scale = operand->scale;
      n->left = std::move(operand);
      return n;
    }
    if (symbol('(')) {
      auto e = sum();
      if (!symbol(')')) bad("a ( is not closed");
      return e;
    }
    skip();
    if (at_ >= text_.size()) bad("it ends too early");
    const char c = text_[at_];
    if (std::isdigit(static_cast<unsigned char>(c))) return number();
    if (c == '\'' || ((c == 'N' || c == 'n') && at_ + 1 < text_.size() && text_[at_ + 1] == '\'')) return string();
    if (c == '[' || std::isalpha(static_cast<unsigned char>(c)) || c == '_') return column();
    bad("unexpected '" + std::string(1, c) + "'");
  }

  std::shared_ptr<const ExprNode> number() {
    auto n = std::make_shared<ExprNode>();
    n->op = ExprNode::Op::Literal;
    bool dot = false;
    while (at_ < text_.size() &&
           (std::isdigit(static_cast<unsigned char>(text_[at_])) || (!dot && text_[at_] == '.'))) {
      if (text_[at_] == '.') {
        dot = true;
      } else {
        n->number = n->number * 10 + (text_[at_] - '0');
        if (dot) ++n->scale;
        if (n->number >= kLimit) bad("a number has more than 38 digits");
      }
      ++at_;
    }
    if (n->scale > 38) bad("a number has more than 38 digits");
    n->kind = dot ? Kind::Dec : Kind::Int;
    return n;
  }

  std::shared_ptr<const ExprNode> string() {
    if (text_[at_] != '\'') ++at_;  // N'...'
    ++at_;
    auto n = std::make_shared<ExprNode>();
    n->op = ExprNode::Op::Literal;
    n->kind = Kind::Text;
    for (;;) {
      if (at_ >= text_.size()) bad("a string is not closed");
      if (text_[at_] == '\'') {
        if (at_ + 1 < text_.size() && text_[at_ + 1] == '\'') {
          n->text += '\'';
          at_ += 2;
          continue;
        }
        ++at_;
        return n;
      }
      n->text += text_[at_++];
    }
  }

  std::shared_ptr<const ExprNode> column() {
    std::string name;
    if (text_[at_] == '[') {
      const auto end = text_.find(']', at_);
      if (end == std::string::npos) bad("a [ is not closed");
      name = text_.substr(at_ + 1, end - at_ - 1);
      at_ = end + 1;
    } else {
      while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_'))
        name += text_[at_++];
    }
    const Expression::Operand* found = nullptr;
    for (const auto& c : columns_) {
      if (iequals(c.name, name)) found = &c;
    }
    if (found == nullptr) refuse(what_, "Invalid column name '" + name + "' (error 207) in '" + text_ + "'", 207);
    if (found->computed) {
      refuse(what_,
             "Computed column '" + found->name +
                 "' is not allowed to be used in another computed-column definition (error 1759); use the "
                 "columns it is computed from",
             1759);
    }
    if (!usable(found->type)) {
      refuse(what_, "column " + found->name + " of type " + found->type.canonical() +
                        " cannot be used in a computed column here (the emulator computes over numbers and "
                        "character types)");
    }
    auto n = std::make_shared<ExprNode>();
    n->op = ExprNode::Op::Column;
    n->kind = kind_of(found->type);
    n->scale = n->kind == Kind::Dec ? found->type.scale : 0;
    std::size_t index = used_.size();
    for (std::size_t i = 0; i < used_.size(); ++i) {
      if (used_[i] == found->column_id) index = i;
    }
    if (index == used_.size()) {
      used_.push_back(found->column_id);
      used_types_.push_back(found->type);
    }
    n->column = index;
    return n;
  }

  const std::string& text_;
  const std::vector<Expression::Operand>& columns_;
  const std::string& what_;
  std::vector<std::int64_t>& used_;
  std::vector<SqlType>& used_types_;
  std::size_t at_ = 0;
};

[[noreturn]] void overflow(const std::string& what) {
  throw Error(ErrorKind::EmuConstraint,
              what + ": Arithmetic overflow error converting expression to data type numeric (error 8115)", 8115);
}

double as_double(const Val& v) {
  if (v.kind == Kind::Float) return v.f;
  return static_cast<double>(v.n) / static_cast<double>(pow10(v.kind == Kind::Dec ? v.scale : 0));
}

// Scales stay at most 38 (literals and products are checked), so pow10 fits in 128 bits.
Val promote(const Val& v, Kind to, int scale, const std::string& what) {
  Val out = v;
  out.kind = to;
  if (to == Kind::Float) {
    out.f = as_double(v);
  } else if (to == Kind::Dec) {
    if (__builtin_mul_overflow(v.n, pow10(scale - (v.kind == Kind::Dec ? v.scale : 0)), &out.n)) overflow(what);
    out.scale = scale;
  }
  return out;
}

Val apply(const ExprNode& n, const Val& a, const Val& b, const std::string& what) {
  Val out;
  if (a.null || b.null) {
    out.null = true;
    return out;
  }
  if (n.kind == Kind::Text) {
    out.kind = Kind::Text;
    out.s = a.s + b.s;
    return out;
  }
  const int scale = std::max(a.kind == Kind::Dec ? a.scale : 0, b.kind == Kind::Dec ? b.scale : 0);
  const bool multiply = n.op == ExprNode::Op::Mul;
  const Val x = multiply && n.kind == Kind::Dec ? promote(a, Kind::Dec, a.kind == Kind::Dec ? a.scale : 0, what)
                                                : promote(a, n.kind, scale, what);
  const Val y = multiply && n.kind == Kind::Dec ? promote(b, Kind::Dec, b.kind == Kind::Dec ? b.scale : 0, what)
                                                : promote(b, n.kind, scale, what);
  out.kind = n.kind;
  out.scale = multiply ? x.scale + y.scale : scale;
  if (n.kind == Kind::Dec && out.scale > 38) overflow(what);  // refused at definition already
  if (n.kind == Kind::Float) {
    if (n.op == ExprNode::Op::Div && y.f == 0)
      throw Error(ErrorKind::EmuConstraint, what + ": Divide by zero error encountered (error 8134)", 8134);
    out.f = n.op == ExprNode::Op::Add   ? x.f + y.f
            : n.op == ExprNode::Op::Sub ? x.f - y.f
            : multiply                  ? x.f * y.f
                                        : x.f / y.f;
    if (!std::isfinite(out.f)) overflow(what);
    return out;
  }
  switch (n.op) {
    case ExprNode::Op::Add: out.n = x.n + y.n; break;
    case ExprNode::Op::Sub: out.n = x.n - y.n; break;
    case ExprNode::Op::Mul:
      if (__builtin_mul_overflow(x.n, y.n, &out.n)) overflow(what);
      break;
    default:
      if (y.n == 0)
        throw Error(ErrorKind::EmuConstraint, what + ": Divide by zero error encountered (error 8134)", 8134);
      out.n = x.n / y.n;  // integer division truncates toward zero, as SQL Server's
  }
  if (out.n >= kLimit || out.n <= -kLimit) overflow(what);
  return out;
}

Val eval(const ExprNode& n, const std::vector<Val>& cols, const std::string& what) {
  switch (n.op) {
    case ExprNode::Op::Column: return cols[n.column];
    case ExprNode::Op::Literal: {
      Val v;
      v.kind = n.kind;
      v.n = n.number;
      v.scale = n.scale;
      v.s = n.text;
      return v;
    }
    case ExprNode::Op::Neg: {
      Val v = eval(*n.left, cols, what);
      v.n = -v.n;
      v.f = -v.f;
      return v;
    }
    default: return apply(n, eval(*n.left, cols, what), eval(*n.right, cols, what), what);
  }
}

std::string dec_text(__int128 n, int scale) {
  const bool negative = n < 0;
  if (negative) n = -n;
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(n % 10)));
    n /= 10;
  } while (n != 0);
  while (static_cast<int>(digits.size()) <= scale) digits.insert(digits.begin(), '0');
  if (scale > 0) digits.insert(digits.end() - scale, '.');
  return (negative ? "-" : "") + digits;
}

}  // namespace

Expression Expression::parse(const std::string& text, const std::vector<Operand>& columns, const SqlType& result,
                             const std::string& what) {
  Expression e;
  e.text_ = text;
  e.what_ = what;
  e.result_ = result;
  e.root_ = Parser(text, columns, what, e.columns_, e.column_types_).whole();
  const Kind got = e.root_->kind;
  const Family want = result.family();
  const bool fits = got == Kind::Text ? want == Family::Character
                                      : want == Family::Exact || want == Family::Approximate ||
                                            (got == Kind::Int && want == Family::Integer);
  if (!fits) {
    refuse(what, "the expression '" + text + "' gives " +
                     (got == Kind::Text  ? "a string"
                      : got == Kind::Int ? "an integer"
                                         : "a fractional number") +
                     ", which the emulator does not convert to " + result.canonical() +
                     "; declare a type of its family (a character type for strings, decimal or float for "
                     "fractions)");
  }
  return e;
}

Cell Expression::evaluate_cells(const std::vector<Cell>& cells) const {
  std::vector<Val> vals;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    Val v;
    const Cell& c = cells[i];
    v.kind = kind_of(column_types_[i]);
    if (c.is_null()) {
      v.null = true;
    } else if (v.kind == Kind::Int) {
      v.n = c.i;
    } else if (v.kind == Kind::Dec) {
      v.n = decimal_decode(c.s);
      v.scale = column_types_[i].scale;
    } else if (v.kind == Kind::Float) {
      v.f = c.d;
    } else {
      v.s = c.s;
    }
    vals.push_back(std::move(v));
  }
  const Val r = eval(*root_, vals, what_);
  if (r.null) return Cell::null();
  Value out;
  if (r.kind == Kind::Text) {
    out.kind = Value::Kind::Text;
    out.s = r.s;
  } else if (result_.family() == Family::Approximate) {
    out.kind = Value::Kind::Float;
    out.f = as_double(r);
  } else if (r.kind == Kind::Float) {
    out.kind = Value::Kind::Float;
    out.f = r.f;
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, r.f);
    out.s.assign(buf, res.ptr);
  } else if (r.kind == Kind::Dec) {
    out.kind = Value::Kind::Decimal;
    out.s = dec_text(r.n, r.scale);
  } else {
    if (r.n > std::numeric_limits<std::int64_t>::max() || r.n < std::numeric_limits<std::int64_t>::min())
      overflow(what_);
    out.kind = Value::Kind::Int;
    out.i = static_cast<std::int64_t>(r.n);
  }
  return coerce(out, result_, what_);
}

std::optional<std::string> split_computed(std::string& type_text) {
  // " as " between the type and the expression; a type never contains that word.
  const std::string low = ascii_lower(type_text);
  std::size_t at = std::string::npos;
  for (std::size_t i = 0; i + 2 <= low.size(); ++i) {
    const bool before = i == 0 || std::isspace(static_cast<unsigned char>(low[i - 1])) || low[i - 1] == ')';
    const bool after = i + 2 == low.size() || std::isspace(static_cast<unsigned char>(low[i + 2])) || low[i + 2] == '(';
    if (low.compare(i, 2, "as") == 0 && before && after) {
      at = i;
      break;
    }
  }
  if (at == std::string::npos) return std::nullopt;
  std::string expr = ascii_trim(std::string_view(type_text).substr(at + 2));
  type_text = type_text.substr(0, at);
  while (!type_text.empty() && std::isspace(static_cast<unsigned char>(type_text.back()))) type_text.pop_back();
  return expr;
}

void store_computed(Db& db, std::int64_t table_id, std::int64_t column_id, const std::string& expression) {
  meta_set(db, "computed." + std::to_string(table_id) + "." + std::to_string(column_id), expression);
}

std::vector<std::pair<std::int64_t, std::string>> load_computed(Db& db, std::int64_t table_id) {
  std::vector<std::pair<std::int64_t, std::string>> out;
  const std::string prefix = "computed." + std::to_string(table_id) + ".";
  auto st = db.prepare("SELECT key, value FROM emu_meta WHERE key >= ? AND key < ? ORDER BY key");
  st.bind(1, std::string_view(prefix)).bind(2, std::string_view(prefix.substr(0, prefix.size() - 1) + "/"));
  while (st.step()) out.emplace_back(std::stoll(st.text(0).substr(prefix.size())), st.text(1));
  return out;
}

}  // namespace mssqlcdc::emu
