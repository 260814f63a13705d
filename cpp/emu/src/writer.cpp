// writer.cpp: the Engine's write transactions: state, catalog cache, commits, idle entries,
// open transactions and hook registration. DML is in dml.cpp, DDL in schema.cpp.
#include <algorithm>
#include <set>

#include "ascii.hpp"
#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/error.hpp"
#include "pending_rows.hpp"
#include "row_locks.hpp"

namespace mssqlcdc::emu {

void Engine::create(const std::filesystem::path& path, const CreateOptions& options) { create_file(path, options); }

Engine::Engine(const std::filesystem::path& path) : db_(open_file(path)) {}

Engine::~Engine() { rollback_all(); }

bool Engine::manual() { return cached_setting("capture") == "manual"; }

void Engine::sync_cache() {
  const std::int64_t v = catalog_version(*db_);
  if (v == cache_version_) return;
  table_cache_.clear();
  instance_cache_.clear();
  setting_cache_.clear();
  cache_version_ = v;
}

const Table& Engine::cached_table(const std::string& name) {
  std::string k = ascii_lower(name);
  if (k.find('.') == std::string::npos) k = "dbo." + k;
  auto it = table_cache_.find(k);
  if (it == table_cache_.end()) it = table_cache_.emplace(k, load_table(*db_, name)).first;
  return it->second;
}

const std::vector<Instance>& Engine::instances(std::int64_t table_id) {
  auto it = instance_cache_.find(table_id);
  if (it == instance_cache_.end()) it = instance_cache_.emplace(table_id, instances_of(*db_, table_id)).first;
  return it->second;
}

const std::string& Engine::cached_setting(const std::string& name) {
  auto it = setting_cache_.find(name);
  if (it == setting_cache_.end()) it = setting_cache_.emplace(name, get_setting(*db_, name)).first;
  return it->second;
}

const TimeZone& Engine::zone() {
  const std::string& name = cached_setting("time_zone");
  if (!zone_ || zone_->name() != name) zone_ = TimeZone::load(name);
  return *zone_;
}

std::string Engine::setting(const std::string& name) {
  ReadTxn r(*db_);
  return get_setting(*db_, name);
}

void Engine::configure(const std::string& name, const std::string& value) {
  if (name == "capture" && value == "immediate") drain();
  Txn txn(*this);
  set_setting(*db_, name, value);
  txn.commit();
}

Micros Engine::last_time() {
  ReadTxn r(*db_);
  return WriteState::load(*db_).last_time;
}

std::optional<Lsn> Engine::max_lsn() {
  ReadTxn r(*db_);
  auto st = db_->prepare("SELECT max(start_lsn) FROM \"cdc.lsn_time_mapping\"");
  if (!st.step() || st.is_null(0)) return std::nullopt;
  return lsn_from_blob(st.blob(0));
}

std::int64_t Engine::next_object_id() {
  const std::int64_t id = meta_int(*db_, "next_object_id");
  meta_set(*db_, "next_object_id", std::to_string(id + 1));
  return id;
}

void Engine::check_no_open_txn(std::int64_t table_id, std::string_view what) {
  for (const auto& [id, t] : open_) {
    for (const auto& [key, cells] : t.keys) {
      if (key.first == table_id) {
        throw Error(ErrorKind::InvalidArgument, std::string(what) +
                                                    " while an open Transaction of this Emulator has "
                                                    "changes on the table; commit or roll it back first");
      }
    }
  }
}

Lsn Engine::commit_record(LogRecord& rec, WriteState& s, std::optional<Micros> at) {
  const Micros t = next_event_time(at, s.last_time);
  s.last_time = t;
  rec.kind = LogRecord::Kind::Txn;
  rec.commit_lsn = s.cursor.take();
  s.cursor.flush();
  rec.tran_id = tran_id_bytes(++s.tran_counter);
  rec.end_time = t;
  if (rec.begin_time == 0) rec.begin_time = t;
  emit(rec);
  return rec.commit_lsn;
}

void Engine::emit(const LogRecord& rec) {
  if (!manual()) {
    capture_record(*db_, rec, zone(), rec.kind == LogRecord::Kind::Txn ? this : nullptr);
    return;
  }
  const char* kind = rec.kind == LogRecord::Kind::Txn      ? "txn"
                     : rec.kind == LogRecord::Kind::Ddl    ? "ddl"
                     : rec.kind == LogRecord::Kind::Enable ? "enable"
                                                           : "idle";
  db_->prepare(
         "INSERT INTO emu_log (commit_lsn, kind, begin_lsn, tran_id, begin_time, end_time, payload) VALUES (?, ?, ?, "
         "?, ?, ?, ?)")
      .bind_blob(1, lsn_blob(rec.commit_lsn))
      .bind(2, std::string_view(kind))
      .bind_blob(3, lsn_blob(rec.begin_lsn))
      .bind_blob(4, rec.tran_id)
      .bind(5, rec.begin_time)
      .bind(6, rec.end_time)
      .bind_blob(7, rec.payload())
      .run();
}

Lsn Engine::commit(const std::vector<Change>& changes, std::optional<Micros> at) {
  before_event(at);
  Txn txn(*this);
  WriteState s = load_state();
  LogRecord rec;
  rec.begin_lsn = s.cursor.take();
  LockedKeys keys;
  apply(changes, s, rec, nullptr, keys, 0);
  const Lsn lsn = commit_record(rec, s, at);
  store_state(s);
  txn.commit();
  return lsn;
}

std::vector<Lsn> Engine::commit_many(const std::vector<std::vector<Change>>& transactions,
                                     const std::vector<std::optional<Micros>>& at) {
  if (!at.empty() && at.size() != 1 && at.size() != transactions.size()) {
    throw Error(ErrorKind::InvalidArgument, "commit_many: give one time, one per transaction, or none");
  }
  // The jobs run up to the first transaction's time; the later ones wait for the next cycle.
  before_event(at.empty() ? std::nullopt : at[0]);
  Txn txn(*this);
  WriteState s = load_state();
  std::vector<Lsn> out;
  for (std::size_t i = 0; i < transactions.size(); ++i) {
    LogRecord rec;
    rec.begin_lsn = s.cursor.take();
    LockedKeys keys;
    apply(transactions[i], s, rec, nullptr, keys, 0);
    std::optional<Micros> when;
    if (at.size() == 1) when = at[0];
    else if (at.size() == transactions.size()) when = at[i];
    out.push_back(commit_record(rec, s, when));
  }
  store_state(s);
  txn.commit();
  return out;
}

Lsn Engine::idle(std::optional<Micros> at) {
  before_event(at);
  Txn txn(*this);
  WriteState s = load_state();
  LogRecord rec;
  rec.kind = LogRecord::Kind::Idle;
  rec.end_time = rec.begin_time = s.last_time = next_event_time(at, s.last_time);
  rec.commit_lsn = rec.begin_lsn = s.cursor.take();
  s.cursor.flush();
  rec.tran_id = std::string(10, '\0');
  emit(rec);
  store_state(s);
  txn.commit();
  return rec.commit_lsn;
}

std::int64_t Engine::begin(std::optional<Micros> at) {
  before_event(at);
  Txn txn(*this);
  WriteState s = load_state();
  OpenTxn t;
  t.begin_lsn = s.cursor.take();
  t.begin_time = s.last_time = next_event_time(at, s.last_time);
  const std::int64_t owner = new_lock_owner(*db_, db_->path());
  store_state(s);
  txn.commit();
  t.holder = std::make_shared<OwnerLock>(db_->path(), owner);
  const std::int64_t id = next_txn_++;
  open_.emplace(id, std::move(t));
  return id;
}

void Engine::execute(std::int64_t id, const std::vector<Change>& changes) {
  auto it = open_.find(id);
  if (it == open_.end()) throw Error(ErrorKind::InvalidArgument, "this Transaction is no longer open; begin a new one");
  OpenTxn& t = it->second;
  // Validate the changes on top of this transaction's earlier ones, take their seqvals now,
  // then roll the source tables back: the changes stay invisible until commit.
  Txn txn(*this);
  WriteState s = load_state();
  std::vector<Change> all = t.changes;
  all.insert(all.end(), changes.begin(), changes.end());
  db_->exec("SAVEPOINT validate");
  LogRecord rec;
  LockedKeys keys;
  std::map<std::int64_t, PendingRows> pending;
  try {
    apply(all, s, rec, &t.seqvals, keys, id);
    // The rows as the writes left them, which the session's own reads see (decision 1446).
    std::map<std::int64_t, const Table*> tables;
    for (const Change& ch : all) {
      const Table& table = cached_table(ch.table);
      tables.emplace(table.object_id, &table);
    }
    pending = read_after_images(*db_, tables, keys);
  } catch (...) {
    db_->exec("ROLLBACK TO validate; RELEASE validate");
    throw;
  }
  db_->exec("ROLLBACK TO validate; RELEASE validate");
  std::vector<Lsn> seqvals;
  for (const auto& op : rec.ops) seqvals.push_back(op.seqval);
  store_state(s);
  record_row_locks(*db_, t.holder->owner(), keys);  // other readers now wait for these rows
  record_pending_rows(*db_, t.holder->owner(), pending);
  txn.commit();
  t.changes = std::move(all);
  t.seqvals = std::move(seqvals);
  t.keys = std::move(keys);
}

Lsn Engine::commit_open(std::int64_t id, std::optional<Micros> at) {
  before_event(at);
  auto it = open_.find(id);
  if (it == open_.end()) throw Error(ErrorKind::InvalidArgument, "this Transaction is no longer open; begin a new one");
  OpenTxn t = std::move(it->second);
  open_.erase(it);
  if (t.changes.empty()) {
    throw Error(ErrorKind::InvalidArgument,
                "this Transaction has no changes; execute some before commit (it is now rolled back)");
  }
  Txn txn(*this);
  WriteState s = load_state();
  LogRecord rec;
  rec.begin_lsn = t.begin_lsn;
  rec.begin_time = t.begin_time;
  LockedKeys keys;
  apply(t.changes, s, rec, &t.seqvals, keys, id);
  const Lsn lsn = commit_record(rec, s, at);
  store_state(s);
  // The locks go in the commit's own write, then the owner byte with `t`: a reader that sees
  // the byte free sees the commit.
  drop_row_locks(*db_, t.holder->owner());
  txn.commit();
  return lsn;
}

void Engine::end_open(std::map<std::int64_t, OpenTxn>::iterator it) noexcept {
  try {
    if (!it->second.keys.empty()) {
      Txn txn(*this);
      drop_row_locks(*db_, it->second.holder->owner());
      txn.commit();
    }
  } catch (...) {
    // Left in the file, the rows block nothing once the owner byte is free; begin() drops them.
  }
  open_.erase(it);
}

void Engine::rollback(std::int64_t id) {
  auto it = open_.find(id);
  if (it != open_.end()) end_open(it);
}

std::int64_t Engine::lock_owner(std::int64_t id) const {
  const auto it = open_.find(id);
  if (it == open_.end()) throw Error(ErrorKind::InvalidArgument, "this Transaction is no longer open; begin a new one");
  return it->second.holder->owner();
}

void Engine::rollback_all() {
  while (!open_.empty()) end_open(open_.begin());
}

void Engine::add_hook(const std::string& kind, const std::string& read_kind, const std::string& payload) {
  Txn txn(*this);
  const Micros now = WriteState::load(*db_).last_time;
  db_->prepare("INSERT INTO emu_hooks (kind, read_kind, payload, registered_at) VALUES (?, ?, ?, ?)")
      .bind(1, std::string_view(kind))
      .bind(2, std::string_view(read_kind))
      .bind_blob(3, payload)
      .bind(4, now)
      .run();
  txn.commit();
}

}  // namespace mssqlcdc::emu
