#include "mssqlcdc/tds/statements.hpp"

#include <cstdio>
#include <utility>

#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/builtins.hpp"
#include "mssqlcdc/tds/catalog.hpp"
#include "mssqlcdc/tds/select.hpp"
#include "mssqlcdc/tds/tsql.hpp"

namespace mssqlcdc::tds {
namespace {

[[noreturn]] void syntax_error_near(const SqlToken* t) {
  sql_error(102, "Incorrect syntax near '" + (t == nullptr ? std::string(";") : t->text) + "'.");
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
    case 156:
    case 195:
      m.severity = 15;
      m.state = number == 195 ? 10 : 1;
      break;
    case 2812: m.state = 62; break;
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
      catalog_(emulator_catalog(*reader_, name_)) {}

Database::~Database() = default;

void Database::run(std::string_view sql, const Params& params, std::vector<StatementResult>& done) {
  const auto statements = split_statements(lex(sql));
  for (std::size_t i = 0; i < statements.size(); ++i) done.push_back(run_statement(statements[i], params, i == 0));
}

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
  if (head.is("EXEC") || head.is("EXECUTE") || (first && head.is_name() && !is_keyword(head))) {
    if (head.is("EXEC") || head.is("EXECUTE")) c.next();
    if (c.peek() == nullptr || !c.peek()->is_name()) syntax_error_near(c.peek());
    sql_error(2812, "Could not find stored procedure '" + dotted_name(c) + "'.");
  }
  if (!head.is("SELECT")) {
    if (head.is("INSERT") || head.is("UPDATE") || head.is("DELETE")) {
      std::size_t at = 1;
      while (at < tokens.size() && (tokens[at].is("INTO") || tokens[at].is("FROM") || tokens[at].is("TOP"))) ++at;
      if (at < tokens.size() && tokens[at].is_name()) {
        std::vector<SqlToken> rest(tokens.begin() + static_cast<std::ptrdiff_t>(at), tokens.end());
        Cursor rc(rest);
        sql_error(208, "Invalid object name '" + dotted_name(rc) + "'.");
      }
    }
    syntax_error_near(&head);
  }
  // SELECT: the query engine (select.hpp) over this connection's catalog; rows stream to the writer.
  RowSource rows = run_select(parse_select(tokens), *catalog_, params);
  return StatementResult{ResultSet{std::move(rows.columns), {}, std::move(rows.next)}, std::nullopt};
}

}  // namespace mssqlcdc::tds
