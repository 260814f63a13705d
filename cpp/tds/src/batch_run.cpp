// Database::run: a batch's statement tree (batch.hpp) run in order. The oracle is Microsoft's
// T-SQL reference: TRY...CATCH
// (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/try-catch-transact-sql) catches
// errors of severity 11 to 19 but not, at its own level, compile and name-resolution errors;
// ERROR_NUMBER() and its kin read the error a CATCH block handles and are NULL elsewhere;
// RAISERROR (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/raiserror-transact-sql)
// formats its message as printf does, severities 0 to 10 are informational and the batch goes on
// after it; THROW (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/throw-transact-sql)
// raises severity 16 with a number from 50000 and ends the batch outside a TRY; @@ERROR
// (https://learn.microsoft.com/en-us/sql/t-sql/functions/error-transact-sql) is 0 after a
// statement that succeeded. A WHILE loop is bounded (decision 1419).
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "batch.hpp"
#include "builtins.hpp"
#include "procedures.hpp"
#include "statements.hpp"

namespace mssqlcdc::tds {
namespace {

SqlToken word(const std::string& w) { return SqlToken{TokenKind::Word, w}; }
SqlToken symbol(char c) { return SqlToken{TokenKind::Symbol, std::string(1, c)}; }

const ColumnType kInt{SqlKind::Int};
const ColumnType kMessageText{SqlKind::NVarChar, 4000};
const ColumnType kProcedureName{SqlKind::NVarChar, 128};

// The error functions a CATCH block reads, each a session value of the batch: the lexer never
// makes a variable of these names, so a client cannot write them.
constexpr const char* kErrorFunctions[] = {"error_number", "error_message",   "error_severity",
                                           "error_state",  "error_procedure", "error_line"};

std::string error_variable(const std::string& function) { return "@@" + function + "()"; }

// ERROR_NUMBER() and its kin as the variables that hold them.
std::vector<SqlToken> with_error_functions(const std::vector<SqlToken>& t) {
  std::vector<SqlToken> out;
  out.reserve(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind == TokenKind::Word && i + 2 < t.size() && t[i + 1].is_symbol('(') && t[i + 2].is_symbol(')')) {
      const std::string name = lower(t[i].text);
      bool known = false;
      for (const char* f : kErrorFunctions) known = known || name == f;
      if (known) {
        out.push_back(SqlToken{TokenKind::Variable, error_variable(name)});
        i += 2;
        continue;
      }
    }
    out.push_back(t[i]);
  }
  return out;
}

// The statements SET IMPLICIT_TRANSACTIONS ON begins a transaction before (the SET
// IMPLICIT_TRANSACTIONS page): writes, and a SELECT that reads a table.
bool begins_implicit_transaction(const std::vector<SqlToken>& t) {
  const SqlToken& head = t.front();
  if (head.is("INSERT") || head.is("UPDATE") || head.is("DELETE") || head.is("TRUNCATE")) return true;
  if (!head.is("SELECT")) return false;
  for (const SqlToken& x : t) {
    if (x.kind == TokenKind::Word && x.is("FROM")) return true;
  }
  return false;
}

// A caught error as the client would have received it.
ServerMessage message_of(const Error& e) {
  if (const auto* raised = dynamic_cast<const RaisedError*>(&e)) return raised->message();
  return server_error(e.number() != 0 ? e.number() : 50000, e.what());
}

// Errors TRY...CATCH does not catch at its own level: syntax (compile) errors and object or
// column names that do not resolve.
bool caught_by_try(const ServerMessage& m) {
  for (const int n : {102, 105, 156, 207, 208}) {
    if (m.number == n) return false;
  }
  return m.severity > 10 && m.severity < 20;
}

// The top-level comma-separated expressions of `t` from `at` to `end`.
std::vector<std::vector<SqlToken>> arguments(const std::vector<SqlToken>& t, std::size_t at, std::size_t end) {
  std::vector<std::vector<SqlToken>> out(1);
  int depth = 0;
  for (; at < end; ++at) {
    if (t[at].is_symbol('(')) ++depth;
    if (t[at].is_symbol(')')) --depth;
    if (depth == 0 && t[at].is_symbol(',')) {
      out.emplace_back();
      continue;
    }
    out.back().push_back(t[at]);
  }
  return out;
}

// Counts a running construct for as long as it runs, however it ends.
class Depth {
 public:
  explicit Depth(int& n) : n_(n) { ++n_; }
  ~Depth() { --n_; }
  Depth(const Depth&) = delete;
  Depth& operator=(const Depth&) = delete;

 private:
  int& n_;
};

std::string as_text(const Value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* n = std::get_if<std::int64_t>(&v)) return std::to_string(*n);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "1" : "0";
  if (const auto* d = std::get_if<double>(&v)) return std::to_string(*d);
  return "(null)";
}

std::int64_t as_int(const Value& v, const std::string& what) {
  if (const auto* n = std::get_if<std::int64_t>(&v)) return *n;
  if (const auto* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
  sql_error(50000, "The " + what + " must be an integer; pass a number or an int variable.");
}

}  // namespace

// RAISERROR's message: printf's conversions % [flags] [width] [.precision] [h|l] type for the
// types d, i, u, o, x, X and s, a width or precision of * taken from the arguments, and %% for
// a percent sign. A missing argument prints "(null)", as does NULL.
std::string format_raiserror(const std::string& format, const std::vector<Value>& args) {
  std::string out;
  std::size_t next = 0;
  const auto take = [&]() -> const Value* { return next < args.size() ? &args[next++] : nullptr; };
  for (std::size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '%') {
      out += '%';
      ++i;
      continue;
    }
    std::string spec = "%";
    std::size_t k = i + 1;
    while (k < format.size() && std::string_view("-+0# ").find(format[k]) != std::string_view::npos)
      spec += format[k++];
    const auto number_or_star = [&]() {
      if (k < format.size() && format[k] == '*') {
        const Value* v = take();
        spec += v == nullptr ? "0" : std::to_string(as_int(*v, "width or precision of a * in RAISERROR's message"));
        ++k;
        return;
      }
      while (k < format.size() && format[k] >= '0' && format[k] <= '9') spec += format[k++];
    };
    number_or_star();
    if (k < format.size() && format[k] == '.') {
      spec += format[k++];
      number_or_star();
    }
    if (k + 2 < format.size() && format.compare(k, 3, "I64") == 0) k += 3;
    while (k < format.size() && (format[k] == 'h' || format[k] == 'l')) ++k;
    if (k >= format.size() || std::string_view("diuoxXs").find(format[k]) == std::string_view::npos) {
      out += format.substr(i, k - i);  // not a conversion: kept as written
      i = k - 1;
      continue;
    }
    const char type = format[k];
    const Value* v = take();
    char buffer[512];
    if (v == nullptr || is_null(*v) || type == 's') {
      const std::string text = v == nullptr || is_null(*v) ? "(null)" : as_text(*v);
      spec += 's';
      std::snprintf(buffer, sizeof buffer, spec.c_str(), text.c_str());
    } else {
      const std::int64_t n = as_int(*v, "argument of RAISERROR's %" + std::string(1, type));
      spec += "ll";
      spec += type == 'i' ? 'd' : type;
      std::snprintf(buffer, sizeof buffer, spec.c_str(), static_cast<long long>(n));
    }
    out += buffer;
    i = k;
  }
  return out;
}

struct Database::BatchState {
  Params vars;
  Declared declared;
  std::vector<StatementResult>* done = nullptr;
  std::vector<ServerMessage> caught;  // the errors of the CATCH blocks running, innermost last
  int try_depth = 0;                  // TRY blocks running
  int compound = 0;                   // blocks, branches and loops running
  int line = 1;                       // the batch line of the statement running, for ERROR_LINE()

  void set_error(int number) { vars["@@error"] = TypedValue{kInt, std::int64_t{number}}; }
  // ERROR_NUMBER() and its kin: the innermost caught error, or NULL outside CATCH.
  void set_error_functions() {
    const ServerMessage* m = caught.empty() ? nullptr : &caught.back();
    const auto put = [&](const char* f, ColumnType type, Value v) {
      vars[error_variable(f)] = TypedValue{type, m == nullptr ? Value{} : std::move(v)};
    };
    put("error_number", kInt, m ? Value{std::int64_t{m->number}} : Value{});
    put("error_message", kMessageText, m ? Value{m->text} : Value{});
    put("error_severity", kInt, m ? Value{std::int64_t{m->severity}} : Value{});
    put("error_state", kInt, m ? Value{std::int64_t{m->state}} : Value{});
    put("error_line", kInt, m ? Value{std::int64_t{m->line}} : Value{});
    vars[error_variable("error_procedure")] = TypedValue{kProcedureName, Value{}};
  }
};

void Database::run(std::string_view sql, const Params& params, std::vector<StatementResult>& done) {
  const std::vector<BatchNode> nodes = parse_batch(lex(sql));
  batch_catalog_->clear();  // table variables last for their batch
  BatchState s;
  s.vars = params;  // the batch's variables join its parameters
  s.vars["@@rowcount"] = TypedValue{kInt, std::int64_t{0}};
  s.vars["@@spid"] = TypedValue{ColumnType{SqlKind::SmallInt}, std::int64_t{spid_}};
  s.set_error(0);
  s.set_error_functions();
  s.done = &done;
  (void)run_nodes(nodes, s, true);
}

Database::Flow Database::run_nodes(const std::vector<BatchNode>& nodes, BatchState& s, bool top) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Flow f = run_node(nodes[i], s, top && i == 0);
    if (f != Flow::Next) return f;
  }
  return Flow::Next;
}

bool Database::condition(const std::vector<SqlToken>& tokens, const Params& vars) {
  std::vector<SqlToken> select{word("SELECT"), word("CASE"), word("WHEN")};
  const std::vector<SqlToken> cond = with_error_functions(tokens);
  select.insert(select.end(), cond.begin(), cond.end());
  for (const char* w : {"THEN", "1", "ELSE", "0", "END"}) {
    select.push_back(w[0] == '1' || w[0] == '0' ? SqlToken{TokenKind::Number, w} : word(w));
  }
  const auto row = evaluate(select, vars);
  const auto* taken = row ? std::get_if<std::int64_t>(&row->front().value) : nullptr;
  return taken != nullptr && *taken == 1;
}

Database::Flow Database::run_node(const BatchNode& node, BatchState& s, bool first) {
  using Kind = BatchNode::Kind;
  switch (node.kind) {
    case Kind::Simple:
      s.line = node.tokens.front().line;
      if (node.tokens.front().is("RETURN")) return Flow::Return;
      run_simple(node.tokens, s, first);
      return Flow::Next;
    case Kind::Break: return Flow::Break;
    case Kind::Continue: return Flow::Continue;
    case Kind::Block: {
      const Depth in_block(s.compound);
      return run_nodes(node.body, s, false);
    }
    case Kind::If: {
      s.line = node.tokens.front().line;
      const bool taken = condition(node.tokens, s.vars);
      s.set_error(0);
      const Depth in_branch(s.compound);
      return run_nodes(taken ? node.body : node.other, s, false);
    }
    case Kind::While: {
      const Depth in_loop(s.compound);
      std::int64_t iterations = 0;
      while (true) {
        s.line = node.tokens.front().line;
        if (!condition(node.tokens, s.vars)) break;
        s.set_error(0);
        if (++iterations > loop_limit_) {
          sql_error(50000, "A WHILE loop ran " + std::to_string(loop_limit_) +
                               " times without its condition becoming false; the emulator stops a loop "
                               "there. Check the loop changes what its condition reads, or end it with BREAK.");
        }
        const Flow f = run_nodes(node.body, s, false);
        if (f == Flow::Break) break;
        if (f == Flow::Return) return f;
      }
      return Flow::Next;
    }
    case Kind::Try: {
      const Depth in_construct(s.compound);
      std::optional<ServerMessage> failure;
      try {
        const Depth in_try(s.try_depth);
        return run_nodes(node.body, s, false);
      } catch (const Error& e) {
        ServerMessage m = message_of(e);
        if (!caught_by_try(m)) throw;
        m.line = s.line;  // the line of the statement that failed
        failure = std::move(m);
      }
      // The CATCH block: ERROR_NUMBER() and its kin read this error until the block ends.
      s.caught.push_back(*failure);
      s.set_error_functions();
      s.set_error(failure->number);
      struct Restore {
        BatchState& s;
        ~Restore() {
          s.caught.pop_back();
          s.set_error_functions();
        }
      } restore{s};
      return run_nodes(node.other, s, false);
    }
  }
  return Flow::Next;
}

void Database::raiserror(const std::vector<SqlToken>& t, BatchState& s) {
  if (t.size() < 2 || !t[1].is_symbol('(')) sql_error(102, "Incorrect syntax near 'RAISERROR'.");
  std::size_t close = 2;
  for (int depth = 1; close < t.size(); ++close) {
    if (t[close].is_symbol('(')) ++depth;
    if (t[close].is_symbol(')') && --depth == 0) break;
  }
  if (close >= t.size()) sql_error(102, "Incorrect syntax near '" + t.back().text + "'.");
  const auto args = arguments(t, 2, close);
  if (args.size() < 3 || args[0].empty()) sql_error(102, "Incorrect syntax near ')'.");
  bool set_error = false;
  std::size_t at = close + 1;
  if (at < t.size()) {
    if (!t[at].is("WITH")) sql_error(102, "Incorrect syntax near '" + t[at].text + "'.");
    for (++at; at < t.size(); ++at) {
      if (t[at].is_symbol(',') || t[at].is("LOG") || t[at].is("NOWAIT")) continue;
      if (t[at].is("SETERROR")) {
        set_error = true;
        continue;
      }
      sql_error(102, "Incorrect syntax near '" + t[at].text + "'.");
    }
  }
  if (args[0].size() == 1 && args[0][0].kind == TokenKind::Number) {
    sql_error(2758, "RAISERROR could not locate entry for error " + args[0][0].text +
                        " in sys.messages. The emulator keeps no user messages; pass the message text instead.");
  }
  std::vector<SqlToken> select{word("SELECT")};
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (k > 0) select.push_back(symbol(','));
    select.insert(select.end(), args[k].begin(), args[k].end());
  }
  const std::vector<TypedValue> values = *evaluate(with_error_functions(select), s.vars);
  ServerMessage m;
  m.number = 50000;
  const std::int64_t severity = std::clamp<std::int64_t>(as_int(values[1].value, "RAISERROR severity"), 0, 25);
  std::int64_t state = as_int(values[2].value, "RAISERROR state");
  if (state < 0) state = 1;
  if (state > 255)
    sql_error(2748, "Cannot specify a state of " + std::to_string(state) + ". The state must be 0 to 255.");
  if (severity > 18) {
    sql_error(2754,
              "Error severity levels greater than 18 can only be specified by members of the sysadmin role, using "
              "the WITH LOG option. The emulator does not end a connection for a client; use a severity up to 18.");
  }
  m.severity = static_cast<std::uint8_t>(severity);
  m.state = static_cast<std::uint8_t>(state);
  std::vector<Value> rest;
  for (std::size_t k = 3; k < values.size(); ++k) rest.push_back(values[k].value);
  std::string text = format_raiserror(as_text(values[0].value), rest);
  if (text.size() > 2047) text = text.substr(0, 2044) + "...";
  m.text = std::move(text);
  if (m.severity > 10 && s.try_depth > 0) throw RaisedError(m);  // to the CATCH block
  s.set_error(m.severity > 10 || set_error ? 50000 : 0);
  StatementResult out;
  out.message = std::move(m);
  s.done->push_back(std::move(out));
}

void Database::throw_statement(const std::vector<SqlToken>& t, BatchState& s) {
  if (t.size() == 1) {
    if (s.caught.empty()) {
      sql_error(10704,
                "To rethrow an error, a THROW statement must be used inside a CATCH block. Insert the THROW "
                "statement inside a CATCH block, or add error parameters to the THROW statement.");
    }
    throw RaisedError(s.caught.back());
  }
  const auto args = arguments(t, 1, t.size());
  if (args.size() != 3 || args[0].empty() || args[1].empty() || args[2].empty()) {
    sql_error(102, "Incorrect syntax near '" + t.back().text + "'.");
  }
  std::vector<SqlToken> select{word("SELECT")};
  select.insert(select.end(), args[0].begin(), args[0].end());
  select.push_back(symbol(','));
  select.insert(select.end(), args[1].begin(), args[1].end());
  select.push_back(symbol(','));
  select.insert(select.end(), args[2].begin(), args[2].end());
  const std::vector<TypedValue> values = *evaluate(with_error_functions(select), s.vars);
  const std::int64_t number = as_int(values[0].value, "THROW error number");
  if (number < 50000 || number > 2147483647) {
    sql_error(35100, "Error number " + std::to_string(number) +
                         " in the THROW statement is outside the valid range. Specify an error number in the "
                         "valid range of 50000 to 2147483647.");
  }
  const std::int64_t state = as_int(values[2].value, "THROW state");
  if (state < 0 || state > 255) {
    sql_error(35100, "The THROW state " + std::to_string(state) + " is outside the valid range of 0 to 255.");
  }
  ServerMessage m;
  m.number = static_cast<std::int32_t>(number);
  m.severity = 16;
  m.state = static_cast<std::uint8_t>(state);
  m.text = as_text(values[1].value);
  if (m.text.size() > 2048) m.text.resize(2048);
  throw RaisedError(m);
}

void Database::run_simple(const std::vector<SqlToken>& raw, BatchState& s, bool first) {
  const std::vector<SqlToken> tokens = with_error_functions(raw);
  const SqlToken& head = tokens.front();
  if (head.is("RAISERROR")) return raiserror(tokens, s);
  if (head.is("THROW")) return throw_statement(tokens, s);
  StatementResult assigned;
  if (run_variables(tokens, s.vars, s.declared, assigned)) {
    s.vars["@@rowcount"] = TypedValue{kInt, std::int64_t{head.is("SELECT") ? 1 : 0}};
    s.set_error(0);
    s.done->push_back(std::move(assigned));
    return;
  }
  const int before = storage_->trancount();
  const std::uint64_t descriptor = storage_->descriptor();
  bool implicit = false;
  if (implicit_transactions_ && before == 0 && begins_implicit_transaction(tokens)) {
    storage_->begin_transaction();
    implicit = true;
  }
  StatementResult r;
  try {
    r = run_statement(tokens, s.vars, first);
  } catch (...) {
    if (implicit && storage_->trancount() == 1) storage_->rollback_transaction();  // it wrote nothing
    throw;
  }
  const int after = storage_->trancount();
  if (before == 0 && after > 0) {
    r.transaction = TransactionChange{EnvChange::BeginTransaction, storage_->descriptor()};
  } else if (before > 0 && after == 0) {
    const bool rolled_back = head.is("ROLLBACK");
    r.transaction =
        TransactionChange{rolled_back ? EnvChange::RollbackTransaction : EnvChange::CommitTransaction, descriptor};
  }
  // @@ROWCOUNT after a write. A top-level SELECT's rows are counted as they are sent, after the
  // batch ran; inside a block, branch, loop or TRY its rows are read now, so its errors are
  // caught there and the statements after it see the data as it read it.
  std::int64_t count = r.count ? static_cast<std::int64_t>(r.count->rows) : 0;
  if (r.rows && s.compound > 0 && r.rows->more) {
    std::vector<Value> row;
    while (r.rows->more(row)) r.rows->rows.push_back(row);
    r.rows->more = nullptr;
    count = static_cast<std::int64_t>(r.rows->rows.size());
  }
  s.vars["@@rowcount"] = TypedValue{kInt, count};
  s.set_error(0);
  s.done->push_back(std::move(r));
}

}  // namespace mssqlcdc::tds
