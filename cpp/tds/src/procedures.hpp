// procedures.hpp: the CDC stored procedures and the writes the front end runs. A procedure is
// reached the same way from `EXEC sys.sp_x @a = 1` in a batch and from an RPC naming sp_x, so
// both bind their arguments with one rule: positional first, then by name, SQL Server's errors
// for the rest (201 missing, 8145 unknown name, 8144 too many, 119 positional after named).
// The help procedures answer from the emulator's reader with SQL Server's result columns; the
// configuration procedures and INSERT/UPDATE/DELETE write through the emulator's engine, each
// call one committed transaction, captured exactly as Emulator.commit's changes are.
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

#include "statements.hpp"

namespace mssqlcdc::emu {
class Engine;
class Reader;
struct Change;
}  // namespace mssqlcdc::emu

namespace mssqlcdc::tds {

struct SqlToken;

// One argument as the caller passed it: by name (lower-case, with its '@') or by position ("").
struct ProcArg {
  std::string name;
  TypedValue value;
};

struct ProcCall {
  std::string procedure;  // as written: sys.sp_cdc_help_change_data_capture
  std::vector<ProcArg> args;
};

// What procedures and writes run on: the connection's reader, and a writer opened by the first
// call that needs one (most connections only read).
class Storage {
 public:
  // `database`: the name clients see, which the CDC jobs' names carry.
  Storage(std::filesystem::path file, emu::Reader& reader, std::string database = "");
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  emu::Reader& reader() { return reader_; }
  [[nodiscard]] const std::string& database() const { return database_; }
  emu::Engine& writer();

  // The connection's transaction (transactions.cpp). write() commits `changes`
  // at once outside a transaction; inside one it executes them in the engine's open
  // transaction (begun at the first write), so they stay invisible to other connections, hold
  // their rows' locks, and are captured at the commit LSN or never.
  void write(const std::vector<emu::Change>& changes);
  // @@TRANCOUNT, and the 8-byte descriptor of the open transaction (0 when none).
  [[nodiscard]] int trancount() const { return trancount_; }
  [[nodiscard]] std::uint64_t descriptor() const { return descriptor_; }
  // BEGIN TRANSACTION [name]: @@TRANCOUNT + 1; the first one starts the transaction, and its
  // name is the one ROLLBACK TRANSACTION may name.
  void begin_transaction(const std::string& name = "");
  // COMMIT TRANSACTION: @@TRANCOUNT - 1; the outermost one commits. Throws 3902 without one.
  void commit_transaction();
  // ROLLBACK TRANSACTION: undoes every write of the transaction and ends it, or with
  // `savepoint` (case-sensitive, as SQL Server compares these names) undoes the writes since
  // SAVE TRANSACTION `savepoint` and keeps it open; the outermost BEGIN's name rolls back all.
  // Throws 3903 without a transaction, 6401 for an unknown name.
  void rollback_transaction(const std::string& savepoint = "");
  // SAVE TRANSACTION: marks a savepoint. Throws 628 outside a transaction.
  void save_transaction(const std::string& name);

 private:
  void execute_open(const std::vector<emu::Change>& changes);
  void end_transaction();

  std::filesystem::path file_;
  std::string database_;
  emu::Reader& reader_;
  std::unique_ptr<emu::Engine> writer_;
  int trancount_ = 0;
  std::uint64_t descriptor_ = 0;
  std::string name_;                                             // the outermost BEGIN TRANSACTION's
  std::optional<std::int64_t> txn_;                              // the engine's open transaction
  std::vector<std::vector<emu::Change>> written_;                // its writes, in order
  std::vector<std::pair<std::string, std::size_t>> savepoints_;  // name, writes before it
};

// One operand of an EXEC argument or a write: a literal (number, 0x bytes, '..', N'..', NULL,
// a signed number) or an @parameter bound in `params`; advances `at`. Throws 102 or 137.
[[nodiscard]] TypedValue operand(const std::vector<SqlToken>& tokens, std::size_t& at, const Params& params);

// The statement `EXEC[UTE] name [arg [, arg]...]`; `from` is the index of the name.
[[nodiscard]] ProcCall parse_exec(const std::vector<SqlToken>& tokens, std::size_t from, const Params& params);

// Runs one procedure and returns its result sets in order (none for the configuration
// procedures). Throws Error(Sql, text, number) with SQL Server's numbers: 2812 for an unknown
// procedure, the binding errors above, 22981 for an unknown capture instance or table, and the
// emulator's own (22963, 22964...) for what it refuses.
[[nodiscard]] std::vector<ResultSet> run_procedure(Storage& storage, const ProcCall& call);

// One declared parameter of a procedure: its lower-case name with '@', and whether a call must
// pass it.
struct ProcParam {
  const char* name;
  bool required;
};

// A call's arguments by parameter name, bound as SQL Server binds them: positional ones first,
// then '@name = value'. Throws 119 (positional after named), 8144 (too many), 8145 (no such
// parameter) and 201 (a required one missing) with SQL Server's texts.
[[nodiscard]] std::map<std::string, TypedValue> bind_arguments(std::string_view procedure,
                                                               const std::vector<ProcParam>& params,
                                                               const std::vector<ProcArg>& args);

// Runs a SELECT (its tokens) and returns every row it gives.
using QueryRows = std::function<std::vector<std::vector<TypedValue>>(const std::vector<SqlToken>& select)>;

// INSERT INTO t [(cols)] VALUES (...)[, (...)]; UPDATE t SET c = v, ... [WHERE ...];
// DELETE FROM t [WHERE ...]. A WHERE naming the whole primary key changes that row; any other
// condition (or none) selects its rows with `query` (SELECT key FROM t WHERE ...) and changes
// them all in one transaction. A keyless table takes column = value [AND ...] only (50000).
// Throws SQL Server's errors: 208, 207, 515, 2627, 2628, 102.
[[nodiscard]] WriteCount run_write(Storage& storage, const std::vector<SqlToken>& tokens, const Params& params,
                                   const std::string& database, const QueryRows& query);

}  // namespace mssqlcdc::tds
