#include "mssqlcdc/emu/format.hpp"

#include "mssqlcdc/emu/file_pool.hpp"

#include <algorithm>
#include <system_error>

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

}  // namespace mssqlcdc::emu
