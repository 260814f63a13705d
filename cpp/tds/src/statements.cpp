#include "statements.hpp"

#include <cstdio>
#include <utility>

#include "builtins.hpp"
#include "catalog.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "procedures.hpp"
#include "select.hpp"
#include "tsql.hpp"

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

// SET TRANSACTION ISOLATION LEVEL and SET LOCK_TIMEOUT set the reader's session (its source-table
// reads wait for row locks by them, decision 1335); other session options change nothing the
// emulator models.
void set_option(Cursor& c, emu::Reader& reader) {
  c.next();  // SET
  if (c.accept_word("TRANSACTION")) {
    if (!c.accept_word("ISOLATION") || !c.accept_word("LEVEL")) syntax_error_near(c.peek());
    emu::Isolation level = emu::Isolation::ReadCommitted;
    if (c.accept_word("SNAPSHOT")) {
      level = emu::Isolation::Snapshot;
    } else if (c.accept_word("READ")) {
      if (c.accept_word("UNCOMMITTED")) {
        level = emu::Isolation::ReadUncommitted;
      } else if (!c.accept_word("COMMITTED")) {
        syntax_error_near(c.peek());
      }
    } else if (c.accept_word("REPEATABLE")) {
      if (!c.accept_word("READ")) syntax_error_near(c.peek());
    } else if (!c.accept_word("SERIALIZABLE")) {
      syntax_error_near(c.peek());
    }
    reader.set_isolation(level);
    return;
  }
  if (c.accept_word("LOCK_TIMEOUT")) {
    const bool negative = c.accept_symbol('-');
    const SqlToken* n = c.next();
    if (n == nullptr || n->kind != TokenKind::Number || n->text.size() > 10 ||
        n->text.find_first_not_of("0123456789") != std::string::npos) {
      syntax_error_near(n);
    }
    const std::int64_t ms = std::stoll(n->text);
    reader.set_lock_timeout(negative ? -1 : ms);
  }
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
    case 191:
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

Database::Database(const std::filesystem::path& file, std::string name, const std::string& login)
    : name_(std::move(name)),
      reader_(std::make_unique<emu::Reader>(file)),
      catalog_(emulator_catalog(*reader_, name_)),
      storage_(std::make_unique<Storage>(file, *reader_)) {
  reader_->act_as(login.empty() ? std::nullopt : std::optional<std::string>(login), name_, false);
}

Database::~Database() = default;

void Database::run(std::string_view sql, const Params& params, std::vector<StatementResult>& done) {
  const auto statements = split_statements(lex(sql));
  for (std::size_t i = 0; i < statements.size(); ++i) done.push_back(run_statement(statements[i], params, i == 0));
}

std::vector<ResultSet> Database::call(const ProcCall& call) { return run_procedure(*storage_, call); }

StatementResult Database::run_statement(const std::vector<SqlToken>& tokens, const Params& params, bool first) {
  Cursor c(tokens);
  const SqlToken& head = tokens.front();
  // SQL Server answers session options with no rows.
  if (head.is("SET")) {
    set_option(c, *reader_);
    return {};
  }
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
  // SELECT: the query engine (select.hpp) over this connection's catalog; rows stream to the writer.
  RowSource rows = run_select(parse_select(tokens), *catalog_, params);
  return StatementResult{ResultSet{std::move(rows.columns), {}, std::move(rows.next)}, std::nullopt};
}

}  // namespace mssqlcdc::tds
