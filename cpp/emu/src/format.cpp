#include "mssqlcdc/emu/format.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <system_error>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "mssqlcdc/emu/log.hpp"
#include "mssqlcdc/emu/zone.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

constexpr const char* kCatalog = R"sql(
CREATE TABLE emu_meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE "sys.tables" (object_id INTEGER PRIMARY KEY, schema_name TEXT NOT NULL, name TEXT NOT NULL,
  is_tracked_by_cdc INTEGER NOT NULL DEFAULT 0, is_heap INTEGER NOT NULL);
CREATE TABLE "sys.columns" (object_id INTEGER NOT NULL, column_id INTEGER NOT NULL, name TEXT NOT NULL,
  sql_type TEXT NOT NULL, key_ordinal INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (object_id, column_id)) WITHOUT ROWID;
CREATE TABLE "cdc.change_tables" (object_id INTEGER PRIMARY KEY, capture_instance TEXT NOT NULL UNIQUE COLLATE NOCASE,
  source_object_id INTEGER NOT NULL, start_lsn BLOB NOT NULL, end_lsn BLOB, create_lsn BLOB NOT NULL,
  supports_net_changes INTEGER NOT NULL DEFAULT 0, has_drop_pending INTEGER NOT NULL DEFAULT 0, role_name TEXT,
  index_name TEXT, create_date INTEGER NOT NULL, create_date_utc INTEGER NOT NULL, has_command_id INTEGER NOT NULL);
CREATE TABLE "cdc.captured_columns" (object_id INTEGER NOT NULL, column_name TEXT NOT NULL, column_id INTEGER NOT NULL,
  column_type TEXT NOT NULL, column_ordinal INTEGER NOT NULL, is_computed INTEGER NOT NULL DEFAULT 0,
  present INTEGER NOT NULL DEFAULT 1, PRIMARY KEY (object_id, column_ordinal)) WITHOUT ROWID;
CREATE TABLE "cdc.index_columns" (object_id INTEGER NOT NULL, column_name TEXT NOT NULL, index_ordinal INTEGER NOT NULL,
  column_id INTEGER NOT NULL, PRIMARY KEY (object_id, index_ordinal)) WITHOUT ROWID;
CREATE TABLE "cdc.ddl_history" (source_object_id INTEGER NOT NULL, object_id INTEGER NOT NULL,
  required_column_update INTEGER NOT NULL, ddl_command TEXT NOT NULL, ddl_lsn BLOB NOT NULL, ddl_time INTEGER NOT NULL,
  ddl_time_utc INTEGER NOT NULL, kind TEXT NOT NULL, column_name TEXT NOT NULL, new_type TEXT);
CREATE TABLE "cdc.lsn_time_mapping" (start_lsn BLOB PRIMARY KEY, tran_begin_time INTEGER NOT NULL,
  tran_end_time INTEGER NOT NULL, tran_id BLOB NOT NULL, tran_begin_lsn BLOB NOT NULL, tran_begin_utc INTEGER NOT NULL,
  tran_end_utc INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX "cdc.lsn_time_mapping_end" ON "cdc.lsn_time_mapping" (tran_end_time, start_lsn);
CREATE TABLE emu_log (commit_lsn BLOB PRIMARY KEY, kind TEXT NOT NULL, begin_lsn BLOB NOT NULL, tran_id BLOB,
  begin_time INTEGER NOT NULL, end_time INTEGER NOT NULL, payload BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE emu_row_locks (owner INTEGER NOT NULL, table_id INTEGER NOT NULL, key BLOB NOT NULL,
  cells BLOB NOT NULL, PRIMARY KEY (owner, table_id, key)) WITHOUT ROWID;
CREATE INDEX emu_row_locks_table ON emu_row_locks (table_id);
CREATE TABLE emu_hooks (hook_id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, read_kind TEXT NOT NULL,
  payload BLOB NOT NULL, registered_at INTEGER NOT NULL);
)sql";

struct SettingRule {
  const char* name;
  const char* fallback;
};

void set_pragmas(Db& db) {
  db.exec("PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY; PRAGMA mmap_size=268435456;");
}

[[noreturn]] void bad_setting(const std::string& name, const std::string& value, const std::string& want) {
  throw Error(ErrorKind::InvalidArgument, "emulator setting " + name + "=" + value + " is not valid; it takes " + want);
}

bool parse_int(const std::string& s, long long lo, long long hi, long long& out) {
  if (s.empty() || s.size() > 18) return false;
  std::size_t pos = 0;
  try {
    out = std::stoll(s, &pos);
  } catch (const std::exception&) {
    return false;
  }
  return pos == s.size() && out >= lo && out <= hi;
}

}  // namespace

std::optional<std::string> meta_get(Db& db, const std::string& key) {
  auto st = db.prepare("SELECT value FROM emu_meta WHERE key = ?");
  st.bind(1, std::string_view(key));
  if (!st.step()) return std::nullopt;
  return st.is_null(0) ? std::string() : st.text(0);
}

void meta_set(Db& db, const std::string& key, const std::string& value) {
  auto st = db.prepare(
      "INSERT INTO emu_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  st.bind(1, std::string_view(key)).bind(2, std::string_view(value)).run();
}

std::int64_t meta_int(Db& db, const std::string& key) {
  const auto v = meta_get(db, key);
  if (!v) throw Error(ErrorKind::Corrupt, db.path().string() + ": emulator metadata '" + key + "' is missing");
  return std::stoll(*v);
}

std::int64_t catalog_version(Db& db) {
  const auto v = meta_get(db, "catalog_version");
  return v ? std::stoll(*v) : 0;
}

namespace {

// Everything Reader::objects() reads: the catalog tables, the metadata that holds identities,
// NOT NULL and computed columns (all of emu_meta: more than needed only makes tokens differ
// more), and the enable records that say whether capture has established an instance.
constexpr const char* kCatalogRows[] = {
    "SELECT * FROM \"sys.tables\" ORDER BY object_id",
    "SELECT * FROM \"sys.columns\" ORDER BY object_id, column_id",
    "SELECT * FROM \"cdc.change_tables\" ORDER BY object_id",
    "SELECT * FROM \"cdc.captured_columns\" ORDER BY object_id, column_ordinal",
    "SELECT * FROM \"cdc.index_columns\" ORDER BY object_id, index_ordinal",
    "SELECT key, value FROM emu_meta WHERE key <> 'catalog_token' ORDER BY key",
    "SELECT commit_lsn FROM emu_log WHERE kind = 'enable' ORDER BY commit_lsn",
};

// Two FNV-1a streams with different offsets over each cell's type, length and bytes: 128 bits,
// far past any chance of two catalogs meeting by accident.
class Digest {
 public:
  void add(const void* data, std::size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) {
      a_ = (a_ ^ p[i]) * kPrime;
      b_ = (b_ ^ p[i]) * kPrime;
    }
  }
  template <typename T>
  void add_value(T v) {
    add(&v, sizeof v);
  }
  [[nodiscard]] std::string hex() const {
    char out[33];
    std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(a_),
                  static_cast<unsigned long long>(b_));
    return out;
  }

 private:
  static constexpr std::uint64_t kPrime = 0x100000001b3ULL;
  std::uint64_t a_ = 0xcbf29ce484222325ULL;
  std::uint64_t b_ = 0x84222325cbf29ce4ULL;
};

std::string catalog_digest(Db& db) {
  Digest d;
  for (const char* sql : kCatalogRows) {
    auto st = db.prepare(sql);
    d.add(sql, std::strlen(sql));
    while (st.step()) {
      for (int c = 0; c < st.columns(); ++c) {
        sqlite3_stmt* raw = st.raw();
        const int type = sqlite3_column_type(raw, c);
        d.add_value(type);
        if (type == SQLITE_INTEGER) {
          d.add_value(sqlite3_column_int64(raw, c));
        } else if (type == SQLITE_FLOAT) {
          d.add_value(sqlite3_column_double(raw, c));
        } else if (type != SQLITE_NULL) {
          const void* bytes = sqlite3_column_blob(raw, c);
          const auto size = static_cast<std::size_t>(sqlite3_column_bytes(raw, c));
          d.add_value(size);
          if (size > 0) d.add(bytes, size);
        }
      }
    }
  }
  return d.hex();
}

void store_token(Db& db) { meta_set(db, "catalog_token", catalog_digest(db)); }

}  // namespace

void bump_catalog(Db& db) {
  meta_set(db, "catalog_version", std::to_string(catalog_version(db) + 1));
  // The token names the catalog as the transaction commits it, after all of its changes.
  if (db.in_transaction()) {
    db.before_commit("catalog_token", [&db] { store_token(db); });
  } else {
    store_token(db);
  }
}

std::string catalog_token(Db& db) { return meta_get(db, "catalog_token").value_or(""); }

std::string get_setting(Db& db, const std::string& name) {
  const auto v = meta_get(db, "setting." + name);
  if (!v && name == "shuffle_unordered") return "false";  // a file made before the setting
  if (!v && name == "lock_timeout_ms") return "10000";
  if (!v && name == "allow_snapshot_isolation") return "false";
  if (!v && (name == "polling_interval_seconds" || name == "cleanup_job_time")) return "null";
  if (!v && name == "maxscans") return "10";
  if (!v) throw Error(ErrorKind::InvalidArgument, "unknown emulator setting '" + name + "'");
  return *v;
}

void set_setting(Db& db, const std::string& name, const std::string& value) {
  long long n = 0;
  if (name == "capture") {
    if (value != "immediate" && value != "manual") bad_setting(name, value, "'immediate' or 'manual'");
  } else if (name == "maxtrans") {
    if (!parse_int(value, 1, 1'000'000, n)) bad_setting(name, value, "an integer 1..1000000");
  } else if (name == "maxscans") {
    if (!parse_int(value, 1, 1'000'000, n)) bad_setting(name, value, "an integer 1..1000000");
  } else if (name == "polling_interval_seconds") {
    if (value != "null" && !parse_int(value, 1, 86'399, n)) bad_setting(name, value, "None or seconds 1..86399");
    meta_set(db, "jobs.next_cycle", "");  // the job restarts: its first cycle is one interval on
  } else if (name == "cleanup_job_time") {
    if (value != "null" && !(value.size() == 5 && value[2] == ':' && parse_int(value.substr(0, 2), 0, 23, n) &&
                             parse_int(value.substr(3, 2), 0, 59, n))) {
      bad_setting(name, value, "None or a time of day 'HH:MM' (server time zone)");
    }
    meta_set(db, "jobs.next_cleanup", "");
  } else if (name == "idle_interval_seconds") {
    if (value != "null" && !parse_int(value, 1, 1'000'000'000, n))
      bad_setting(name, value, "None or a positive integer");
  } else if (name == "retention_minutes") {
    if (!parse_int(value, 1, 52'494'800, n)) bad_setting(name, value, "an integer 1..52494800");
  } else if (name == "cleanup_threshold") {
    if (!parse_int(value, 1, 1'000'000'000, n)) bad_setting(name, value, "a positive integer");
  } else if (name == "cleanup_job_rule") {
    if (value != "at_or_before" && value != "after") bad_setting(name, value, "'at_or_before' or 'after'");
  } else if (name == "max_text_repl_size") {
    if (!parse_int(value, -1, 2'147'483'647, n)) bad_setting(name, value, "-1 or a byte count 0..2147483647");
  } else if (name == "lock_timeout_ms") {
    if (!parse_int(value, -1, 2'147'483'647, n))
      bad_setting(name, value, "-1 (no limit) or milliseconds 0..2147483647");
  } else if (name == "command_id_column" || name == "shuffle_unordered" || name == "allow_snapshot_isolation") {
    if (value != "true" && value != "false") bad_setting(name, value, "True or False");
  } else if (name == "time_zone") {
    try {
      (void)TimeZone::load(value);
    } catch (const Error& e) {
      throw Error(ErrorKind::InvalidArgument, "emulator setting time_zone: " + std::string(e.what()));
    }
    if (value != get_setting(db, name) && WriteState::load(db).cursor.next() != LsnCursor::initial()) {
      // Otherwise the stored local times would mix two zones.
      throw Error(ErrorKind::InvalidArgument,
                  "emulator setting time_zone can change only before the first LSN is allocated (this "
                  "file has LSNs, its catalog times are local times of " +
                      get_setting(db, name) + "); create a new file and configure time_zone first");
    }
  } else {
    throw Error(ErrorKind::InvalidArgument,
                "unknown emulator setting '" + name +
                    "'; known: capture, maxtrans, maxscans, polling_interval_seconds, idle_interval_seconds, "
                    "cleanup_job_time, retention_minutes, "
                    "cleanup_threshold, cleanup_job_rule, max_text_repl_size, "
                    "command_id_column, time_zone, shuffle_unordered, lock_timeout_ms, allow_snapshot_isolation");
  }
  meta_set(db, "setting." + name, value);
  bump_catalog(db);
}

void create_file(const std::filesystem::path& path, const CreateOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec) || fs::exists(fs::path(path.string() + "-wal"), ec)) {
    throw Error(ErrorKind::FileExists,
                path.string() + " already exists; open it with Emulator.open or pick a new path");
  }
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (!fs::is_directory(folder, ec)) {
    throw Error(ErrorKind::FileNotFound, "folder " + folder.string() + " does not exist; create it first");
  }
  if (options.retention_minutes < 1 || options.retention_minutes > 52'494'800) {
    throw Error(ErrorKind::InvalidArgument, "retention_minutes=" + std::to_string(options.retention_minutes) +
                                                " is not valid; it takes 1..52494800");
  }
  if (options.capture != "immediate" && options.capture != "manual") {
    throw Error(ErrorKind::InvalidArgument,
                "capture='" + options.capture + "' is not valid; use 'immediate' or 'manual'");
  }
  try {
    Db db(path, true);
    db.exec("PRAGMA journal_mode=WAL");
    set_pragmas(db);
    WriteTxn txn(db);
    db.exec("PRAGMA application_id=" + std::to_string(kApplicationId) +
            "; PRAGMA user_version=" + std::to_string(kFormatVersion));
    db.exec(kCatalog);
    meta_set(db, "format_version", std::to_string(kFormatVersion));
    meta_set(db, "application_id", std::to_string(kApplicationId));
    meta_set(db, "library_version", "0.1.0");
    WriteState initial;
    initial.last_time = options.start_micros;
    initial.store(db);
    meta_set(db, "start_time", std::to_string(options.start_micros));
    meta_set(db, "next_object_id", "1000");
    const std::pair<const char*, std::string> defaults[] = {
        {"capture", options.capture},
        {"maxtrans", "500"},
        {"maxscans", "10"},
        {"polling_interval_seconds", "null"},
        {"cleanup_job_time", "null"},
        {"idle_interval_seconds", "null"},
        {"retention_minutes", std::to_string(options.retention_minutes)},
        {"cleanup_threshold", "5000"},
        {"cleanup_job_rule", "at_or_before"},
        {"max_text_repl_size", "65536"},
        {"command_id_column", "true"},
        {"time_zone", "UTC"},
        {"shuffle_unordered", "false"},
        {"lock_timeout_ms", "10000"},
        {"allow_snapshot_isolation", "false"}};
    for (const auto& [k, v] : defaults) meta_set(db, std::string("setting.") + k, v);
    txn.commit();
  } catch (...) {
    fs::remove(path, ec);
    fs::remove(fs::path(path.string() + "-wal"), ec);
    fs::remove(fs::path(path.string() + "-shm"), ec);
    throw;
  }
}

std::unique_ptr<Db> open_file(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw Error(ErrorKind::FileNotFound, path.string() +
                                             " does not exist; create it with Emulator.create or "
                                             "'mssql-cdc emulator create'");
  }
  const std::string not_ours = path.string() +
                               " is not an mssql-cdc emulator file; create one with Emulator.create "
                               "or 'mssql-cdc emulator create'";
  auto db = std::make_unique<Db>(path, false);
  std::int64_t app = 0;
  std::int64_t version = 0;
  try {
    auto st = db->prepare("PRAGMA application_id");
    if (st.step()) app = st.i64(0);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::EmuFileFormat || e.kind() == ErrorKind::Io)
      throw Error(ErrorKind::EmuFileFormat, not_ours);
    throw;
  }
  if (app != kApplicationId) throw Error(ErrorKind::EmuFileFormat, not_ours);
  {
    auto st = db->prepare("PRAGMA user_version");
    if (st.step()) version = st.i64(0);
  }
  if (version > kFormatVersion) {
    throw Error(ErrorKind::EmuFormatVersion, path.string() + " has emulator format " + std::to_string(version) +
                                                 "; this mssql-cdc reads up to " + std::to_string(kFormatVersion) +
                                                 ": upgrade mssql-cdc");
  }
  if (version < 1) throw Error(ErrorKind::EmuFileFormat, not_ours);
  if (version < kFormatVersion) {
    throw Error(ErrorKind::EmuFormatVersion,
                path.string() + " has emulator format " + std::to_string(version) +
                    ", which stores time, datetime2 and datetimeoffset in microseconds; this mssql-cdc reads "
                    "format " +
                    std::to_string(kFormatVersion) + " (100-ns ticks): create the file again");
  }
  set_pragmas(*db);
  return db;
}

namespace {

struct FileId {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  bool operator==(const FileId&) const = default;
};

std::optional<FileId> file_id(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

// The idle read connections of this process, by file. Guarded, briefly: served connections
// read on threads of their own.
class IdleConnections {
 public:
  std::unique_ptr<Db> take(const FileId& id, long process) {
    const std::lock_guard lock(mutex_);
    adopt(process);
    auto& idle = idle_[key(id)];
    if (idle.empty()) return nullptr;
    auto db = std::move(idle.back());
    idle.pop_back();
    return db;
  }
  void give(const FileId& id, long process, std::unique_ptr<Db> db) {
    const std::lock_guard lock(mutex_);
    adopt(process);
    auto& idle = idle_[key(id)];
    if (idle.size() < kPerFile) idle.push_back(std::move(db));
  }

 private:
  static constexpr std::size_t kPerFile = 8;
  static std::string key(const FileId& id) { return std::to_string(id.device) + ":" + std::to_string(id.inode); }
  // In a forked child every idle connection is the parent's: forget them without closing, as
  // closing could release locks the parent holds on the file.
  void adopt(long process) {
    if (process == pid_) return;
    for (auto& [file, idle] : idle_) {
      for (auto& db : idle) (void)db.release();
    }
    idle_.clear();
    pid_ = process;
  }
  std::mutex mutex_;
  long pid_ = static_cast<long>(::getpid());
  std::map<std::string, std::vector<std::unique_ptr<Db>>> idle_;
};

IdleConnections& idle_connections() {
  static IdleConnections pool;
  return pool;
}

}  // namespace

void ReturnToPool::operator()(Db* db) const {
  if (db == nullptr) return;
  // The parent's connection, let go in a forked child, is left open: closing it could release
  // locks the parent holds on the file.
  if (process != 0 && process != static_cast<long>(::getpid())) return;
  std::unique_ptr<Db> owned(db);
  if (process == 0 || owned->in_transaction()) return;  // not poolable: closed
  // An idle connection whose file is no longer at its path (deleted, replaced) is closed: it
  // keeps the old inode alive, so a new file never takes its identity while it is pooled.
  const auto now = file_id(owned->path());
  if (!now || *now != FileId{device, inode}) return;
  idle_connections().give(*now, process, std::move(owned));
}

PooledDb pooled_file(const std::filesystem::path& path) {
  const long process = static_cast<long>(::getpid());
  if (const auto id = file_id(path)) {
    if (auto db = idle_connections().take(*id, process))
      return PooledDb(db.release(), {id->device, id->inode, process});
  }
  // Identify the file before opening it and check it after: a file replaced in between is not
  // pooled under either identity.
  const auto before = file_id(path);
  auto db = open_file(path);
  const auto after = file_id(path);
  if (!before || !after || *before != *after) return PooledDb(db.release(), {0, 0, 0});
  return PooledDb(db.release(), {after->device, after->inode, process});
}

}  // namespace mssqlcdc::emu
