#include "statements.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>

#include "batch.hpp"
#include "builtins.hpp"
#include "catalog.hpp"
#include "ddl.hpp"
#include "jobs.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "procedures.hpp"
#include "security.hpp"
#include "select.hpp"
#include "tsql.hpp"
#include "write_values.hpp"

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

// SET STATISTICS IO's message for each table a statement read (error 3615's text, severity 0),
// as SQL Server names the table: without its schema. Scan count adds seeks and scans; the
// emulator has no pages, so logical reads are the stored rows it stepped over (decision 1411).
std::vector<ServerMessage> statistics_io_messages(const emu::IoByTable& tables) {
  std::vector<ServerMessage> out;
  for (const auto& [name, io] : tables) {
    const auto dot = name.find('.');
    const std::string table = dot == std::string::npos ? name : name.substr(dot + 1);
    ServerMessage m;
    m.number = 3615;
    m.severity = 0;
    m.text = "Table '" + table + "'. Scan count " + std::to_string(io.scans + io.seeks) + ", logical reads " +
             std::to_string(io.rows_read) +
             ", physical reads 0, read-ahead reads 0, lob logical reads 0, lob physical reads 0, lob read-ahead "
             "reads 0.";
    out.push_back(std::move(m));
  }
  return out;
}

// The transaction or savepoint name a statement gives: a name, or a character @variable's value.
std::string transaction_name(const std::vector<SqlToken>& tokens, const Params& params) {
  const std::size_t at = tokens.size() > 1 && (tokens[1].is("TRAN") || tokens[1].is("TRANSACTION")) ? 2 : 1;
  if (at >= tokens.size()) return "";
  const SqlToken& t = tokens[at];
  if (t.kind == TokenKind::Variable) {
    const auto it = params.find(lower(t.text));
    if (it == params.end()) sql_error(137, "Must declare the scalar variable \"" + t.text + "\".");
    if (const auto* s = std::get_if<std::string>(&it->second.value)) return *s;
    return "";
  }
  return t.text;
}

// Batch variables (DECLARE, SET @v, SELECT @v =): each value is computed by the query engine as
// SELECT CAST((expr) AS type), so conversions and errors are those of CAST.
SqlToken symbol_token(char c) { return SqlToken{TokenKind::Symbol, std::string(1, c)}; }
SqlToken word_token(const std::string& w) { return SqlToken{TokenKind::Word, w}; }

void append_cast(std::vector<SqlToken>& out, const std::vector<SqlToken>& expr, const std::vector<SqlToken>& type) {
  out.push_back(word_token("CAST"));
  out.push_back(symbol_token('('));
  out.push_back(symbol_token('('));
  if (expr.empty()) {
    out.push_back(word_token("NULL"));
  } else {
    out.insert(out.end(), expr.begin(), expr.end());
  }
  out.push_back(symbol_token(')'));
  out.push_back(word_token("AS"));
  out.insert(out.end(), type.begin(), type.end());
  out.push_back(symbol_token(')'));
}

// The tokens from `at` to the next top-level `stop` symbol (or the end); advances `at` there.
std::vector<SqlToken> until_symbol(const std::vector<SqlToken>& t, std::size_t& at, const std::string& stops,
                                   bool stop_at_from = false) {
  std::vector<SqlToken> out;
  int depth = 0;
  for (; at < t.size(); ++at) {
    const SqlToken& x = t[at];
    if (depth == 0 && x.kind == TokenKind::Symbol && x.text.size() == 1 && stops.find(x.text[0]) != std::string::npos)
      break;
    if (depth == 0 && stop_at_from && x.kind == TokenKind::Word && x.is("FROM")) break;
    if (x.is_symbol('(')) ++depth;
    if (x.is_symbol(')')) --depth;
    out.push_back(x);
  }
  return out;
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
    case 134:
    case 141:
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
    case 701: m.severity = 17; break;  // MSSQLSERVER_701: insufficient resources
    case 103:
      m.severity = 15;
      m.state = 4;
      break;
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
      catalog_(emulator_catalog(*reader_, name_, login, [this] { return job_views(storage_->writer(), name_); })),
      storage_(std::make_unique<Storage>(file, *reader_, name_)),
      batch_catalog_(std::make_unique<BatchCatalog>(*catalog_)) {
  reader_->act_as(login.empty() ? std::nullopt : std::optional<std::string>(login), name_, false);
}

Database::~Database() = default;

Params Database::session_params(const Params& params) const {
  Params with_session = params;
  with_session["@@trancount"] = TypedValue{ColumnType{SqlKind::Int}, std::int64_t{storage_->trancount()}};
  return with_session;
}

std::optional<std::vector<TypedValue>> Database::evaluate(const std::vector<SqlToken>& select, const Params& params) {
  RowSource rows = run_select(parse_select(select), *batch_catalog_, session_params(params));
  std::optional<std::vector<TypedValue>> last;
  std::vector<Value> row;
  while (rows.next(row)) {
    last.emplace();
    for (std::size_t k = 0; k < row.size(); ++k) last->push_back(TypedValue{rows.columns[k].type, row[k]});
  }
  return last;
}

bool Database::run_variables(const std::vector<SqlToken>& t, Params& vars, Declared& declared, StatementResult& out) {
  const SqlToken& head = t.front();
  const auto type_of = [&](const SqlToken& v) -> const std::vector<SqlToken>& {
    const auto it = declared.find(lower(v.text));
    if (it == declared.end()) sql_error(137, "Must declare the scalar variable \"" + v.text + "\".");
    return it->second;
  };
  if (head.is("DECLARE")) {
    std::size_t at = 1;
    while (true) {
      if (at >= t.size() || t[at].kind != TokenKind::Variable) syntax_error_near(at < t.size() ? &t[at] : nullptr);
      const SqlToken& v = t[at++];
      if (at < t.size() && t[at].is("AS")) ++at;
      std::vector<SqlToken> type = until_symbol(t, at, ",=");
      if (type.empty() || type.front().is("CURSOR")) {
        sql_error(50000, "The emulator's TDS front end has no cursors; " + v.text +
                             " cannot be one. Read the rows with a SELECT, or into a table variable.");
      }
      if (declared.count(lower(v.text)) == 0 && type.front().is("TABLE")) {
        // DECLARE @t TABLE (definition): a table variable of the batch (local_tables.hpp).
        if (type.size() < 3 || !type[1].is_symbol('(') || !type.back().is_symbol(')')) syntax_error_near(&type.front());
        batch_catalog_->declare(v.text, table_columns(std::vector<SqlToken>(type.begin() + 2, type.end() - 1)));
        declared[lower(v.text)] = std::move(type);
        if (at >= t.size()) break;
        ++at;
        continue;
      }
      std::vector<SqlToken> expr;
      if (at < t.size() && t[at].is_symbol('=')) {
        ++at;
        expr = until_symbol(t, at, ",");
      }
      if (declared.count(lower(v.text)) != 0) {
        sql_error(134, "The variable name '" + v.text +
                           "' has already been declared. Variable names must be unique "
                           "within a query batch or stored procedure.");
      }
      std::vector<SqlToken> select{word_token("SELECT")};
      append_cast(select, expr, type);
      vars[lower(v.text)] = evaluate(select, vars)->front();
      declared[lower(v.text)] = std::move(type);
      if (at >= t.size()) break;
      ++at;  // ','
    }
    return true;
  }
  if (head.is("SET") && t.size() > 1 && t[1].kind == TokenKind::Variable) {
    const std::vector<SqlToken>& type = type_of(t[1]);
    if (t.size() < 4 || !t[2].is_symbol('=')) syntax_error_near(t.size() > 2 ? &t[2] : nullptr);
    std::vector<SqlToken> select{word_token("SELECT")};
    append_cast(select, std::vector<SqlToken>(t.begin() + 3, t.end()), type);
    vars[lower(t[1].text)] = evaluate(select, vars)->front();
    return true;
  }
  if (head.is("SELECT") && t.size() > 2 && t[1].kind == TokenKind::Variable && t[2].is_symbol('=')) {
    // SELECT @a = e1, @b = e2 [FROM ...]: the last row's values; none leaves the variables as they were.
    std::vector<std::string> names;
    std::vector<SqlToken> select{word_token("SELECT")};
    std::size_t at = 1;
    while (true) {
      if (at + 1 >= t.size() || t[at].kind != TokenKind::Variable || !t[at + 1].is_symbol('=')) {
        sql_error(141,
                  "A SELECT statement that assigns a value to a variable must not be combined with "
                  "data-retrieval operations.");
      }
      const SqlToken& v = t[at];
      at += 2;
      if (names.size() > 0) select.push_back(symbol_token(','));
      append_cast(select, until_symbol(t, at, ",", true), type_of(v));
      names.push_back(lower(v.text));
      if (at >= t.size() || !t[at].is_symbol(',')) break;
      ++at;
    }
    select.insert(select.end(), t.begin() + static_cast<std::ptrdiff_t>(at), t.end());
    if (const auto row = evaluate(select, vars)) {
      for (std::size_t k = 0; k < names.size(); ++k) vars[names[k]] = (*row)[k];
    }
    return true;
  }
  if (head.is("PRINT")) {
    std::vector<SqlToken> select{word_token("SELECT")};
    append_cast(select, std::vector<SqlToken>(t.begin() + 1, t.end()),
                {word_token("nvarchar"), symbol_token('('), SqlToken{TokenKind::Number, "4000"}, symbol_token(')')});
    const TypedValue v = evaluate(select, vars)->front();
    const auto* text = std::get_if<std::string>(&v.value);
    out.print = text == nullptr ? std::string() : *text;
    return true;
  }
  return false;
}

std::vector<ResultSet> Database::call(const ProcCall& call) { return run_procedure(*storage_, call); }

int Database::trancount() const { return storage_->trancount(); }

std::optional<TransactionChange> Database::transact(TransactionRequest request, const std::string& name) {
  const int before = storage_->trancount();
  const std::uint64_t descriptor = storage_->descriptor();
  switch (request) {
    case TransactionRequest::Begin: storage_->begin_transaction(name); break;
    case TransactionRequest::Commit: storage_->commit_transaction(); break;
    case TransactionRequest::Rollback: storage_->rollback_transaction(name); break;
    case TransactionRequest::Save: storage_->save_transaction(name); break;
  }
  const int after = storage_->trancount();
  if (before == 0 && after > 0) return TransactionChange{EnvChange::BeginTransaction, storage_->descriptor()};
  if (before > 0 && after == 0) {
    return TransactionChange{
        request == TransactionRequest::Rollback ? EnvChange::RollbackTransaction : EnvChange::CommitTransaction,
        descriptor};
  }
  return std::nullopt;
}

StatementResult Database::run_transaction_statement(const std::vector<SqlToken>& tokens, const Params& params) {
  const SqlToken& head = tokens.front();
  if (tokens.size() > 1 && tokens[1].is("WORK") && tokens.size() > 2) syntax_error_near(&tokens[2]);
  const std::size_t length = transaction_statement_length(tokens, 0);
  if (length < tokens.size()) syntax_error_near(&tokens[length]);
  const std::string name = tokens.size() > 1 && tokens[1].is("WORK") ? "" : transaction_name(tokens, params);
  if (head.is("SAVE") && name.empty()) syntax_error_near(nullptr);
  const TransactionRequest request = head.is("BEGIN")    ? TransactionRequest::Begin
                                     : head.is("COMMIT") ? TransactionRequest::Commit
                                     : head.is("SAVE")   ? TransactionRequest::Save
                                                         : TransactionRequest::Rollback;
  (void)transact(request, name);  // Database::run sends the ENVCHANGE
  return {};
}

StatementResult Database::run_statement(const std::vector<SqlToken>& tokens, const Params& params, bool first) {
  Cursor c(tokens);
  const SqlToken& head = tokens.front();
  if (starts_transaction_statement(tokens, 0)) return run_transaction_statement(tokens, params);
  // SQL Server answers session options with no rows.
  if (head.is("SET")) {
    for (std::size_t i = 1; i + 1 < tokens.size(); ++i) {
      if (tokens[i].is("IMPLICIT_TRANSACTIONS")) implicit_transactions_ = tokens[i + 1].is("ON");
    }
    if (tokens.size() == 4 && tokens[1].is("STATISTICS") && tokens[2].is("IO")) statistics_io_ = tokens[3].is("ON");
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
  if (is_security_statement(tokens)) {
    run_security_statement(*storage_, tokens, params);
    return {};
  }
  if (head.is("WITH")) return run_with_ctes(tokens, params, first);
  if (is_ddl_statement(tokens)) {
    run_ddl(*storage_, tokens, name_);
    return {};
  }
  const std::size_t target = tokens.size() > 1 && tokens[1].is("INTO") ? 2 : 1;
  if ((head.is("INSERT") || head.is("UPDATE") || head.is("DELETE")) && target < tokens.size() &&
      tokens[target].kind == TokenKind::Variable) {
    if (head.is("INSERT"))
      return StatementResult{std::nullopt, std::nullopt, std::nullopt, insert_local(tokens, params)};
    sql_error(50000, "The emulator's table variables take INSERT only; " + tokens[target].text +
                         " cannot be updated or deleted from. Declare another table variable and INSERT ... SELECT "
                         "the rows to keep.");
  }
  if (head.is("INSERT") || head.is("UPDATE") || head.is("DELETE")) {
    Params bound = params;
    const auto written = bind_write_expressions(
        tokens, bound, [&](const std::vector<SqlToken>& select) { return evaluate(select, params)->front(); });
    const QueryRows query = [&](const std::vector<SqlToken>& select) {
      RowSource rows = run_select(parse_select(select), *batch_catalog_, session_params(bound));
      std::vector<std::vector<TypedValue>> out;
      std::vector<Value> row;
      while (rows.next(row)) {
        auto& typed = out.emplace_back();
        for (std::size_t k = 0; k < row.size(); ++k) typed.push_back(TypedValue{rows.columns[k].type, row[k]});
      }
      return out;
    };
    return StatementResult{std::nullopt, std::nullopt, std::nullopt,
                           run_write(*storage_, written, bound, name_, query)};
  }
  // SELECT: the query engine (select.hpp) over this connection's catalog; rows stream to the writer.
  if (!statistics_io_) {
    RowSource rows = run_select(parse_select(tokens), *batch_catalog_, session_params(params));
    return StatementResult{ResultSet{std::move(rows.columns), {}, std::move(rows.next)}, std::nullopt};
  }
  // SET STATISTICS IO ON: the reads the statement opens add to its own tally, sent after its rows.
  auto tally = std::make_shared<emu::IoTally>();
  reader_->count_into(tally);
  RowSource rows;
  try {
    rows = run_select(parse_select(tokens), *batch_catalog_, session_params(params));
  } catch (...) {
    reader_->count_into(nullptr);
    throw;
  }
  reader_->count_into(nullptr);
  ResultSet set{std::move(rows.columns), {}, std::move(rows.next)};
  set.notes = [tally] { return statistics_io_messages(tally->totals()); };
  return StatementResult{std::move(set), std::nullopt};
}

}  // namespace mssqlcdc::tds
