#include "mssqlcdc/emu/sqlite.hpp"

#include <cstdlib>

#include "mssqlcdc/emu/collation.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

int busy_timeout_ms() {
  if (const char* env = std::getenv("MSSQL_CDC_EMULATOR_BUSY_MS")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 0 && v <= 3'600'000) return static_cast<int>(v);
  }
  return 5000;
}

}  // namespace

Stmt::~Stmt() {
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

Stmt& Stmt::bind(int index, const Cell& value) {
  switch (value.type) {
    case Cell::Type::Null: return bind_null(index);
    case Cell::Type::Int: return bind(index, value.i);
    case Cell::Type::Real: sqlite3_bind_double(stmt_, index, value.d); return *this;
    case Cell::Type::Text: return bind(index, std::string_view(value.s));
    case Cell::Type::Blob: return bind_blob(index, value.s);
  }
  return *this;
}

Stmt& Stmt::bind(int index, std::int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Stmt& Stmt::bind(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}

Stmt& Stmt::bind_blob(int index, std::string_view bytes) {
  // A zero-length blob must stay a blob, not NULL: SQLite needs a non-null pointer for that.
  static const char kEmpty = 0;
  sqlite3_bind_blob(stmt_, index, bytes.empty() ? &kEmpty : bytes.data(), static_cast<int>(bytes.size()),
                    SQLITE_TRANSIENT);
  return *this;
}

Stmt& Stmt::bind_null(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

bool Stmt::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_->fail(rc, sqlite3_sql(stmt_));
}

void Stmt::run() {
  while (step()) {}
}

Cell Stmt::cell(int column) const {
  switch (sqlite3_column_type(stmt_, column)) {
    case SQLITE_INTEGER: return Cell::integer(sqlite3_column_int64(stmt_, column));
    case SQLITE_FLOAT: return Cell::real(sqlite3_column_double(stmt_, column));
    case SQLITE_TEXT: return Cell::text(text(column));
    case SQLITE_BLOB: return Cell::blob(blob(column));
    default: return Cell::null();
  }
}

std::string Stmt::text(int column) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  return p == nullptr ? std::string() : std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::string Stmt::blob(int column) const {
  const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
  return p == nullptr ? std::string() : std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

Db::Db(const std::filesystem::path& path, bool create) : path_(path) {
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw Error(ErrorKind::Io, path.string() + ": cannot open the emulator file: " + msg);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, busy_timeout_ms());
  Collation::register_all(db_);  // character columns are declared with them
}

Db::~Db() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

Stmt Db::prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    const int rc =
        sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) fail(rc, sql);
    it = cache_.emplace(sql, stmt).first;
  }
  return Stmt(this, it->second);
}

void Db::exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (err != nullptr) sqlite3_free(err);
  if (rc != SQLITE_OK) fail(rc, sql);
}

void Db::fail(int rc, std::string_view what) const {
  const int primary = rc & 0xFF;
  const std::string msg = sqlite3_errmsg(db_);
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    throw Error(ErrorKind::EmuBusy, path_.string() + ": the emulator file stayed locked past the busy timeout (" + msg +
                                        "); retry, or raise MSSQL_CDC_EMULATOR_BUSY_MS");
  }
  if (primary == SQLITE_NOTADB) {
    throw Error(ErrorKind::EmuFileFormat, path_.string() +
                                              " is not an mssql-cdc emulator file; create one with Emulator.create "
                                              "or 'mssql-cdc emulator create'");
  }
  throw Error(ErrorKind::Io, path_.string() + ": SQLite error " + std::to_string(rc) + " (" + msg +
                                 ") in: " + std::string(what.substr(0, 200)));
}

// BEGIN and COMMIT run as cached statements: sqlite3_exec would parse them on every call, and a
// single-row commit is little more than these two and four INSERTs.
WriteTxn::WriteTxn(Db& db) : db_(db) { db_.prepare("BEGIN IMMEDIATE").run(); }

WriteTxn::~WriteTxn() {
  if (open_ && db_.in_transaction()) sqlite3_exec(db_.raw(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Db::before_commit(const std::string& name, std::function<void()> work) {
  before_commit_.try_emplace(name, std::move(work));
}

void Db::run_before_commit() {
  auto work = std::move(before_commit_);
  before_commit_.clear();
  for (auto& [name, fn] : work) fn();
}

void WriteTxn::commit() {
  db_.run_before_commit();
  db_.prepare("COMMIT").run();
  open_ = false;
}

ReadTxn::ReadTxn(Db& db) : db_(db) { db_.prepare("BEGIN").run(); }

ReadTxn::~ReadTxn() {
  if (open_ && db_.in_transaction()) sqlite3_exec(db_.raw(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void ReadTxn::end() {
  if (open_ && db_.in_transaction()) db_.prepare("COMMIT").run();
  open_ = false;
}

std::string quote_ident(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace mssqlcdc::emu
