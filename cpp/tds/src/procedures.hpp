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
#include <memory>
#include <string>
#include <vector>

#include "statements.hpp"

namespace mssqlcdc::emu {
class Engine;
class Reader;
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
  Storage(std::filesystem::path file, emu::Reader& reader);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  emu::Reader& reader() { return reader_; }
  emu::Engine& writer();

 private:
  std::filesystem::path file_;
  emu::Reader& reader_;
  std::unique_ptr<emu::Engine> writer_;
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

// INSERT INTO t [(cols)] VALUES (...)[, (...)]; UPDATE t SET c = v, ... WHERE k = v AND ...;
// DELETE FROM t WHERE k = v AND .... The WHERE clause names rows by their whole primary key.
// Throws SQL Server's errors: 208, 207, 515, 2627, 2628, 102, and 50000 for a write this server
// does not model (a WHERE that is not the key).
[[nodiscard]] WriteCount run_write(Storage& storage, const std::vector<SqlToken>& tokens, const Params& params,
                                   const std::string& database);

}  // namespace mssqlcdc::tds
