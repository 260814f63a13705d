// rows.cpp: row cursors and the object list behind the TDS front end's catalog. A cursor steps
// one SQLite statement in its own read transaction, so a client reading a large change table
// holds one row in memory, and a range bound reaches SQLite's index on the ordering column. A
// cursor serving a backend's data read claims and fires its fault hooks (decision 0760): each
// fires on a connection of its own, and SQLite's WAL lets that write commit while the cursor's
// read transaction stays open, so a hook never waits on the read it interrupts.
#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>

#include "mssqlcdc/emu/file_pool.hpp"
#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/emu/hooks.hpp"
#include "mssqlcdc/emu/log.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "pending_rows.hpp"
#include "row_locks.hpp"
#include "schema_lock.hpp"

namespace mssqlcdc::emu {
namespace {

// The hooks a served read claimed, and what it needs to fire them where read_changes does.
struct CursorHooks {
  std::filesystem::path path;
  ReadHooks hooks;
  std::int64_t object_id = 0;  // a change read's instance, whose new mark a mid-read hook reads
  SchemaLock lock;             // a change read's Sch-S on its instance (schema_lock.hpp)
};

class SqlCursor final : public RowCursor {
 public:
  SqlCursor(PooledDb db, std::unique_ptr<ReadTxn> txn, const std::string& sql, const std::vector<Cell>& binds,
            IoRead io, CursorHooks hooks = {})
      : db_(std::move(db)), txn_(std::move(txn)), hooks_(std::move(hooks)), io_(std::move(io)) {
    stmt_.emplace(db_->prepare(sql));
    for (std::size_t i = 0; i < binds.size(); ++i) stmt_->bind(static_cast<int>(i + 1), binds[i]);
  }
  SqlCursor(const SqlCursor&) = delete;
  SqlCursor& operator=(const SqlCursor&) = delete;
  ~SqlCursor() override { stmt_.reset(); }  // the statement goes back to the cache before the Db closes

  bool next(std::vector<Cell>& row) override {
    while (stmt_) {
      if (hooks_.hooks.mid_due(seen_)) {
        if (auto mark = hooks_.hooks.fire_mid(hooks_.path, hooks_.object_id)) below_ = mark;
      }
      if (!stmt_->step()) {
        stmt_.reset();
        txn_->end();
        hooks_.lock.release();
        hooks_.hooks.fire_during(hooks_.path);  // after the transaction, before the end is reported
        return false;
      }
      ++seen_;
      io_.rows();
      // A change read racing a mid-read cleanup misses the rows below the new mark from here on,
      // as a dirty read racing the deletes would; column 0 is __$start_lsn.
      if (below_ && std::memcmp(sqlite3_column_blob(stmt_->raw(), 0), below_->bytes().data(), Lsn::kBytes) < 0) {
        continue;
      }
      const int n = stmt_->columns();
      row.resize(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) row[static_cast<std::size_t>(i)] = stmt_->cell(i);
      return true;
    }
    return false;
  }

  [[nodiscard]] bool null_row_first() const override { return hooks_.hooks.null_row; }

 private:
  PooledDb db_;
  std::unique_ptr<ReadTxn> txn_;
  std::optional<Stmt> stmt_;
  CursorHooks hooks_;
  IoRead io_;
  std::int64_t seen_ = 0;
  std::optional<Lsn> below_;
};

// " WHERE col >= ?1 AND col < ?2" for the bounds given, appending their cells to `binds`.
std::string range_where(const std::string& column, const CellRange& range, std::vector<Cell>& binds) {
  std::string where;
  if (range.lo) {
    binds.push_back(range.lo->value);
    where += column + (range.lo->inclusive ? " >= ?" : " > ?") + std::to_string(binds.size());
  }
  if (range.hi) {
    binds.push_back(range.hi->value);
    where += (where.empty() ? "" : " AND ") + column + (range.hi->inclusive ? " <= ?" : " < ?") +
             std::to_string(binds.size());
  }
  return where.empty() ? where : " WHERE " + where;
}

// Reader::in_read's twin for this file (that template lives in reader.cpp): one read
// transaction, or the open snapshot().
template <typename Fn>
auto one_read(Db& db, bool in_snapshot, Fn fn) {
  if (in_snapshot) return fn();
  ReadTxn r(db);
  auto out = fn();
  r.end();
  return out;
}

Objects load_objects(Db& db) {
  Objects out;
  for (const auto& name : table_names(db)) {
    out.tables.push_back(load_table(db, name));
    for (auto& in : instances_of(db, out.tables.back().object_id)) out.instances.push_back(std::move(in));
  }
  return out;
}

// The catalog states this process loaded last, by token: a few, for a process serving several
// files. Guarded, as each served connection reads on its own thread.
class SharedCatalogs {
 public:
  std::shared_ptr<const Objects> loaded_for(const std::string& token) {
    const std::lock_guard lock(mutex_);
    for (const auto& [t, objects] : recent_) {
      if (t == token) return objects;
    }
    return nullptr;
  }
  void remember(const std::string& token, std::shared_ptr<const Objects> objects) {
    const std::lock_guard lock(mutex_);
    recent_.emplace_front(token, std::move(objects));
    if (recent_.size() > kKept) recent_.pop_back();
  }

 private:
  static constexpr std::size_t kKept = 16;
  std::mutex mutex_;
  std::deque<std::pair<std::string, std::shared_ptr<const Objects>>> recent_;
};

SharedCatalogs& shared_catalogs() {
  static SharedCatalogs catalogs;
  return catalogs;
}

}  // namespace

std::shared_ptr<const Objects> Reader::catalog() {
  return one_read(*db_, in_snapshot(), [&]() {
    // The token is read in the same transaction as the catalog, so it names what is loaded.
    const std::string token = catalog_token(*db_);
    if (token.empty()) return std::make_shared<const Objects>(load_objects(*db_));
    if (auto hit = shared_catalogs().loaded_for(token)) return hit;
    auto loaded = std::make_shared<const Objects>(load_objects(*db_));
    shared_catalogs().remember(token, loaded);
    return loaded;
  });
}

Objects Reader::objects() { return *catalog(); }

Micros Reader::now() {
  return one_read(*db_, in_snapshot(),
                  [&]() { return std::max(wall_clock_micros(), WriteState::load(*db_).last_time); });
}

std::unique_ptr<RowCursor> Reader::mapping_rows(const CellRange& start_lsn) {
  auto db = pooled_file(path_);
  auto txn = std::make_unique<ReadTxn>(*db);
  std::vector<Cell> binds;
  const std::string sql =
      "SELECT start_lsn, tran_begin_time, tran_end_time, tran_id, tran_begin_lsn FROM \"cdc.lsn_time_mapping\"" +
      range_where("start_lsn", start_lsn, binds) + " ORDER BY start_lsn";
  return std::make_unique<SqlCursor>(std::move(db), std::move(txn), sql, binds,
                                     IoRead(io_tallies(), "cdc.lsn_time_mapping", start_lsn.lo.has_value()));
}

std::unique_ptr<RowCursor> Reader::change_table_rows(std::string_view ci, const CellRange& start_lsn, bool fire_hooks) {
  // The hooks fire before the read transaction starts, as in read_changes.
  ReadHooks hooks = fire_hooks ? ReadHooks::claim(path_, "changes") : ReadHooks{};
  auto db = pooled_file(path_);
  // Sch-S while the client reads, so sp_cdc_disable_table waits for it; taken before the read
  // transaction, so the instance it reads is the one locked.
  SchemaLock lock;
  {
    ReadTxn peek(*db);
    const Instance locked = load_instance(*db, ci);
    const std::int64_t timeout = lock_timeout_ms(*db);
    peek.end();
    lock = SchemaLock(path_, locked.object_id, SchemaLock::Mode::Shared, timeout);
  }
  auto txn = std::make_unique<ReadTxn>(*db);
  const Instance in = load_instance(*db, ci);
  std::string sql = R"(SELECT "__$start_lsn", "__$end_lsn", "__$seqval", "__$operation", "__$update_mask")";
  for (const auto& c : in.columns) sql += ", " + quote_ident(c.name);
  if (in.has_command_id) sql += R"(, "__$command_id")";
  std::vector<Cell> binds;
  sql += " FROM " + in.change_table() + range_where(R"("__$start_lsn")", start_lsn, binds);
  sql += in.has_command_id ? R"( ORDER BY "__$start_lsn", "__$command_id", "__$seqval", "__$operation")"
                           : R"( ORDER BY "__$start_lsn", "__$seqval", "__$operation")";
  IoRead io(io_tallies(), "cdc." + std::string(ci) + "_CT", start_lsn.lo.has_value());
  return std::make_unique<SqlCursor>(std::move(db), std::move(txn), sql, binds, std::move(io),
                                     CursorHooks{path_, std::move(hooks), in.object_id, std::move(lock)});
}

std::int64_t Reader::change_row_count(std::string_view ci) {
  return one_read(*db_, in_snapshot(), [&]() {
    auto st = db_->prepare("SELECT count(*) FROM " + load_instance(*db_, ci).change_table());
    st.step();
    return st.i64(0);
  });
}

std::unique_ptr<RowCursor> Reader::table_rows(std::string_view table, const CellRange& first_key, bool fire_hooks,
                                              bool dirty) {
  if (!dirty) {
    // The range is on the first primary key column; a heap's reads are never ranged.
    LockRange range;
    range.whole = !first_key.lo && !first_key.hi;
    if (first_key.lo) {
      range.lo = std::vector<Cell>{first_key.lo->value};
      range.lo_inclusive = first_key.lo->inclusive;
    }
    if (first_key.hi) {
      range.hi = std::vector<Cell>{first_key.hi->value};
      range.hi_inclusive = first_key.hi->inclusive;
    }
    guard_read(table, range);
  }
  ReadHooks hooks = fire_hooks ? ReadHooks::claim(path_, "table") : ReadHooks{};
  auto db = pooled_file(path_);
  auto txn = std::make_unique<ReadTxn>(*db);
  const Table t = load_table(*db, table);
  std::string sql = "SELECT ";
  for (std::size_t i = 0; i < t.columns.size(); ++i) sql += (i ? ", " : "") + quote_ident(t.columns[i].name);
  sql += " FROM " + t.storage();
  std::vector<Cell> binds;
  const auto key = t.key();
  if (key.empty()) {
    if (first_key.lo || first_key.hi)
      throw Error(ErrorKind::InvalidArgument, t.full_name() + " is a heap: no key range");
    sql += " ORDER BY rowid";
  } else {
    sql += range_where(quote_ident(key[0]->name), first_key, binds) + " ORDER BY ";
    for (std::size_t i = 0; i < key.size(); ++i) sql += (i ? ", " : "") + quote_ident(key[i]->name);
  }
  // A heap's read and an unbounded one start at the first row: a scan.
  IoRead io(io_tallies(), t.full_name(), first_key.lo.has_value());
  // Read in the cursor's own read transaction, so they match the committed rows it steps.
  PendingRows pending =
      key.empty() ? PendingRows{} : visible_pending_rows(*db, path_, t.object_id, own_lock_owner_, dirty);
  auto cursor = std::make_unique<SqlCursor>(std::move(db), std::move(txn), sql, binds, std::move(io),
                                            CursorHooks{path_, std::move(hooks), 0, SchemaLock{}});
  if (pending.empty()) return cursor;
  return overlay_rows(std::move(cursor), t, std::move(pending));
}

}  // namespace mssqlcdc::emu
