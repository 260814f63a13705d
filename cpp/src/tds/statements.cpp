#include "mssqlcdc/tds/statements.hpp"

#include <cstdio>
#include <utility>

#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/procedures.hpp"
#include "mssqlcdc/tds/tsql.hpp"

namespace mssqlcdc::tds {
namespace {

constexpr const char* kVersionText =
    "Microsoft SQL Server 2022 (RTM) - 16.0.1000.6 (X64)\n\tmssql-cdc emulator (TDS front end)\n";

[[noreturn]] void sql_error(int number, const std::string& text) { throw Error(ErrorKind::Sql, text, number); }

[[noreturn]] void syntax_error_near(const SqlToken* t) {
  sql_error(102, "Incorrect syntax near '" + (t == nullptr ? std::string(";") : t->text) + "'.");
}

ColumnType text_type(SqlKind kind, std::uint16_t length) { return ColumnType{kind, length, 0, 0, false}; }
const ColumnType kLsnType = ColumnType{SqlKind::Binary, 10, 0, 0, false};

Value lsn_value(const std::optional<Lsn>& lsn) {
  if (!lsn) return std::monostate{};
  return Bytes(lsn->bytes().begin(), lsn->bytes().end());
}

// A cursor over one statement's tokens.
class Cursor {
 public:
  explicit Cursor(const std::vector<SqlToken>& tokens) : t_(tokens) {}
  [[nodiscard]] const SqlToken* peek(std::size_t ahead = 0) const {
    return i_ + ahead < t_.size() ? &t_[i_ + ahead] : nullptr;
  }
  const SqlToken* next() { return i_ < t_.size() ? &t_[i_++] : nullptr; }
  bool accept_word(std::string_view w) {
    if (peek() != nullptr && peek()->is(w)) return ++i_, true;
    return false;
  }
  bool accept_symbol(char c) {
    if (peek() != nullptr && peek()->is_symbol(c)) return ++i_, true;
    return false;
  }
  void expect_symbol(char c) {
    if (!accept_symbol(c)) syntax_error_near(peek());
  }
  [[nodiscard]] bool at_end() const { return i_ >= t_.size(); }

 private:
  const std::vector<SqlToken>& t_;
  std::size_t i_ = 0;
};

// A dotted name as written: sys.fn_cdc_get_max_lsn, [dbo].[orders].
std::string dotted_name(Cursor& c) {
  std::string name = c.next()->text;
  while (c.peek() != nullptr && c.peek()->is_symbol('.') && c.peek(1) != nullptr && c.peek(1)->is_name()) {
    c.next();
    name += "." + c.next()->text;
  }
  return name;
}

std::string hex_text(const Bytes& b) {
  std::string out = "0x";
  char buf[3];
  for (const std::uint8_t x : b) {
    std::snprintf(buf, sizeof buf, "%02X", x);
    out += buf;
  }
  return out;
}

std::string as_text(const TypedValue& v) {
  if (const auto* s = std::get_if<std::string>(&v.value)) return *s;
  if (const auto* i = std::get_if<std::int64_t>(&v.value)) return std::to_string(*i);
  sql_error(8116, "Argument data type " + type_name(v.type) + " is invalid for argument 1 of this function.");
}

class Evaluator {
 public:
  Evaluator(emu::Reader& reader, const Database& db, const Params& params)
      : reader_(reader), db_(db), params_(params) {}

  TypedValue expression(Cursor& c) {
    const SqlToken* t = c.peek();
    if (t == nullptr) syntax_error_near(nullptr);
    switch (t->kind) {
      case TokenKind::String:
      case TokenKind::UnicodeString: {
        c.next();
        const auto n = static_cast<std::uint16_t>(std::max<std::size_t>(1, utf16_units(t->text)));
        return {text_type(t->kind == TokenKind::String ? SqlKind::VarChar : SqlKind::NVarChar, n), t->text};
      }
      case TokenKind::Number: c.next(); return number(*t);
      case TokenKind::Variable: c.next(); return variable(t->text);
      case TokenKind::Word:
      case TokenKind::QuotedName: break;
      case TokenKind::Symbol:
        if (t->is_symbol('-') && c.peek(1) != nullptr && c.peek(1)->kind == TokenKind::Number) {
          c.next();
          TypedValue v = number(*c.next());
          if (auto* i = std::get_if<std::int64_t>(&v.value)) *i = -*i;
          return v;
        }
        syntax_error_near(t);
    }
    if (t->is("NULL")) {
      c.next();
      return {ColumnType{SqlKind::Int}, std::monostate{}};
    }
    if (t->is("CONVERT") && c.peek(1) != nullptr && c.peek(1)->is_symbol('(')) return convert(c);
    const std::string name = dotted_name(c);
    if (!c.accept_symbol('(')) sql_error(207, "Invalid column name '" + name + "'.");
    std::vector<TypedValue> args;
    if (!c.accept_symbol(')')) {
      do {
        args.push_back(expression(c));
      } while (c.accept_symbol(','));
      c.expect_symbol(')');
    }
    return call(name, args);
  }

 private:
  TypedValue number(const SqlToken& t) {
    if (t.text.find_first_of(".eE") != std::string::npos) syntax_error_near(&t);  // decimals: later
    try {
      const long long v = std::stoll(t.text);
      const bool small = v >= INT32_MIN && v <= INT32_MAX;
      return {ColumnType{small ? SqlKind::Int : SqlKind::BigInt}, static_cast<std::int64_t>(v)};
    } catch (const std::exception&) {
      syntax_error_near(&t);
    }
  }

  TypedValue variable(const std::string& text) {
    const std::string name = lower(text);
    if (name == "@@version") return {text_type(SqlKind::NVarChar, 300), std::string(kVersionText)};
    if (name == "@@spid") return {ColumnType{SqlKind::SmallInt}, std::int64_t{51}};
    if (name == "@@trancount") return {ColumnType{SqlKind::Int}, std::int64_t{0}};
    if (name == "@@servername") return {text_type(SqlKind::NVarChar, 128), std::string("mssql-cdc-emulator")};
    if (name == "@@language") return {text_type(SqlKind::NVarChar, 128), std::string("us_english")};
    if (name == "@@max_precision") return {ColumnType{SqlKind::TinyInt}, std::int64_t{38}};
    const auto it = params_.find(name);
    if (it == params_.end()) sql_error(137, "Must declare the scalar variable \"" + text + "\".");
    return it->second;
  }

  // CONVERT(type(n), expr [, style]) to character types: binary with style 1 or 2 as hex
  // (with or without 0x), text and integers as text. Other targets are not read yet.
  TypedValue convert(Cursor& c) {
    c.next();
    c.expect_symbol('(');
    const SqlToken* type = c.next();
    if (type == nullptr || !type->is_name()) syntax_error_near(type);
    const std::string target = lower(type->text);
    std::uint16_t length = 30;
    if (c.accept_symbol('(')) {
      const SqlToken* n = c.next();
      if (n == nullptr || (n->kind != TokenKind::Number && !n->is("max"))) syntax_error_near(n);
      length = n->is("max") ? kMax : static_cast<std::uint16_t>(std::stoi(n->text));
      c.expect_symbol(')');
    }
    c.expect_symbol(',');
    const TypedValue v = expression(c);
    int style = 0;
    if (c.accept_symbol(',')) {
      const SqlToken* s = c.next();
      if (s == nullptr || s->kind != TokenKind::Number) syntax_error_near(s);
      style = static_cast<int>(std::get<std::int64_t>(number(*s).value));
    }
    c.expect_symbol(')');
    const SqlKind kind = target == "varchar"    ? SqlKind::VarChar
                         : target == "nvarchar" ? SqlKind::NVarChar
                         : target == "char"     ? SqlKind::Char
                         : target == "nchar"    ? SqlKind::NChar
                                                : SqlKind::Int;
    if (kind == SqlKind::Int) {
      sql_error(529, "Explicit conversion from data type " + type_name(v.type) + " to " + target +
                         " is not supported by the emulator's TDS front end yet.");
    }
    const ColumnType out = text_type(kind, length);
    if (is_null(v.value)) return {out, std::monostate{}};
    std::string text;
    if (const auto* b = std::get_if<Bytes>(&v.value)) {
      text = hex_text(*b);
      if (style == 2) text = text.substr(2);
      if (style == 0) text.assign(b->begin(), b->end());
    } else {
      text = as_text(v);
    }
    if (length != kMax && text.size() > length) text.resize(length);  // CONVERT truncates text
    return {out, text};
  }

  TypedValue call(const std::string& name, const std::vector<TypedValue>& args) {
    const std::string fn = lower(name);
    const auto arity = [&](std::size_t n) {
      if (args.size() != n) {
        sql_error(174, "The " + name + " function requires " + std::to_string(n) + " argument(s).");
      }
    };
    if (fn == "sys.fn_cdc_get_max_lsn") {
      arity(0);
      return {kLsnType, lsn_value(reader_.max_lsn())};
    }
    if (fn == "sys.fn_cdc_get_min_lsn") {
      arity(1);
      if (is_null(args[0].value)) return {kLsnType, Bytes(10, 0)};
      const auto m = reader_.min_lsn(as_text(args[0]));
      if (m.state == emu::MinLsn::State::NotEstablished) return {kLsnType, std::monostate{}};
      return {kLsnType, lsn_value(m.lsn)};
    }
    if (fn == "db_name") {
      if (args.size() > 1) arity(0);
      return {text_type(SqlKind::NVarChar, 128), db_.name()};
    }
    if (name.find('.') == std::string::npos) {
      sql_error(195, "'" + name + "' is not a recognized built-in function name.");
    }
    const std::string first = name.substr(0, name.find('.'));
    sql_error(4121, "Cannot find either column \"" + first + "\" or the user-defined function or aggregate \"" + name +
                        "\", or the name is ambiguous.");
  }

  emu::Reader& reader_;
  const Database& db_;
  const Params& params_;
};

// The first name after a top-level FROM, for error 208.
std::optional<std::string> from_object(const std::vector<SqlToken>& tokens) {
  int depth = 0;
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (tokens[i].is_symbol('(')) ++depth;
    if (tokens[i].is_symbol(')')) --depth;
    if (depth == 0 && tokens[i].is("FROM") && tokens[i + 1].is_name()) {
      std::vector<SqlToken> rest(tokens.begin() + static_cast<std::ptrdiff_t>(i) + 1, tokens.end());
      Cursor c(rest);
      return dotted_name(c);
    }
  }
  return std::nullopt;
}

bool is_keyword(const SqlToken& t) {
  // Reserved words that start statements: a batch starting with any other word is a call.
  static const char* const kKeywords[] = {
      "SELECT",  "INSERT",  "UPDATE", "DELETE", "MERGE",      "CREATE",  "ALTER",    "DROP",    "IF",
      "WHILE",   "DECLARE", "BEGIN",  "COMMIT", "ROLLBACK",   "WITH",    "SET",      "USE",     "EXEC",
      "EXECUTE", "PRINT",   "RETURN", "GRANT",  "REVOKE",     "DENY",    "TRUNCATE", "WAITFOR", "RAISERROR",
      "THROW",   "OPEN",    "CLOSE",  "FETCH",  "DEALLOCATE", "DBCC",    "KILL",     "BULK",    "CHECKPOINT",
      "BACKUP",  "RESTORE", "SAVE",   "GOTO",   "BREAK",      "CONTINUE"};
  for (const char* k : kKeywords) {
    if (t.is(k)) return true;
  }
  return false;
}

}  // namespace

ServerMessage server_error(int number, const std::string& text) {
  ServerMessage m;
  m.number = number;
  m.text = text;
  m.severity = 16;
  m.state = 1;
  switch (number) {
    case 102:
    case 105:
    case 195:
      m.severity = 15;
      m.state = number == 195 ? 10 : 1;
      break;
    case 2812: m.state = 62; break;
    case 119: m.severity = 15; break;
    case 201: m.state = 4; break;
    case 515:
    case 8144:
    case 8145: m.state = 2; break;
    case 2627: m.severity = 14; break;
    case 137:
      m.severity = 15;
      m.state = 2;
      break;
    case 18456: m.severity = 14; break;
    case 4060: m.severity = 11; break;
    default: break;
  }
  return m;
}

Database::Database(const std::filesystem::path& file, std::string name)
    : name_(std::move(name)),
      reader_(std::make_unique<emu::Reader>(file)),
      storage_(std::make_unique<Storage>(file, *reader_)) {}

Database::~Database() = default;

void Database::run(std::string_view sql, const Params& params, std::vector<StatementResult>& done) {
  const auto statements = split_statements(lex(sql));
  for (std::size_t i = 0; i < statements.size(); ++i) done.push_back(run_statement(statements[i], params, i == 0));
}

std::vector<ResultSet> Database::call(const ProcCall& call) { return run_procedure(*storage_, call); }

StatementResult Database::run_statement(const std::vector<SqlToken>& tokens, const Params& params, bool first) {
  Cursor c(tokens);
  const SqlToken& head = tokens.front();
  // Session options change nothing the emulator models; SQL Server answers them with no rows.
  if (head.is("SET")) return {};
  if (head.is("USE")) {
    c.next();
    if (c.peek() == nullptr || !c.peek()->is_name()) syntax_error_near(c.peek());
    const std::string db = c.next()->text;
    if (lower(db) != lower(name_)) {
      sql_error(911, "Database '" + db + "' does not exist. Make sure that the name is entered correctly.");
    }
    return StatementResult{std::nullopt, name_};
  }
  // A batch whose first word is no keyword is a call, as in SQL Server.
  if (head.is("EXEC") || head.is("EXECUTE") || (first && head.is_name() && !is_keyword(head))) {
    const std::size_t from = head.is("EXEC") || head.is("EXECUTE") ? 1 : 0;
    return StatementResult{std::nullopt, std::nullopt, run_procedure(*storage_, parse_exec(tokens, from, params)),
                           std::nullopt};
  }
  if (head.is("INSERT") || head.is("UPDATE") || head.is("DELETE")) {
    return StatementResult{std::nullopt, std::nullopt, std::nullopt, run_write(*storage_, tokens, params, name_)};
  }
  if (!head.is("SELECT")) syntax_error_near(&head);
  // No table is readable over the wire yet, so any FROM names an object this server lacks.
  if (const auto object = from_object(tokens)) sql_error(208, "Invalid object name '" + *object + "'.");
  c.next();
  Evaluator eval(*reader_, *this, params);
  ResultSet rs;
  std::vector<Value> row;
  do {
    TypedValue v = eval.expression(c);
    std::string alias;
    if (c.accept_word("AS")) {
      if (c.peek() == nullptr || (!c.peek()->is_name() && c.peek()->kind != TokenKind::String)) {
        syntax_error_near(c.peek());
      }
      alias = c.next()->text;
    } else if (c.peek() != nullptr && c.peek()->is_name() && !is_keyword(*c.peek())) {
      alias = c.next()->text;
    }
    rs.columns.push_back(Column{alias, v.type, true});
    row.push_back(std::move(v.value));
  } while (c.accept_symbol(','));
  if (!c.at_end()) syntax_error_near(c.peek());
  rs.rows.push_back(std::move(row));
  return StatementResult{std::move(rs), std::nullopt};
}

}  // namespace mssqlcdc::tds
