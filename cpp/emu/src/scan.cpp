// scan.cpp: streaming change and table reads into Arrow batches, with their fault hooks.
#include "scan.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "mssqlcdc/emu/file_pool.hpp"
#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/emu/hooks.hpp"
#include "mssqlcdc/emu/log.hpp"
#include "mssqlcdc/error.hpp"
#include "schema_lock.hpp"

namespace mssqlcdc::emu {

namespace {

void append_lsn(ColumnBuilder& b, const void* blob, int n, bool binary) {
  std::uint8_t bytes[Lsn::kBytes] = {};
  if (blob != nullptr) std::memcpy(bytes, blob, static_cast<std::size_t>(std::min(n, 10)));
  if (binary) {
    b.append_fixed(bytes);
    return;
  }
  static constexpr char kHex[] = "0123456789ABCDEF";
  char text[22] = {'0', 'x'};
  for (std::size_t i = 0; i < Lsn::kBytes; ++i) {
    text[2 + 2 * i] = kHex[bytes[i] >> 4];
    text[3 + 2 * i] = kHex[bytes[i] & 0xF];
  }
  b.append_bytes(text, sizeof text);
}

ColumnBuilder lsn_builder(const std::string& name, bool binary) {
  return binary ? ColumnBuilder(name, "w:10", ColumnBuilder::Layout::Fixed, 10)
                : ColumnBuilder(name, "u", ColumnBuilder::Layout::Variable, 0);
}

std::size_t total_bytes(const std::vector<ColumnBuilder>& cols) {
  std::size_t n = 0;
  for (const auto& c : cols) n += c.bytes();
  return n;
}

class ChangeScan final : public BatchSource {
 public:
  ChangeScan(const std::filesystem::path& path, std::string_view ci, std::optional<Lsn> from, std::optional<Lsn> to,
             const ChangeReadOptions& options)
      : path_(path), options_(options) {
    if (options.batch_rows < 1 || options.batch_rows > 1'000'000) {
      throw Error(ErrorKind::InvalidArgument,
                  "batch_rows=" + std::to_string(options.batch_rows) + " is not valid; it takes 1..1000000");
    }
    if (options.batch_bytes < 1) throw Error(ErrorKind::InvalidArgument, "batch_bytes must be positive");
    if (options.fire_hooks) hooks_ = ReadHooks::claim(path, "changes");
    db_ = pooled_file(path);
    lock_instance(ci);
    txn_ = std::make_unique<ReadTxn>(*db_);
    if (options.raw_names) {
      in_ = load_instance(*db_, ci);
    } else {
      // The query function's own 208, the text other CDC tools match on.
      auto found = find_instance(*db_, ci);
      if (!found) {
        throw Error(ErrorKind::EmuUnknownObject,
                    "Invalid object name 'cdc.fn_cdc_get_all_changes_" + std::string(ci) +
                        "'. (error 208): no capture " + "instance '" + std::string(ci) + "' in " + path.string() +
                        "; check capture_instances(table)",
                    208);
      }
      in_ = std::move(*found);
    }
    if (!options.raw_names) check_change_range(*db_, in_, from, to, options.row_filter);
    const bool drop_old = !options.raw_names && normalize_row_filter(options.row_filter) == "all";
    if (options.include_command_id && !in_.has_command_id && !options.raw_names) {
      throw Error(ErrorKind::EmuUnknownObject,
                  "cdc." + in_.name +
                      "_CT has no __$command_id column (error 207, an old-shape "
                      "change table); read with include_command_id=False",
                  207);
    }
    // Projection: captured columns in the order asked, or all by ordinal.
    if (options.columns) {
      for (const auto& name : *options.columns) {
        const CapturedColumn* c = in_.find(name);
        if (c == nullptr) {
          std::string list;
          for (const auto& cc : in_.columns) list += (list.empty() ? "" : ", ") + cc.name;
          throw Error(
              ErrorKind::EmuUnknownObject,
              "capture instance '" + in_.name + "' does not capture column " + name + " (error 207); captured: " + list,
              207);
        }
        cols_.push_back(*c);
      }
    } else {
      cols_ = in_.columns;
    }
    static const char* const kMeta[] = {"_start_lsn",   "_seqval",     "_operation",
                                        "_update_mask", "_command_id", "_commit_ts"};
    for (const auto& c : cols_) {
      for (const char* m : kMeta) {
        if (!options.raw_names && iequals(c.name, m)) {
          throw Error(ErrorKind::InvalidArgument,
                      "capture instance '" + in_.name + "': captured column " + c.name +
                          " has the name of a metadata column; read with columns= leaving it out");
        }
      }
    }
    const bool with_cmd = in_.has_command_id && (options.include_command_id || options.raw_names);
    std::string sql = "SELECT \"__$start_lsn\", \"__$seqval\", \"__$operation\", \"__$update_mask\", " +
                      std::string(in_.has_command_id ? "\"__$command_id\"" : "NULL");
    for (const auto& c : cols_) sql += ", " + quote_ident(c.name);
    sql += " FROM " + in_.change_table();
    if (options.raw_names) {
      sql += " WHERE 1";
    } else {
      sql += " WHERE \"__$start_lsn\" BETWEEN ?1 AND ?2";
    }
    if (drop_old) sql += " AND \"__$operation\" <> " + std::to_string(static_cast<int>(Operation::UpdateBefore));
    const std::string order = in_.has_command_id ? R"("__$start_lsn", "__$command_id", "__$seqval", "__$operation")"
                                                 : R"("__$start_lsn", "__$seqval", "__$operation")";
    // A later batch continues after the last row read, in the order's own key.
    resume_sql_ =
        sql + " AND (" + order + ") > (?3, ?4, ?5" + (in_.has_command_id ? ", ?6)" : ")") + " ORDER BY " + order;
    sql += " ORDER BY " + order;
    if (!options.raw_names) {
      from_ = *from;
      to_ = *to;
    }
    stmt_.emplace(db_->prepare(sql));
    bind_range();
    if (options.raw_names) {
      builders_.push_back(lsn_builder("__$start_lsn", false));
      builders_.push_back(lsn_builder("__$end_lsn", false));
      builders_.push_back(lsn_builder("__$seqval", false));
      builders_.emplace_back("__$operation", "i", ColumnBuilder::Layout::Fixed, 4);
      builders_.emplace_back("__$update_mask", "z", ColumnBuilder::Layout::Variable, 0);
    } else {
      builders_.push_back(lsn_builder("_start_lsn", options.binary_lsn));
      builders_.push_back(lsn_builder("_seqval", options.binary_lsn));
      builders_.emplace_back("_operation", "i", ColumnBuilder::Layout::Fixed, 4);
      if (options.include_update_mask) builders_.emplace_back("_update_mask", "z", ColumnBuilder::Layout::Variable, 0);
      if (with_cmd) builders_.emplace_back("_command_id", "i", ColumnBuilder::Layout::Fixed, 4);
      builders_.emplace_back("_commit_ts", "tsu:", ColumnBuilder::Layout::Fixed, 8);
    }
    as_text_ = text_flags(cols_, options.text_columns, "capture instance '" + in_.name + "'");
    for (std::size_t c = 0; c < cols_.size(); ++c)
      builders_.push_back(make_builder(cols_[c].name, cols_[c].type, as_text_[c]));
    if (options.raw_names && with_cmd) builders_.emplace_back("__$command_id", "i", ColumnBuilder::Layout::Fixed, 4);
    with_cmd_ = with_cmd;
  }

  std::vector<ColumnBuilder>& columns() override { return builders_; }

  bool next_batch() override {
    if (finished_) return false;
    if (!stmt_) resume();
    if (hooks_.null_row) {
      for (auto& b : builders_) b.append_null();
      hooks_.null_row = false;
    }
    sqlite3_stmt* st = stmt_->raw();
    std::int64_t rows = builders_.front().length();
    // A batch takes at least one row, so a tiny batch_bytes still makes progress.
    while (rows < options_.batch_rows &&
           (rows == 0 || total_bytes(builders_) < static_cast<std::size_t>(options_.batch_bytes))) {
      // A dirty read racing the deletes misses the rows below the new mark from here on.
      if (hooks_.mid_due(seen_)) {
        if (auto mark = hooks_.fire_mid(path_, in_.object_id)) filter_below_ = mark;
      }
      if (!stmt_->step()) {
        finish();
        return rows > 0;
      }
      ++seen_;
      const void* start = sqlite3_column_blob(st, 0);
      const int start_n = sqlite3_column_bytes(st, 0);
      remember_position(st);
      if (filter_below_ && std::memcmp(start, filter_below_->bytes().data(), Lsn::kBytes) < 0) continue;
      append_row(st, start, start_n);
      ++rows;
    }
    suspend();
    return true;
  }

 private:
  // Sch-S on the instance for the whole read, so disable_cdc waits for it (schema_lock.hpp).
  // Taken before the read transaction: an instance dropped meanwhile is then not found (208).
  void lock_instance(std::string_view ci) {
    for (;;) {
      std::optional<Instance> found;
      std::int64_t timeout = 0;
      {
        ReadTxn peek(*db_);
        found = find_instance(*db_, ci);
        timeout = lock_timeout_ms(*db_);
        peek.end();
      }
      if (!found) return;
      lock_ = SchemaLock(path_, found->object_id, SchemaLock::Mode::Shared, timeout);
      ReadTxn check(*db_);
      const auto now = find_instance(*db_, ci);
      check.end();
      if (!now || now->object_id == found->object_id) return;
    }
  }

  void bind_range() {
    if (!options_.raw_names) stmt_->bind_blob(1, lsn_blob(from_)).bind_blob(2, lsn_blob(to_));
  }

  void remember_position(sqlite3_stmt* st) {
    last_start_.assign(static_cast<const char*>(sqlite3_column_blob(st, 0)),
                       static_cast<std::size_t>(sqlite3_column_bytes(st, 0)));
    last_seqval_.assign(static_cast<const char*>(sqlite3_column_blob(st, 1)),
                        static_cast<std::size_t>(sqlite3_column_bytes(st, 1)));
    last_operation_ = sqlite3_column_int64(st, 2);
    last_command_id_ = sqlite3_column_int64(st, 4);
  }

  // Read committed: each batch reads in a transaction of its own, so a cleanup that commits
  // between two batches removes rows the read has not reached yet, as on SQL Server, where a
  // reader at read committed (or NOLOCK) sees the deletes that commit during its scan.
  void suspend() {
    stmt_.reset();
    txn_->end();
    txn_.reset();
  }

  void resume() {
    txn_ = std::make_unique<ReadTxn>(*db_);
    // The Sch-S lock keeps the instance; a manual-mode capture cycle may still convert a column.
    const Instance now = load_instance(*db_, in_.name);
    for (const auto& c : cols_) {
      const CapturedColumn* cur = now.find(c.name);
      if (cur == nullptr || !(cur->type == c.type)) {
        throw Error(ErrorKind::EmuCapture, "capture instance '" + in_.name + "': column " + c.name +
                                               " changed type during this read (a capture cycle applied an "
                                               "ALTER COLUMN); read the range again");
      }
    }
    stmt_.emplace(db_->prepare(resume_sql_));
    bind_range();
    stmt_->bind_blob(3, last_start_);
    if (in_.has_command_id) {
      stmt_->bind(4, last_command_id_).bind_blob(5, last_seqval_).bind(6, last_operation_);
    } else {
      stmt_->bind_blob(4, last_seqval_).bind(5, last_operation_);
    }
  }

  void append_row(sqlite3_stmt* st, const void* start, int start_n) {
    std::size_t i = 0;
    const bool binary = options_.binary_lsn && !options_.raw_names;
    append_lsn(builders_[i++], start, start_n, binary);
    if (options_.raw_names) builders_[i++].append_null();
    append_lsn(builders_[i++], sqlite3_column_blob(st, 1), sqlite3_column_bytes(st, 1), binary);
    const auto op = static_cast<std::int32_t>(sqlite3_column_int(st, 2));
    builders_[i++].append_fixed(&op);
    if (options_.raw_names || options_.include_update_mask) {
      builders_[i++].append_bytes(sqlite3_column_blob(st, 3), static_cast<std::size_t>(sqlite3_column_bytes(st, 3)));
    }
    if (!options_.raw_names) {
      if (with_cmd_) {
        const auto cmd = static_cast<std::int32_t>(sqlite3_column_int(st, 4));
        builders_[i++].append_fixed(&cmd);
      }
      // The commit time is looked up once per commit, not joined per row.
      if (start_n != static_cast<int>(Lsn::kBytes) || std::memcmp(start, last_lsn_, Lsn::kBytes) != 0 || !have_ts_) {
        std::memcpy(last_lsn_, start, Lsn::kBytes);
        auto ts = db_->prepare("SELECT tran_end_time FROM \"cdc.lsn_time_mapping\" WHERE start_lsn = ?");
        ts.bind_blob(1, std::string_view(static_cast<const char*>(start), Lsn::kBytes));
        have_ts_ = true;
        ts_valid_ = ts.step();
        last_ts_ = ts_valid_ ? ts.i64(0) : 0;
      }
      if (ts_valid_) builders_[i++].append_fixed(&last_ts_);
      else builders_[i++].append_null();
    }
    for (std::size_t c = 0; c < cols_.size(); ++c)
      append_stored(builders_[i++], st, static_cast<int>(5 + c), cols_[c].type, as_text_[c]);
    if (options_.raw_names && with_cmd_) {
      const auto cmd = static_cast<std::int32_t>(sqlite3_column_int(st, 4));
      builders_[i++].append_fixed(&cmd);
    }
  }

  void finish() {
    finished_ = true;
    stmt_.reset();
    txn_->end();
    lock_.release();
    hooks_.fire_during(path_);
  }

  std::filesystem::path path_;
  ChangeReadOptions options_;
  ReadHooks hooks_;
  PooledDb db_;
  SchemaLock lock_;  // declared before the transaction, so it is released after it
  std::unique_ptr<ReadTxn> txn_;
  std::optional<Stmt> stmt_;
  std::string resume_sql_;
  Lsn from_;
  Lsn to_;
  std::string last_start_;
  std::string last_seqval_;
  std::int64_t last_operation_ = 0;
  std::int64_t last_command_id_ = 0;
  Instance in_;
  std::vector<CapturedColumn> cols_;
  std::vector<bool> as_text_;  // per column of cols_: read as text (decision 1345)
  std::vector<ColumnBuilder> builders_;
  bool with_cmd_ = false;
  bool finished_ = false;
  std::int64_t seen_ = 0;
  std::optional<Lsn> filter_below_;
  std::uint8_t last_lsn_[Lsn::kBytes] = {};
  bool have_ts_ = false;
  bool ts_valid_ = false;
  std::int64_t last_ts_ = 0;
};

class TableScan final : public BatchSource {
 public:
  TableScan(const std::filesystem::path& path, std::string_view table, const KeyRange& range,
            const TableReadOptions& options, IoTallies io)
      : path_(path), options_(options) {
    if (options.batch_rows < 1 || options.batch_rows > 1'000'000) {
      throw Error(ErrorKind::InvalidArgument,
                  "batch_rows=" + std::to_string(options.batch_rows) + " is not valid; it takes 1..1000000");
    }
    if (options.fire_hooks) hooks_ = ReadHooks::claim(path, "table");
    db_ = pooled_file(path);
    txn_ = std::make_unique<ReadTxn>(*db_);
    const Table t = load_table(*db_, table);
    if (options.columns) {
      for (const auto& name : *options.columns) {
        const Column* c = t.find(name);
        if (c == nullptr) {
          throw Error(ErrorKind::EmuUnknownObject,
                      t.full_name() + ": no column " + name + " (error 207); columns: " + t.column_list(), 207);
        }
        cols_.push_back(*c);
      }
    } else {
      cols_ = t.columns;
    }
    std::string sql = "SELECT ";
    for (std::size_t i = 0; i < cols_.size(); ++i) sql += (i ? ", " : "") + quote_ident(cols_[i].name);
    sql += " FROM " + t.storage();
    std::vector<Cell> binds;
    if (t.heap && !options.key_columns) {
      if (range.lo || range.hi) {
        throw Error(ErrorKind::InvalidArgument,
                    t.full_name() + " is a heap: read it with open bounds, or name key_columns");
      }
      sql += " ORDER BY rowid";
    } else {
      const auto key = key_columns_of(t, options.key_columns);
      std::string where;
      if (range.lo) {
        where += key_compare(key, ">=", 1);
        for (auto& c : key_cells(t, key, *range.lo, "lo")) binds.push_back(std::move(c));
      }
      if (range.hi) {
        if (!where.empty()) where += " AND ";
        where += key_compare(key, "<", static_cast<int>(binds.size()) + 1);
        for (auto& c : key_cells(t, key, *range.hi, "hi")) binds.push_back(std::move(c));
      }
      if (!where.empty()) sql += " WHERE " + where;
      sql += " ORDER BY " + key_order(key, false);
    }
    stmt_.emplace(db_->prepare(sql));
    for (std::size_t i = 0; i < binds.size(); ++i) stmt_->bind(static_cast<int>(i + 1), binds[i]);
    io_ = IoRead(std::move(io), t.full_name(), range.lo.has_value());
    as_text_ = text_flags(cols_, options.text_columns, t.full_name());
    for (std::size_t c = 0; c < cols_.size(); ++c)
      builders_.push_back(make_builder(cols_[c].name, cols_[c].type, as_text_[c]));
  }

  std::vector<ColumnBuilder>& columns() override { return builders_; }

  bool next_batch() override {
    if (finished_) return false;
    if (hooks_.null_row) {
      for (auto& b : builders_) b.append_null();
      hooks_.null_row = false;
    }
    std::int64_t rows = builders_.empty() ? 0 : builders_.front().length();
    while (rows < options_.batch_rows &&
           (rows == 0 || total_bytes(builders_) < static_cast<std::size_t>(options_.batch_bytes))) {
      if (!stmt_->step()) {
        finished_ = true;
        stmt_.reset();
        txn_->end();
        hooks_.fire_during(path_);
        return rows > 0;
      }
      io_.rows();
      for (std::size_t c = 0; c < cols_.size(); ++c)
        append_stored(builders_[c], stmt_->raw(), static_cast<int>(c), cols_[c].type, as_text_[c]);
      ++rows;
    }
    return true;
  }

 private:
  std::filesystem::path path_;
  TableReadOptions options_;
  ReadHooks hooks_;
  PooledDb db_;
  std::unique_ptr<ReadTxn> txn_;
  std::optional<Stmt> stmt_;
  std::vector<Column> cols_;
  std::vector<bool> as_text_;  // per column of cols_: read as text (decision 1345)
  std::vector<ColumnBuilder> builders_;
  IoRead io_;
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<BatchSource> open_change_scan(const std::filesystem::path& path, std::string_view ci,
                                              std::optional<Lsn> from, std::optional<Lsn> to,
                                              const ChangeReadOptions& options) {
  return std::make_unique<ChangeScan>(path, ci, from, to, options);
}

std::unique_ptr<BatchSource> open_table_scan(const std::filesystem::path& path, std::string_view table,
                                             const KeyRange& range, const TableReadOptions& options, IoTallies io) {
  return std::make_unique<TableScan>(path, table, range, options, std::move(io));
}

}  // namespace mssqlcdc::emu
