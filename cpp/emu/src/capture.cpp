// capture.cpp: turns log records into change rows, lsn_time_mapping entries and DDL history
// and the manual mode's capture cycles.
#include <algorithm>
#include <deque>
#include <map>

#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

const Cell* image_cell(const Image& im, std::int64_t column_id) {
  for (const auto& [id, c] : im) {
    if (id == column_id) return &c;
  }
  return nullptr;
}

std::string update_mask(const Instance& in, const std::vector<std::int64_t>* only) {
  const std::size_t n = in.columns.size();
  std::string mask((n + 7) / 8, '\0');
  for (const auto& c : in.columns) {
    if (only != nullptr && std::find(only->begin(), only->end(), c.column_id) == only->end()) continue;
    const auto j = static_cast<std::size_t>(c.ordinal - 1);
    mask[mask.size() - 1 - j / 8] =
        static_cast<char>(static_cast<unsigned char>(mask[mask.size() - 1 - j / 8]) | (1u << (j % 8)));
  }
  return mask;
}

void insert_entry(Db& db, const LogRecord& rec, const TimeZone& zone) {
  db.prepare(
        "INSERT INTO \"cdc.lsn_time_mapping\" (start_lsn, tran_begin_time, tran_end_time, tran_id, tran_begin_lsn, "
        "tran_begin_utc, tran_end_utc) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .bind_blob(1, lsn_blob(rec.commit_lsn))
      .bind(2, zone.to_local(rec.begin_time))
      .bind(3, zone.to_local(rec.end_time))
      .bind_blob(4, rec.tran_id)
      .bind_blob(5, lsn_blob(rec.begin_lsn))
      .bind(6, rec.begin_time)
      .bind(7, rec.end_time)
      .run();
}

class RowWriter {
 public:
  RowWriter(Db& db, const Instance& in) : db_(db), in_(in) {
    sql_ = "INSERT INTO " + in.change_table() +
           " (\"__$start_lsn\", \"__$end_lsn\", \"__$seqval\", \"__$operation\", \"__$update_mask\"";
    for (const auto& c : in.columns) sql_ += ", " + quote_ident(c.name);
    if (in.has_command_id) sql_ += ", \"__$command_id\"";
    sql_ += ") VALUES (?, NULL, ?, ?, ?";
    for (std::size_t i = 0; i < in.columns.size(); ++i) sql_ += ", ?";
    sql_ += in.has_command_id ? ", ?)" : ")";
  }

  void write(const Lsn& start, const RowOp& op, Operation operation, const Image& im, const std::string& mask,
             int command_id) {
    auto st = db_.prepare(sql_);
    st.bind_blob(1, lsn_blob(start))
        .bind_blob(2, lsn_blob(op.seqval))
        .bind(3, static_cast<std::int64_t>(operation))
        .bind_blob(4, mask);
    int i = 5;
    for (const auto& c : in_.columns) {
      const Cell* cell = image_cell(im, c.column_id);
      bool null = cell == nullptr;
      // CDC's NULL rules for large values: text/ntext/image in the old images, and (max)
      // types in the update's old image unless the update set them.
      if (!null && c.type.is_old_lob() && (operation == Operation::Delete || operation == Operation::UpdateBefore))
        null = true;
      if (!null && c.type.is_max() && operation == Operation::UpdateBefore &&
          std::find(op.set_columns.begin(), op.set_columns.end(), c.column_id) == op.set_columns.end()) {
        null = true;
      }
      if (null) st.bind_null(i++);
      else st.bind(i++, *cell);
    }
    if (in_.has_command_id) st.bind(i, std::int64_t{command_id});
    st.run();
  }

 private:
  Db& db_;
  const Instance& in_;
  std::string sql_;
};

void capture_txn(Db& db, const LogRecord& rec, const TimeZone& zone, InstanceSource* cache) {
  // Pointers into the cache (or into `loaded` without one): no Instance is copied per commit.
  std::map<std::int64_t, std::vector<const Instance*>> by_table;
  std::deque<std::vector<Instance>> loaded;
  bool any = false;
  for (const auto& op : rec.ops) {
    auto it = by_table.find(op.table_id);
    if (it == by_table.end()) {
      const std::vector<Instance>* all = nullptr;
      if (cache != nullptr) {
        all = &cache->instances(op.table_id);
      } else {
        all = &loaded.emplace_back(instances_of(db, op.table_id));
      }
      std::vector<const Instance*> ins;
      for (const auto& in : *all) {
        if (in.create_lsn < rec.commit_lsn) ins.push_back(&in);
      }
      it = by_table.emplace(op.table_id, std::move(ins)).first;
    }
    for (const Instance* pin : it->second) {
      const Instance& in = *pin;
      RowWriter w(db, in);
      switch (op.kind) {
        case RowOp::Kind::Insert:
          w.write(rec.commit_lsn, op, Operation::Insert, op.after, update_mask(in, nullptr), op.command_id);
          any = true;
          break;
        case RowOp::Kind::Delete:
          w.write(rec.commit_lsn, op, Operation::Delete, op.before, update_mask(in, nullptr), op.command_id);
          any = true;
          break;
        case RowOp::Kind::KeyUpdate:
          w.write(rec.commit_lsn, op, Operation::Delete, op.before, update_mask(in, nullptr), op.command_id);
          w.write(rec.commit_lsn, op, Operation::Insert, op.after, update_mask(in, nullptr), op.command_id + 1);
          any = true;
          break;
        case RowOp::Kind::Update: {
          bool captured = false;
          for (const auto& c : in.columns) {
            if (std::find(op.set_columns.begin(), op.set_columns.end(), c.column_id) != op.set_columns.end())
              captured = true;
          }
          if (!captured) break;  // the SET list touches no column this instance captures
          const std::string mask = update_mask(in, &op.set_columns);
          w.write(rec.commit_lsn, op, Operation::UpdateBefore, op.before, mask, op.command_id);
          w.write(rec.commit_lsn, op, Operation::UpdateAfter, op.after, mask, op.command_id);
          any = true;
          break;
        }
      }
    }
  }
  if (any) insert_entry(db, rec, zone);
}

void capture_ddl(Db& db, const LogRecord& rec, const TimeZone& zone) {
  const Table t = load_table_by_id(db, rec.table_id);
  for (const auto& in : instances_of(db, rec.table_id)) {
    if (!(in.create_lsn < rec.commit_lsn)) continue;
    const CapturedColumn* cc = nullptr;
    for (const auto& c : in.columns) {
      if (c.column_id == rec.column_id) cc = &c;
    }
    bool required_update = false;
    if (cc != nullptr && rec.ddl_kind == "drop") {
      db.prepare("UPDATE \"cdc.captured_columns\" SET present = 0 WHERE object_id = ? AND column_id = ?")
          .bind(1, in.object_id)
          .bind(2, cc->column_id)
          .run();
    }
    if (cc != nullptr && rec.ddl_kind == "alter") {
      // Only a type change alters the change table's column; a nullability change does not, as
      // every change table column is nullable (decision 1260).
      required_update = cc->type.canonical() != rec.new_type;
      SqlType to = SqlType::parse(rec.new_type);
      // The change table's column keeps its collation through a type change within the
      // character types (decision 1325).
      if (to.collation != nullptr && cc->type.collation != nullptr) to.collation = cc->type.collation;
      std::string sel = "SELECT " + quote_ident(cc->name) + ", \"__$start_lsn\", \"__$seqval\", \"__$operation\"" +
                        std::string(in.has_command_id ? ", \"__$command_id\"" : "") + " FROM " + in.change_table();
      std::vector<std::pair<Cell, std::vector<Cell>>> rows;
      {
        auto st = db.prepare(sel);
        while (st.step()) {
          std::vector<Cell> key;
          for (int i = 1; i < st.columns(); ++i) key.push_back(st.cell(i));
          try {
            rows.emplace_back(convert(st.cell(0), cc->type, to, "cdc." + in.name + "_CT." + cc->name), std::move(key));
          } catch (const Error& e) {
            throw Error(ErrorKind::EmuCapture, "capture instance '" + in.name + "': the DDL at " +
                                                   rec.commit_lsn.to_string() + " (" + rec.ddl_command +
                                                   ") cannot convert a stored change row: " + e.what() +
                                                   "; disable the instance and enable it again");
          }
        }
      }
      std::string upd = "UPDATE " + in.change_table() + " SET " + quote_ident(cc->name) +
                        " = ? WHERE \"__$start_lsn\" = ? AND \"__$seqval\" = ? AND \"__$operation\" = ?" +
                        std::string(in.has_command_id ? " AND \"__$command_id\" = ?" : "");
      for (const auto& [cell, key] : rows) {
        auto st = db.prepare(upd);
        st.bind(1, cell);
        for (std::size_t i = 0; i < key.size(); ++i) st.bind(static_cast<int>(i + 2), key[i]);
        st.run();
      }
      db.prepare("UPDATE \"cdc.captured_columns\" SET column_type = ? WHERE object_id = ? AND column_id = ?")
          .bind(1, std::string_view(to.declared()))
          .bind(2, in.object_id)
          .bind(3, cc->column_id)
          .run();
    }
    db.prepare(
          "INSERT INTO \"cdc.ddl_history\" (source_object_id, object_id, required_column_update, ddl_command, ddl_lsn, "
          "ddl_time, ddl_time_utc, kind, column_name, new_type) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .bind(1, rec.table_id)
        .bind(2, in.object_id)
        .bind(3, std::int64_t{required_update})
        .bind(4, std::string_view(rec.ddl_command))
        .bind_blob(5, lsn_blob(rec.commit_lsn))
        .bind(6, zone.to_local(rec.end_time))
        .bind(7, rec.end_time)
        .bind(8, std::string_view(rec.ddl_kind))
        .bind(9, std::string_view(rec.column))
        .run();
    if (!rec.new_type.empty()) {
      db.prepare("UPDATE \"cdc.ddl_history\" SET new_type = ? WHERE object_id = ? AND ddl_lsn = ?")
          .bind(1, std::string_view(rec.new_type))
          .bind(2, in.object_id)
          .bind_blob(3, lsn_blob(rec.commit_lsn))
          .run();
    }
  }
  (void)t;
  bump_catalog(db);
}

}  // namespace

void capture_record(Db& db, const LogRecord& rec, const TimeZone& zone, InstanceSource* cache) {
  switch (rec.kind) {
    case LogRecord::Kind::Txn: capture_txn(db, rec, zone, cache); break;
    case LogRecord::Kind::Ddl: capture_ddl(db, rec, zone); break;
    case LogRecord::Kind::Idle: insert_entry(db, rec, zone); break;
    case LogRecord::Kind::Enable: bump_catalog(db); break;  // deleting the record establishes the instance
  }
}

std::int64_t Engine::capture_pending(std::int64_t limit) {
  std::vector<LogRecord> records;
  {
    auto st = db_->prepare(
        "SELECT commit_lsn, kind, begin_lsn, tran_id, begin_time, end_time, payload FROM emu_log WHERE kind <> "
        "'enable' ORDER BY commit_lsn LIMIT ?");
    st.bind(1, limit);
    while (st.step()) records.push_back(LogRecord::from_row(st));
  }
  for (const auto& rec : records) {
    sync_cache();  // a DDL record earlier in this cycle may have changed an instance
    capture_record(*db_, rec, zone(), this);
    db_->prepare("DELETE FROM emu_log WHERE commit_lsn = ?").bind_blob(1, lsn_blob(rec.commit_lsn)).run();
  }
  // The scan passes every enable below its last record, or all of them when it read the log
  // to its end; enables are no transactions, so maxtrans does not count them.
  auto passed = db_->prepare("DELETE FROM emu_log WHERE kind = 'enable' AND (?1 IS NULL OR commit_lsn < ?1)");
  if (static_cast<std::int64_t>(records.size()) == limit) passed.bind_blob(1, lsn_blob(records.back().commit_lsn));
  else passed.bind_null(1);
  passed.run();
  if (db_->changes() > 0) bump_catalog(*db_);
  return static_cast<std::int64_t>(records.size());
}

void Engine::write_idle_entry(WriteState& s, Micros at) {
  LogRecord rec;
  rec.kind = LogRecord::Kind::Idle;
  rec.end_time = rec.begin_time = s.last_time = at;
  rec.commit_lsn = rec.begin_lsn = s.cursor.take();
  s.cursor.flush();
  rec.tran_id = std::string(10, '\0');
  capture_record(*db_, rec, zone());
}

std::optional<Micros> Engine::newest_entry_utc() {
  auto st = db_->prepare("SELECT max(tran_end_utc) FROM \"cdc.lsn_time_mapping\"");
  st.step();
  if (st.is_null(0)) return std::nullopt;
  return st.i64(0);
}

std::optional<Lsn> Engine::capture() {
  {
    Txn txn(*this);
    if (manual()) {
      const std::int64_t captured = capture_pending(std::stoll(get_setting(*db_, "maxtrans")));
      if (captured == 0) {
        const std::string interval = get_setting(*db_, "idle_interval_seconds");
        if (interval != "null") {
          // Elapsed time is real (UTC) time, whatever the local clock did meanwhile.
          const auto newest = newest_entry_utc();
          WriteState s = load_state();
          const Micros now = std::max(wall_clock_micros(), s.last_time);
          if (!newest || now - *newest >= std::stoll(interval) * 1'000'000) {
            write_idle_entry(s, next_event_time(std::nullopt, s.last_time));
            store_state(s);
          }
        }
      }
    }
    txn.commit();
  }
  return max_lsn();
}

std::optional<Lsn> Engine::drain() {
  // Enables count here, so that one waiting alone in the log is established too.
  const auto waiting = [this] {
    ReadTxn r(*db_);
    auto st = db_->prepare("SELECT count(*) FROM emu_log");
    st.step();
    return st.i64(0);
  };
  while (waiting() > 0) capture();
  return max_lsn();
}

std::int64_t Engine::pending_capture() {
  ReadTxn r(*db_);
  auto st = db_->prepare("SELECT count(*) FROM emu_log WHERE kind <> 'enable'");
  st.step();
  return st.i64(0);
}

}  // namespace mssqlcdc::emu
