// statements.hpp: what the front end answers, over one emulator file. A Database runs one
// connection's batches: SET options are accepted, USE names this database, and SELECT runs in
// the query engine (select.hpp) over the emulator's catalog (catalog.hpp).
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
#include <vector>

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
class Storage;

// A result's columns, then its rows: those in `rows`, then those `more` produces one at a time
// until it returns false (a SELECT streams its rows through `more`; it may throw Error(Sql)
// mid-way, after some rows were sent). `more` may be empty.
struct ResultSet {
  std::vector<Column> columns;
  std::vector<std::vector<Value>> rows;
  std::function<bool(std::vector<Value>&)> more;
};

// What a write did, for DONE's count and command.
struct WriteCount {
  std::uint64_t rows = 0;
  std::uint16_t cur_cmd = 0;  // INSERT 0xC3, DELETE 0xC4, UPDATE 0xC5 (MS-TDS 2.2.7.6)
};

// One statement's effect: rows, or a changed database, or nothing (a SET).
struct StatementResult {
  std::optional<ResultSet> rows;
  std::optional<std::string> database;
  // EXEC: the procedure's result sets, each ended by DONEINPROC, then RETURNSTATUS and DONEPROC.
  std::optional<std::vector<ResultSet>> procedure = std::nullopt;
  std::optional<WriteCount> count = std::nullopt;  // INSERT, UPDATE, DELETE: DONE with the rows affected
};

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

  // Runs a batch statement by statement. The first failing statement ends the batch with an
  // Error(Sql, text, number); the results before it are in `done`, so the caller can send them.
  void run(std::string_view sql, const Params& params, std::vector<StatementResult>& done);
  // Runs a stored procedure called by name (an RPC); its result sets. Throws as run() does.
  std::vector<ResultSet> call(const ProcCall& call);

 private:
  StatementResult run_statement(const std::vector<SqlToken>& tokens, const Params& params, bool first);
  std::string name_;
  std::unique_ptr<emu::Reader> reader_;
  std::unique_ptr<Catalog> catalog_;  // over reader_
  std::unique_ptr<Storage> storage_;  // procedures and writes (procedures.hpp)
};

}  // namespace mssqlcdc::tds
