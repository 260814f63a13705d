// statements.hpp: what the front end answers, over one emulator file. A Database runs one
// connection's batches: SET options are accepted, USE names this database, and SELECT runs in
// the query engine (select.hpp) over the emulator's catalog (catalog.hpp). DECLARE, SET @v,
// SELECT @v = and PRINT keep a batch's variables, usable where parameters are; a batch runs as
// batch.hpp's statement tree (blocks, IF, WHILE, TRY ... CATCH, RAISERROR, THROW; batch_run.cpp)
// and keeps its table variables and CTEs in a BatchCatalog (local_tables.hpp). BEGIN, COMMIT,
// ROLLBACK and SAVE TRANSACTION and SET IMPLICIT_TRANSACTIONS drive the connection's
// transaction (procedures.hpp's Storage), which INSERT, UPDATE and DELETE write in.
// Anything else raises SQL Server's own error: 2812 for an unknown procedure, 208 for an
// unknown object, 102 for a statement this server cannot read, 195/4121 for unknown functions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "local_tables.hpp"
#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/tokens.hpp"
#include "mssqlcdc/tds/types.hpp"
#include "relations.hpp"
#include "select.hpp"

namespace mssqlcdc::emu {
class Reader;
}

namespace mssqlcdc::tds {

struct SqlToken;
struct ProcCall;
struct BatchNode;
class Storage;

// A result's columns, then its rows: those in `rows`, then those `more` produces one at a time
// until it returns false (a SELECT streams its rows through `more`; it may throw Error(Sql)
// mid-way, after some rows were sent). `more` may be empty.
// `notes`, when set, gives the INFO messages sent after the rows and before DONE (SET
// STATISTICS IO's, decision 1411); it is called once the rows are sent.
struct ResultSet {
  std::vector<Column> columns;
  std::vector<std::vector<Value>> rows;
  std::function<bool(std::vector<Value>&)> more;
  std::function<std::vector<ServerMessage>()> notes = {};
};

// What a write did, for DONE's count and command.
struct WriteCount {
  std::uint64_t rows = 0;
  std::uint16_t cur_cmd = 0;  // INSERT 0xC3, DELETE 0xC4, UPDATE 0xC5 (MS-TDS 2.2.7.6)
};

// A statement that began or ended the connection's transaction: sent as ENVCHANGE (MS-TDS
// 2.2.7.9) with the transaction's 8-byte descriptor, which drivers send back in ALL_HEADERS.
struct TransactionChange {
  EnvChange type = EnvChange::BeginTransaction;
  std::uint64_t descriptor = 0;
};

// One statement's effect: rows, or a changed database, or nothing (a SET).
struct StatementResult {
  std::optional<ResultSet> rows;
  std::optional<std::string> database;
  // EXEC: the procedure's result sets, each ended by DONEINPROC, then RETURNSTATUS and DONEPROC.
  std::optional<std::vector<ResultSet>> procedure = std::nullopt;
  std::optional<WriteCount> count = std::nullopt;               // INSERT, UPDATE, DELETE: DONE with the rows affected
  std::optional<TransactionChange> transaction = std::nullopt;  // sent before the statement's DONE
  std::optional<std::string> print = std::nullopt;              // PRINT: an INFO message, no DONE
  // RAISERROR outside TRY: its message, sent as an ERROR (severity 11 and up) or an INFO, no DONE.
  std::optional<ServerMessage> message = std::nullopt;
};

// An error a batch raised itself (RAISERROR, THROW, a re-thrown caught error): sent with its
// own number, severity and state rather than those server_error() gives the number.
class RaisedError : public Error {
 public:
  explicit RaisedError(ServerMessage message)
      : Error(ErrorKind::Sql, message.text, message.number), message_(std::move(message)) {}
  // The message as the client receives it.
  [[nodiscard]] const ServerMessage& message() const { return message_; }

 private:
  ServerMessage message_;
};

// A transaction manager request (MS-TDS 2.2.6.9) or its T-SQL statement.
enum class TransactionRequest { Begin, Commit, Rollback, Save };

// SQL Server's severity and state for the error numbers this server raises.
[[nodiscard]] ServerMessage server_error(int number, const std::string& text);

class Database {
 public:
  // Opens a reader on the emulator file; `name` is the database name clients see. The reader
  // acts as the database user named `login`, or as dbo when no user has that name.
  Database(const std::filesystem::path& file, std::string name, const std::string& login = "");
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  [[nodiscard]] const std::string& name() const { return name_; }

  // The most times one WHILE runs its body in one execution before the batch fails with 50000
  // (decision 1419); tests set a smaller one.
  static constexpr std::int64_t kDefaultLoopLimit = 100'000;
  void set_loop_limit(std::int64_t limit) { loop_limit_ = limit; }

  // The session's id, which @@SPID returns (51 until the session sets it).
  void set_spid(std::uint16_t spid) { spid_ = spid; }

  // Runs a batch statement by statement (batch.hpp's tree: blocks, IF, WHILE, TRY ... CATCH). The first failing
  // statement ends the batch with an Error(Sql, text, number); the results before it are in `done`, so the caller can
  // send them.
  void run(std::string_view sql, const Params& params, std::vector<StatementResult>& done);
  // Runs a stored procedure called by name (an RPC); its result sets. Throws as run() does.
  std::vector<ResultSet> call(const ProcCall& call);
  // BEGIN, COMMIT, ROLLBACK or SAVE TRANSACTION [name] (transactions.cpp's rules); the
  // ENVCHANGE to send when the transaction began or ended. Throws 3902, 3903, 628, 6401.
  std::optional<TransactionChange> transact(TransactionRequest request, const std::string& name);
  // @@TRANCOUNT.
  [[nodiscard]] int trancount() const;

 private:
  StatementResult run_statement(const std::vector<SqlToken>& tokens, const Params& params, bool first);
  StatementResult run_transaction_statement(const std::vector<SqlToken>& tokens, const Params& params);
  // The batch's declared variables: name (lower case, with '@') -> the type's tokens.
  using Declared = std::map<std::string, std::vector<SqlToken>>;
  // A running batch's variables, declarations, results and caught errors (batch_run.cpp).
  struct BatchState;
  // What a statement asks of the statements around it.
  enum class Flow { Next, Break, Continue, Return };
  Flow run_nodes(const std::vector<BatchNode>& nodes, BatchState& s, bool top);
  Flow run_node(const BatchNode& node, BatchState& s, bool first);
  void run_simple(const std::vector<SqlToken>& tokens, BatchState& s, bool first);
  // RAISERROR (msg, severity, state [, args]) [WITH ...] and THROW [number, message, state].
  void raiserror(const std::vector<SqlToken>& tokens, BatchState& s);
  void throw_statement(const std::vector<SqlToken>& tokens, BatchState& s);
  // An IF or WHILE condition's truth, by SELECT CASE WHEN condition THEN 1 ELSE 0 END.
  bool condition(const std::vector<SqlToken>& tokens, const Params& vars);
  // DECLARE, SET @v = e, SELECT @v = e [FROM ...] and PRINT e; false for any other statement.
  bool run_variables(const std::vector<SqlToken>& tokens, Params& vars, Declared& declared, StatementResult& out);
  // INSERT [INTO] @t [(columns)] VALUES (...)[, ...] | SELECT ... | EXEC proc ... (local_tables.cpp).
  WriteCount insert_local(const std::vector<SqlToken>& tokens, const Params& params);
  // WITH name [(columns)] AS (query) [, ...] statement: the CTEs, then the statement over them.
  StatementResult run_with_ctes(const std::vector<SqlToken>& tokens, const Params& params, bool first);
  // `params` with the session's @@ values a query may read (@@TRANCOUNT).
  [[nodiscard]] Params session_params(const Params& params) const;
  // Runs a SELECT and returns its last row's values with their column types; nullopt for none.
  std::optional<std::vector<TypedValue>> evaluate(const std::vector<SqlToken>& select, const Params& params);
  std::string name_;
  std::uint16_t spid_ = 51;
  std::int64_t loop_limit_ = kDefaultLoopLimit;
  bool implicit_transactions_ = false;  // SET IMPLICIT_TRANSACTIONS ON
  bool statistics_io_ = false;          // SET STATISTICS IO ON
  std::unique_ptr<emu::Reader> reader_;
  std::unique_ptr<Catalog> catalog_;             // over reader_
  std::unique_ptr<Storage> storage_;             // procedures and writes (procedures.hpp)
  std::unique_ptr<BatchCatalog> batch_catalog_;  // the batch's table variables and CTEs, over catalog_
};

}  // namespace mssqlcdc::tds
