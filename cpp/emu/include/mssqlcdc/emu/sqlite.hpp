// sqlite.hpp: RAII over the SQLite C API for the emulator. A Db owns one connection with the
// emulator's pragmas and a statement cache; Stmt is a cached, reset-on-release statement.
// Write transactions are BEGIN IMMEDIATE (one writer at a time across processes); reads are
// deferred transactions whose first SELECT fixes the snapshot. A lock wait past the busy
// timeout throws Error(EmuBusy), which callers may retry.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mssqlcdc::emu {

// One SQLite value as stored: the emulator's storage encodings (types.hpp) use only these.
struct Cell {
  enum class Type : std::uint8_t { Null, Int, Real, Text, Blob };
  Type type = Type::Null;
  std::int64_t i = 0;
  double d = 0;
  std::string s;  // text, or blob bytes

  // A Cell of each type.
  static Cell null() { return {}; }
  static Cell integer(std::int64_t v) {
    Cell c;
    c.type = Type::Int;
    c.i = v;
    return c;
  }
  static Cell real(double v) {
    Cell c;
    c.type = Type::Real;
    c.d = v;
    return c;
  }
  static Cell text(std::string v) {
    Cell c;
    c.type = Type::Text;
    c.s = std::move(v);
    return c;
  }
  static Cell blob(std::string v) {
    Cell c;
    c.type = Type::Blob;
    c.s = std::move(v);
    return c;
  }
  [[nodiscard]] bool is_null() const { return type == Type::Null; }
  bool operator==(const Cell&) const = default;
};

class Db;

// A prepared statement borrowed from a Db's cache; reset and unbound when it goes away. It must
// not outlive its Db, and two live Stmts of the same SQL text share one statement, so a caller
// finishes one before preparing the same text again. Errors throw as Db::fail() does.
class Stmt {
 public:
  // Made by Db::prepare(); not for direct use.
  Stmt(Db* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt(Stmt&& other) noexcept : db_(other.db_), stmt_(other.stmt_) { other.stmt_ = nullptr; }
  ~Stmt();

  // Binds parameter `index` (1-based, as SQLite's); text and bytes are copied. Each returns the
  // statement, so binds chain.
  Stmt& bind(int index, const Cell& value);  // 1-based, as SQLite's
  Stmt& bind(int index, std::int64_t value);
  Stmt& bind(int index, std::string_view text);
  Stmt& bind_blob(int index, std::string_view bytes);
  Stmt& bind_null(int index);

  bool step();  // true while a row is available
  void run();   // step to completion, ignoring rows
  // The current row's values, by 0-based column; valid only after step() returned true.
  [[nodiscard]] Cell cell(int column) const;  // 0-based
  [[nodiscard]] std::int64_t i64(int column) const { return sqlite3_column_int64(stmt_, column); }
  [[nodiscard]] std::string text(int column) const;
  [[nodiscard]] std::string blob(int column) const;
  [[nodiscard]] bool is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  [[nodiscard]] int columns() const { return sqlite3_column_count(stmt_); }
  // The SQLite statement, for calls this class does not wrap.
  [[nodiscard]] sqlite3_stmt* raw() const { return stmt_; }

 private:
  Db* db_;
  sqlite3_stmt* stmt_;
};

// One SQLite connection and its statement cache. The busy timeout is 5 s, or
// MSSQL_CDC_EMULATOR_BUSY_MS milliseconds (0..3600000). The emulator's pragmas and the file
// checks come from open_file() (format.hpp), which is how callers should open a Db. Not
// thread-safe: one thread uses a Db (and its statements) at a time.
class Db {
 public:
  // Opens an existing file read-write (create=false) or a new one (create=true). Throws Io when
  // SQLite cannot open it.
  Db(const std::filesystem::path& path, bool create);
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  // Finalizes the cached statements and closes the connection; an open transaction rolls back.
  ~Db();

  Stmt prepare(const std::string& sql);  // cached by text
  void exec(const std::string& sql);     // one or more statements, no rows
  // SQLite's rowid of the last insert and the rows the last statement changed.
  [[nodiscard]] std::int64_t last_rowid() const { return sqlite3_last_insert_rowid(db_); }
  [[nodiscard]] int changes() const { return sqlite3_changes(db_); }
  // Whether a transaction is open on the connection.
  [[nodiscard]] bool in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  // Throws the Error for SQLite result `rc` while running `what`: EmuBusy for a lock wait past
  // the busy timeout, EmuFileFormat for a file that is no database, else Io with SQLite's text.
  [[noreturn]] void fail(int rc, std::string_view what) const;
  // The SQLite connection, for calls this class does not wrap.
  [[nodiscard]] sqlite3* raw() const { return db_; }
  // Work that WriteTxn::commit runs just before its COMMIT, once per name however often it is
  // asked for: what a transaction derives from its whole effect (the catalog token). The work
  // must hold whenever it runs, as a rollback does not withdraw it.
  void before_commit(const std::string& name, std::function<void()> work);
  void run_before_commit();

 private:
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
  std::map<std::string, sqlite3_stmt*, std::less<>> cache_;
  std::map<std::string, std::function<void()>> before_commit_;
};

// BEGIN IMMEDIATE ... COMMIT; rolls back when destroyed without commit(). `db` must have no
// transaction open and must outlive the WriteTxn.
class WriteTxn {
 public:
  // Takes the file's write lock, waiting up to the busy timeout (then EmuBusy).
  explicit WriteTxn(Db& db);
  WriteTxn(const WriteTxn&) = delete;
  WriteTxn& operator=(const WriteTxn&) = delete;
  ~WriteTxn();
  // Commits; a failed COMMIT throws and leaves the destructor to roll back.
  void commit();

 private:
  Db& db_;
  bool open_ = true;
};

// BEGIN (deferred) ... COMMIT: a read transaction whose first statement fixes the snapshot.
// `db` must have no transaction open and must outlive the ReadTxn.
class ReadTxn {
 public:
  // Begins the transaction; the snapshot is fixed by the first statement that reads.
  explicit ReadTxn(Db& db);
  ReadTxn(const ReadTxn&) = delete;
  ReadTxn& operator=(const ReadTxn&) = delete;
  // Ends the transaction if end() did not.
  ~ReadTxn();
  // Ends the transaction now; later calls do nothing.
  void end();

 private:
  Db& db_;
  bool open_ = true;
};

// SQLite identifier quoting: `name` in double quotes, inner quotes doubled; the emulator's
// table names contain dots and '$', so "dbo.orders" stays one identifier.
std::string quote_ident(std::string_view name);

}  // namespace mssqlcdc::emu
