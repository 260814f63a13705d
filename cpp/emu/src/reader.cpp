// reader.cpp: the metadata and planning queries of the read interface.
#include "mssqlcdc/emu/reader.hpp"

#include <algorithm>

#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/emu/log.hpp"
#include "mssqlcdc/emu/permissions.hpp"
#include "mssqlcdc/error.hpp"
#include "row_locks.hpp"
#include "scan.hpp"
#include "schema_lock.hpp"

namespace mssqlcdc::emu {

Reader::Reader(std::filesystem::path file)
    : path_(std::move(file)), db_(pooled_file(path_)), file_io_(file_io(path_)) {}

Reader::~Reader() = default;

template <typename Fn>
auto Reader::in_read(Fn fn) {
  if (snapshot_) return fn();
  ReadTxn r(*db_);
  auto out = fn();
  r.end();
  return out;
}

void Reader::act_as(std::optional<std::string> user, std::optional<std::string> database, bool strict) {
  std::optional<std::string> found;
  if (user) {
    found = in_read([&]() { return strict ? find_user(*db_, *user) : user_of_login(*db_, *user); });
    if (!found && strict) {
      throw Error(ErrorKind::EmuUnknownObject,
                  "no database user '" + *user + "' in " + path_.string() + "; create it with create_user", 15151);
    }
  }
  user_ = found;
  database_ = database.value_or(std::string());
}

bool Reader::may_read(std::string_view ci) {
  if (!user_) return true;
  return in_read([&]() {
    const auto in = find_instance(*db_, ci);
    return !in || emu::may_read(*db_, user_, in->object_id);
  });
}

std::optional<LoginRecord> Reader::find_login(std::string_view name) {
  return in_read([&]() { return emu::find_login(*db_, name); });
}

void Reader::check_select(std::string_view schema, std::string_view table) {
  if (!user_) return;
  in_read([&]() {
    if (!may_select(*db_, user_, schema, table)) {
      select_denied_in(table, database_.empty() ? path_.stem().string() : database_, schema);
    }
    return 0;
  });
}

void Reader::check_read(std::string_view ci, std::string_view prefix, std::string_view suffix) {
  if (!user_) return;
  in_read([&]() {
    const auto in = find_instance(*db_, ci);
    if (in && !emu::may_read(*db_, user_, in->object_id)) {
      select_denied(std::string(prefix) + in->name + std::string(suffix),
                    database_.empty() ? path_.stem().string() : database_);
    }
    return 0;
  });
}

void Reader::guard_read(std::string_view table, const LockRange& range) {
  if (isolation_ == Isolation::ReadUncommitted) return;
  std::int64_t id = 0;
  std::string name;
  std::int64_t timeout = lock_timeout_ms_;
  in_read([&]() {
    const Table t = load_table(*db_, table);
    id = t.object_id;
    name = t.full_name();
    if (timeout < 0) timeout = lock_timeout_ms(*db_);
    return 0;
  });
  before_source_read(*db_, path_, isolation_, id, name, range, timeout,
                     database_.empty() ? path_.stem().string() : database_, in_snapshot(), own_lock_owner_);
}

void Reader::guard_key_read(std::string_view table, const std::optional<std::vector<std::string>>& key_columns,
                            const std::optional<Key>& lo, bool lo_inclusive, const std::optional<Key>& hi,
                            bool hi_inclusive) {
  if (isolation_ == Isolation::ReadUncommitted) return;
  LockRange range;
  in_read([&]() {
    const Table t = load_table(*db_, table);
    const auto primary = t.key();
    if (t.heap || (!lo && !hi)) return 0;  // every row, or a heap whose locks hold the whole table
    const auto key = key_columns_of(t, key_columns);
    // Bounds on other columns than the primary key's leading ones say nothing of the locked keys.
    bool on_primary = key.size() <= primary.size();
    for (std::size_t i = 0; on_primary && i < key.size(); ++i) on_primary = key[i]->column_id == primary[i]->column_id;
    if (!on_primary) return 0;
    range.whole = false;
    if (lo) range.lo = key_cells(t, key, *lo, "lo");
    if (hi) range.hi = key_cells(t, key, *hi, "hi");
    range.lo_inclusive = lo_inclusive;
    range.hi_inclusive = hi_inclusive;
    return 0;
  });
  guard_read(table, range);
}

void Reader::begin_snapshot() {
  if (snapshot_)
    throw Error(ErrorKind::InvalidArgument, "a snapshot() is already open on this reader; nest no snapshots");
  snapshot_ = std::make_unique<ReadTxn>(*db_);
  // The first read fixes the snapshot now, not at the first call inside it.
  auto st = db_->prepare("SELECT count(*) FROM emu_meta");
  st.step();
}

void Reader::end_snapshot() {
  if (snapshot_) snapshot_->end();
  snapshot_.reset();
}

std::optional<Lsn> Reader::max_lsn() {
  return in_read([&]() -> std::optional<Lsn> {
    auto st = db_->prepare("SELECT max(start_lsn) FROM \"cdc.lsn_time_mapping\"");
    if (!st.step() || st.is_null(0)) return std::nullopt;
    return lsn_from_blob(st.blob(0));
  });
}

std::optional<Lsn> Reader::max_commit_lsn() {
  return in_read([&]() -> std::optional<Lsn> {
    auto st = db_->prepare("SELECT max(start_lsn) FROM \"cdc.lsn_time_mapping\" WHERE tran_id <> zeroblob(10)");
    if (!st.step() || st.is_null(0)) return std::nullopt;
    return lsn_from_blob(st.blob(0));
  });
}

MinLsn Reader::min_lsn(std::string_view ci) {
  return in_read([&]() {
    MinLsn out;
    if (ci.empty()) return out;
    auto in = find_instance(*db_, ci);
    // "the caller is not authorized": the same zeros as for no such instance
    if (!in || !emu::may_read(*db_, user_, in->object_id)) return out;
    auto st = db_->prepare("SELECT max(start_lsn) FROM \"cdc.lsn_time_mapping\"");
    st.step();
    if (!in->established || st.is_null(0) || lsn_from_blob(st.blob(0)) < in->start_lsn) {
      out.state = MinLsn::State::NotEstablished;
      return out;
    }
    out.state = MinLsn::State::Value;
    out.lsn = in->start_lsn;
    return out;
  });
}

namespace {

// One time of one mapping entry picked by `sql`, which takes the LSN as its parameter.
std::optional<Micros> entry_time(Db& db, const char* sql, const Lsn& lsn) {
  auto st = db.prepare(sql);
  st.bind_blob(1, lsn_blob(lsn));
  if (!st.step()) return std::nullopt;
  return st.i64(0);
}

}  // namespace

std::optional<Micros> Reader::lsn_to_time(const Lsn& lsn) {
  return in_read([&]() {
    return entry_time(*db_, "SELECT tran_end_time FROM \"cdc.lsn_time_mapping\" WHERE start_lsn = ?", lsn);
  });
}

std::optional<Micros> Reader::lsn_to_utc(const Lsn& lsn) {
  return in_read(
      [&]() { return entry_time(*db_, "SELECT tran_end_utc FROM \"cdc.lsn_time_mapping\" WHERE start_lsn = ?", lsn); });
}

std::optional<Micros> Reader::time_at_or_below(const Lsn& lsn) {
  return in_read([&]() {
    return entry_time(
        *db_, "SELECT tran_end_time FROM \"cdc.lsn_time_mapping\" WHERE start_lsn <= ? ORDER BY start_lsn DESC LIMIT 1",
        lsn);
  });
}

std::optional<Lsn> Reader::time_to_lsn(Relation rel, Micros t) {
  return in_read([&]() -> std::optional<Lsn> {
    const char* sql = nullptr;
    switch (rel) {
      case Relation::LargestLessThan:
        sql =
            "SELECT max(start_lsn) FROM \"cdc.lsn_time_mapping\" WHERE tran_end_time = (SELECT max(tran_end_time) FROM "
            "\"cdc.lsn_time_mapping\" WHERE tran_end_time < ?1)";
        break;
      case Relation::LargestLessOrEqual:
        sql =
            "SELECT max(start_lsn) FROM \"cdc.lsn_time_mapping\" WHERE tran_end_time = (SELECT max(tran_end_time) FROM "
            "\"cdc.lsn_time_mapping\" WHERE tran_end_time <= ?1)";
        break;
      case Relation::SmallestGreaterThan:
        sql =
            "SELECT min(start_lsn) FROM \"cdc.lsn_time_mapping\" WHERE tran_end_time = (SELECT min(tran_end_time) FROM "
            "\"cdc.lsn_time_mapping\" WHERE tran_end_time > ?1)";
        break;
      case Relation::SmallestGreaterOrEqual:
        sql =
            "SELECT min(start_lsn) FROM \"cdc.lsn_time_mapping\" WHERE tran_end_time = (SELECT min(tran_end_time) FROM "
            "\"cdc.lsn_time_mapping\" WHERE tran_end_time >= ?1)";
        break;
    }
    auto st = db_->prepare(sql);
    st.bind(1, round_to_tick(t));
    if (!st.step() || st.is_null(0)) return std::nullopt;
    return lsn_from_blob(st.blob(0));
  });
}

std::optional<Lsn> Reader::nth_commit_after(const Lsn& after, std::int64_t n, std::optional<std::string> ci) {
  if (n < 1) throw Error(ErrorKind::InvalidArgument, "nth_commit_after: n must be 1 or more, got " + std::to_string(n));
  return in_read([&]() -> std::optional<Lsn> {
    std::string sql;
    if (ci) {
      const Instance in = load_instance(*db_, *ci);
      sql = "SELECT DISTINCT \"__$start_lsn\" FROM " + in.change_table() +
            " WHERE \"__$start_lsn\" > ? ORDER BY 1 LIMIT 1 OFFSET ?";
    } else {
      sql = "SELECT start_lsn FROM \"cdc.lsn_time_mapping\" WHERE start_lsn > ? ORDER BY 1 LIMIT 1 OFFSET ?";
    }
    auto st = db_->prepare(sql);
    st.bind_blob(1, lsn_blob(after)).bind(2, n - 1);
    if (!st.step()) return std::nullopt;
    return lsn_from_blob(st.blob(0));
  });
}

std::vector<Tile> Reader::split_points(std::string_view ci, std::optional<Lsn> from, std::optional<Lsn> to, int n) {
  if (n < 1) throw Error(ErrorKind::InvalidArgument, "split_points: n must be 1 or more, got " + std::to_string(n));
  return in_read([&]() {
    const Instance in = load_instance(*db_, ci);
    if (!emu::may_read(*db_, user_, in.object_id)) {
      select_denied("fn_cdc_get_all_changes_" + in.name, database_.empty() ? path_.stem().string() : database_);
    }
    check_change_range(*db_, in, from, to, "all update old");
    std::vector<std::pair<Lsn, std::int64_t>> commits;
    auto st = db_->prepare("SELECT \"__$start_lsn\", count(*) FROM " + in.change_table() +
                           " WHERE \"__$start_lsn\" BETWEEN ? AND ? GROUP BY 1 ORDER BY 1");
    st.bind_blob(1, lsn_blob(*from)).bind_blob(2, lsn_blob(*to));
    std::int64_t total = 0;
    while (st.step()) {
      commits.emplace_back(lsn_from_blob(st.blob(0)), st.i64(1));
      total += st.i64(1);
    }
    std::vector<Tile> tiles;
    std::int64_t cum = 0;
    std::int64_t tile_rows = 0;
    std::size_t c = 0;
    for (int i = 1; i < n; ++i) {
      // bound i: the smallest commit with at least i*R/n rows in [from, bound]
      while (c < commits.size() && cum * n < static_cast<std::int64_t>(i) * total) {
        cum += commits[c].second;
        tile_rows += commits[c].second;
        ++c;
      }
      if (c == 0 || cum * n < static_cast<std::int64_t>(i) * total) break;
      if (cum >= total) break;  // reaching R: the bound becomes `to`, which ends the list
      if (!tiles.empty() && tiles.back().last == commits[c - 1].first) continue;
      if (tile_rows == 0) continue;
      tiles.push_back(Tile{commits[c - 1].first, tile_rows});
      tile_rows = 0;
    }
    std::int64_t rest = total;
    for (const auto& t : tiles) rest -= t.rows;
    tiles.push_back(Tile{*to, rest});
    return tiles;
  });
}

std::vector<ColumnInfo> Reader::captured_columns(std::string_view ci) {
  return in_read([&]() {
    const Instance in = load_instance(*db_, ci);
    std::vector<ColumnInfo> out;
    for (const auto& c : in.columns) {
      out.push_back(ColumnInfo{c.name, c.column_id, c.ordinal, c.type.canonical(), c.type.arrow_name(), c.present,
                               false, c.is_computed, true, c.type.collation_name()});
    }
    return out;
  });
}

std::vector<DdlEntry> Reader::ddl_history(std::string_view ci, const Lsn& after, const Lsn& upto) {
  return in_read([&]() {
    const Instance in = load_instance(*db_, ci);
    std::vector<DdlEntry> out;
    auto st = db_->prepare(
        "SELECT ddl_lsn, ddl_time, ddl_command, required_column_update, kind, column_name, new_type, ddl_time_utc FROM "
        "\"cdc.ddl_history\" WHERE object_id = ? AND ddl_lsn > ? AND ddl_lsn <= ? ORDER BY ddl_lsn");
    st.bind(1, in.object_id).bind_blob(2, lsn_blob(after)).bind_blob(3, lsn_blob(upto));
    while (st.step()) {
      DdlEntry e;
      e.ddl_lsn = lsn_from_blob(st.blob(0));
      e.ddl_time = st.i64(1);
      e.ddl_command = st.text(2);
      e.required_column_update = st.i64(3) != 0;
      e.kind = st.text(4);
      e.column = st.text(5);
      if (!st.is_null(6)) e.new_type = st.text(6);
      e.ddl_time_utc = st.i64(7);
      out.push_back(std::move(e));
    }
    return out;
  });
}

namespace {

InstanceInfo info_of(const Instance& in, const std::string& table) {
  return InstanceInfo{in.name,         table,          in.start_lsn,       in.established,
                      in.create_lsn,   in.create_date, in.create_date_utc, in.has_command_id,
                      in.index_columns};
}

}  // namespace

std::vector<InstanceInfo> Reader::capture_instances(std::string_view table) {
  return in_read([&]() {
    const Table t = load_table(*db_, table);
    std::vector<InstanceInfo> out;
    for (const auto& in : instances_of(*db_, t.object_id)) {
      // sp_cdc_help_change_data_capture lists only the instances the caller may read
      if (emu::may_read(*db_, user_, in.object_id)) out.push_back(info_of(in, t.full_name()));
    }
    return out;
  });
}

InstanceInfo Reader::resolve_instance(std::string_view ci) {
  return in_read([&]() {
    const Instance in = load_instance(*db_, ci);
    return info_of(in, load_table_by_id(*db_, in.source_object_id).full_name());
  });
}

TableInfo Reader::table_info(std::string_view table) {
  return in_read([&]() {
    const Table t = load_table(*db_, table);
    TableInfo out;
    out.name = t.full_name();
    for (const auto& c : t.columns) {
      out.columns.push_back(ColumnInfo{c.name, c.column_id, c.key_ordinal, c.type.canonical(), c.type.arrow_name(),
                                       true, c.is_identity, c.computed != nullptr, c.nullable,
                                       c.type.collation_name()});
    }
    for (const Column* k : t.key()) out.key_columns.push_back(k->name);
    auto st = db_->prepare("SELECT count(*) FROM " + t.storage());
    st.step();
    out.row_count = st.i64(0);
    return out;
  });
}

Value Reader::to_value(const Cell& c, const SqlType& type) {
  Value v;
  if (c.is_null()) return v;
  switch (type.family()) {
    case Family::Bit:
      v.kind = Value::Kind::Bool;
      v.i = c.i;
      break;
    case Family::Integer:
      v.kind = Value::Kind::Int;
      v.i = c.i;
      break;
    case Family::Exact:
      v.kind = Value::Kind::Decimal;
      v.s = decimal_text(c.s, type.scale);
      break;
    case Family::Approximate:
      v.kind = Value::Kind::Float;
      v.f = c.d;
      break;
    case Family::Temporal:
      v.i = type.stores_ticks() ? ticks_to_micros(c.i) : c.i;
      v.sub_ticks = type.stores_ticks() ? ticks_beyond_micros(c.i) : 0;
      v.kind = type.base == Base::Date             ? Value::Kind::Date
               : type.base == Base::Time           ? Value::Kind::Time
               : type.base == Base::DateTimeOffset ? Value::Kind::DateTimeTz
                                                   : Value::Kind::DateTime;
      break;
    case Family::Character:
    case Family::Xml:
      v.kind = Value::Kind::Text;
      v.s = c.s;
      break;
    case Family::Guid:
      v.kind = Value::Kind::Text;
      v.s = guid_to_text(c.s);
      break;
    default:
      v.kind = Value::Kind::Bytes;
      v.s = c.s;
      break;
  }
  return v;
}

std::optional<KeyExtent> Reader::key_extent(std::string_view table,
                                            const std::optional<std::vector<std::string>>& key_columns) {
  guard_key_read(table, key_columns, std::nullopt, true, std::nullopt, false);
  return in_read([&]() -> std::optional<KeyExtent> {
    const Table t = load_table(*db_, table);
    const auto key = key_columns_of(t, key_columns);
    KeyExtent out;
    {
      auto st = db_->prepare("SELECT count(*) FROM " + t.storage());
      st.step();
      out.rows = st.i64(0);
      IoRead(io_tallies(), t.full_name(), false).rows(out.rows);  // a count visits every row
    }
    if (out.rows == 0) return std::nullopt;
    for (const bool last : {false, true}) {
      auto st = db_->prepare("SELECT " + key_select(key) + " FROM " + t.storage() + " ORDER BY " +
                             key_order(key, last) + " LIMIT 1");
      st.step();
      IoRead(io_tallies(), t.full_name(), false).rows(1);
      Key k;
      for (std::size_t i = 0; i < key.size(); ++i) k.push_back(to_value(st.cell(static_cast<int>(i)), key[i]->type));
      (last ? out.max : out.min) = std::move(k);
    }
    return out;
  });
}

std::vector<Key> Reader::key_tiles(std::string_view table, std::int64_t n, std::int64_t rows_per_tile,
                                   const std::optional<std::vector<std::string>>& key_columns) {
  if ((n > 0) == (rows_per_tile > 0)) {
    throw Error(ErrorKind::InvalidArgument, "key_tiles: give either n tiles or rows_per_tile, a positive number");
  }
  guard_key_read(table, key_columns, std::nullopt, true, std::nullopt, false);
  return in_read([&]() {
    const Table t = load_table(*db_, table);
    const auto key = key_columns_of(t, key_columns);
    std::int64_t rows = 0;
    {
      auto st = db_->prepare("SELECT count(*) FROM " + t.storage());
      st.step();
      rows = st.i64(0);
      IoRead(io_tallies(), t.full_name(), false).rows(rows);  // a count visits every row
    }
    // The row indexes where tiles 2, 3, ... start.
    std::vector<std::int64_t> starts;
    if (n > 0) {
      const std::int64_t k = std::min(n, rows);
      std::int64_t at = 0;
      for (std::int64_t i = 0; i + 1 < k; ++i) {
        at += rows / k + (i < rows % k ? 1 : 0);
        starts.push_back(at);
      }
    } else {
      for (std::int64_t at = rows_per_tile; at < rows; at += rows_per_tile) starts.push_back(at);
    }
    std::vector<Key> out;
    if (starts.empty()) return out;
    auto st = db_->prepare("SELECT " + key_select(key) + " FROM " + t.storage() + " ORDER BY " + key_order(key, false));
    std::int64_t index = 0;
    std::size_t next = 0;
    const IoRead io(io_tallies(), t.full_name(), false);
    while (next < starts.size() && st.step()) {
      io.rows();
      if (index == starts[next]) {
        Key k;
        for (std::size_t i = 0; i < key.size(); ++i) k.push_back(to_value(st.cell(static_cast<int>(i)), key[i]->type));
        out.push_back(std::move(k));
        ++next;
      }
      ++index;
    }
    return out;
  });
}

std::optional<Key> Reader::next_key(std::string_view table, const Key& after,
                                    const std::optional<std::vector<std::string>>& key_columns) {
  guard_key_read(table, key_columns, after, false, std::nullopt, false);
  return in_read([&]() -> std::optional<Key> {
    const Table t = load_table(*db_, table);
    const auto key = key_columns_of(t, key_columns);
    const auto cells = key_cells(t, key, after, "after");
    auto st = db_->prepare("SELECT " + key_select(key) + " FROM " + t.storage() + " WHERE " + key_compare(key, ">", 1) +
                           " ORDER BY " + key_order(key, false) + " LIMIT 1");
    for (std::size_t i = 0; i < cells.size(); ++i) st.bind(static_cast<int>(i + 1), cells[i]);
    const IoRead io(io_tallies(), t.full_name(), true);
    if (!st.step()) return std::nullopt;
    io.rows();
    Key k;
    for (std::size_t i = 0; i < key.size(); ++i) k.push_back(to_value(st.cell(static_cast<int>(i)), key[i]->type));
    return k;
  });
}

std::optional<Key> Reader::first_key_from(std::string_view table, const Value& first,
                                          const std::optional<std::vector<std::string>>& key_columns) {
  guard_key_read(table, key_columns, std::nullopt, true, std::nullopt, false);
  return in_read([&]() -> std::optional<Key> {
    const Table t = load_table(*db_, table);
    const auto key = key_columns_of(t, key_columns);
    const std::vector<const Column*> leading{key[0]};
    const auto cells = key_cells(t, leading, Key{first}, "first");
    auto st = db_->prepare("SELECT " + key_select(key) + " FROM " + t.storage() + " WHERE " +
                           quote_ident(key[0]->name) + " >= ?1 ORDER BY " + key_order(key, false) + " LIMIT 1");
    st.bind(1, cells[0]);
    const IoRead io(io_tallies(), t.full_name(), true);
    if (!st.step()) return std::nullopt;
    io.rows();
    Key k;
    for (std::size_t i = 0; i < key.size(); ++i) k.push_back(to_value(st.cell(static_cast<int>(i)), key[i]->type));
    return k;
  });
}

std::vector<Bucket> Reader::key_buckets(std::string_view table, int n, std::optional<__int128> lo,
                                        std::optional<__int128> hi,
                                        const std::optional<std::vector<std::string>>& key_columns) {
  if (n < 1) throw Error(ErrorKind::InvalidArgument, "key_buckets: n must be 1 or more, got " + std::to_string(n));
  // Counted as a whole-table read: a bound past the key type's range would not coerce.
  guard_key_read(table, key_columns, std::nullopt, true, std::nullopt, false);
  return in_read([&]() {
    const Table t = load_table(*db_, table);
    const auto key = key_columns_of(t, key_columns);
    if (key.size() != 1 || key[0]->type.family() != Family::Integer) {
      throw Error(ErrorKind::InvalidArgument,
                  t.full_name() + ": key_buckets needs exactly one integer key column; use key_tiles");
    }
    const std::string col = quote_ident(key[0]->name);
    std::vector<Bucket> out;
    if (!lo || !hi) {
      auto st = db_->prepare("SELECT min(" + col + "), max(" + col + ") FROM " + t.storage());
      st.step();
      // Both ends in one statement: SQLite visits every row for them.
      IoRead(io_tallies(), t.full_name(), false)
          .rows(sqlite3_stmt_status(st.raw(), SQLITE_STMTSTATUS_FULLSCAN_STEP, 0) + 1);
      if (st.is_null(0)) return out;
      if (!lo) lo = st.i64(0);
      if (!hi) hi = static_cast<__int128>(st.i64(1)) + 1;
    }
    if (*hi <= *lo) return out;
    const __int128 span = *hi - *lo;
    const __int128 width = span / n;
    const __int128 extra = span % n;
    __int128 at = *lo;
    auto clamp = [](__int128 v) {
      if (v > INT64_MAX) return INT64_MAX;
      if (v < INT64_MIN) return INT64_MIN;
      return static_cast<std::int64_t>(v);
    };
    for (int i = 0; i < n; ++i) {
      const __int128 w = width + (i < extra ? 1 : 0);
      if (w == 0) continue;
      Bucket b{at, at + w, 0};
      // Bounds past the bigint range hold no rows; clamping keeps the query exact.
      const bool top = b.hi > INT64_MAX;
      auto st = db_->prepare("SELECT count(*) FROM " + t.storage() + " WHERE " + col + " >= ? AND " + col +
                             (top ? " <= ?" : " < ?"));
      st.bind(1, clamp(b.lo)).bind(2, top ? INT64_MAX : clamp(b.hi));
      st.step();
      b.rows = b.lo > INT64_MAX ? 0 : st.i64(0);
      IoRead(io_tallies(), t.full_name(), true).rows(b.rows);  // a counted range visits its rows
      out.push_back(b);
      at += w;
    }
    return out;
  });
}

std::optional<Statistics> Reader::statistics(std::string_view table, bool auto_update) {
  auto stored = in_read([&]() -> std::pair<bool, std::optional<Statistics>> {
    const Table t = load_table(*db_, table);
    if (t.heap) return {false, std::nullopt};
    return {true, load_statistics(*db_, t.object_id)};
  });
  if (!stored.first) return std::nullopt;
  const bool stale = !stored.second || statistics_stale(stored.second->rows, stored.second->modification_counter);
  if (!auto_update || !stale || snapshot_) return stored.second;
  try {
    return update_statistics(table);
  } catch (const Error& e) {
    // A busy write lock, or a file this process may not write: the stored ones, as they are.
    if (e.kind() != ErrorKind::EmuBusy && e.kind() != ErrorKind::Io) throw;
    return stored.second;
  }
}

Statistics Reader::update_statistics(std::string_view table) {
  if (snapshot_)
    throw Error(ErrorKind::InvalidArgument, "update_statistics cannot run inside a snapshot; end it first");
  WriteTxn w(*db_);
  const Table t = load_table(*db_, table);
  if (t.heap) {
    throw Error(ErrorKind::InvalidArgument,
                t.full_name() + " is a heap: the emulator keeps statistics only on a primary key; add one");
  }
  const auto key = t.key();
  const IoRead io(IoTallies{file_io_}, t.full_name() + " (statistics)", false);
  Statistics out;
  {
    auto st = db_->prepare("SELECT count(*) FROM " + t.storage());
    st.step();
    out.rows = st.i64(0);
    io.rows(out.rows);  // a count visits every row
  }
  const std::string lead = quote_ident(key[0]->name);
  auto st = db_->prepare("SELECT " + lead + ", count(*) FROM " + t.storage() + " GROUP BY " + lead + " ORDER BY " +
                         key_order({key[0]}, false));
  HistogramBuilder builder(out.rows);
  while (st.step()) {
    const std::int64_t n = st.i64(1);
    io.rows(n);
    out.rows_sampled += n;
    builder.add(st.cell(0), n);
  }
  out.histogram = builder.finish();
  out.last_updated = wall_clock_micros();
  store_statistics(*db_, t.object_id, out);
  w.commit();
  return out;
}

std::vector<std::string> Reader::update_all_statistics() {
  std::vector<std::string> names;
  for (const auto& name : tables()) {
    const auto stored = in_read([&]() -> std::optional<std::optional<Statistics>> {
      const Table t = load_table(*db_, name);
      if (t.heap) return std::nullopt;
      return load_statistics(*db_, t.object_id);
    });
    if (!stored || (*stored && (*stored)->modification_counter == 0)) continue;
    update_statistics(name);
    names.push_back(name);
  }
  return names;
}

std::vector<Entry> Reader::lsn_time_mapping() {
  return in_read([&]() {
    std::vector<Entry> out;
    auto st = db_->prepare(
        "SELECT start_lsn, tran_begin_time, tran_end_time, tran_id, tran_begin_lsn, tran_begin_utc, tran_end_utc "
        "FROM \"cdc.lsn_time_mapping\" ORDER BY start_lsn");
    while (st.step()) {
      out.push_back(Entry{lsn_from_blob(st.blob(0)), st.i64(1), st.i64(2), st.blob(3), lsn_from_blob(st.blob(4)),
                          st.i64(5), st.i64(6)});
    }
    return out;
  });
}

std::string Reader::server_time_zone() {
  return in_read([&]() { return get_setting(*db_, "time_zone"); });
}

bool Reader::shuffle_unordered() {
  return in_read([&]() { return get_setting(*db_, "shuffle_unordered") == "true"; });
}

std::vector<std::string> Reader::tables() {
  return in_read([&]() { return table_names(*db_); });
}

void Reader::read_changes(std::string_view ci, std::optional<Lsn> from, std::optional<Lsn> to,
                          const ChangeReadOptions& options, ArrowArrayStream* out) {
  if (snapshot_) {
    throw Error(ErrorKind::InvalidArgument, "read_changes takes its own read transaction; call it outside snapshot()");
  }
  check_read(ci, "fn_cdc_get_all_changes_");
  export_stream(open_change_scan(path_, ci, from, to, options), out);
}

void Reader::read_table(std::string_view table, const KeyRange& range, const TableReadOptions& options,
                        ArrowArrayStream* out) {
  if (snapshot_) {
    throw Error(ErrorKind::InvalidArgument, "read_table takes its own read transaction; call it outside snapshot()");
  }
  if (!options.inspect) guard_key_read(table, options.key_columns, range.lo, true, range.hi, false);
  export_stream(open_table_scan(path_, table, range, options, options.inspect ? IoTallies{} : io_tallies()), out);
}

}  // namespace mssqlcdc::emu
