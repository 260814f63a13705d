// writer.cpp: DML, DDL, enable/disable, idle entries and open transactions of the Engine.
#include <algorithm>
#include <set>

#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

using Resolved = std::vector<std::pair<const Column*, Cell>>;

std::string hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "0x";
  for (char b : bytes) {
    out += kHex[(static_cast<unsigned char>(b) >> 4) & 0xF];
    out += kHex[static_cast<unsigned char>(b) & 0xF];
  }
  return out;
}

Resolved resolve(const Table& t, const Row& row, std::string_view context) {
  Resolved out;
  for (const auto& [name, value] : row) {
    const Column* c = t.find(name);
    if (c == nullptr) {
      throw Error(ErrorKind::EmuUnknownObject, t.full_name() + ": no column " + name + " (error 207) in " + std::string(context) +
                                                   "; columns: " + t.column_list(), 207);
    }
    for (const auto& [seen, cell] : out) {
      if (seen == c) {
        throw Error(ErrorKind::InvalidArgument, t.full_name() + ": column " + c->name + " is given twice in " +
                                                    std::string(context) + "; give each column once");
      }
    }
    out.emplace_back(c, coerce(value, c->type, t.full_name() + "." + c->name));
  }
  return out;
}

std::string show_key(const Table&, const Resolved& key) {
  std::string out = "(";
  for (const auto& [c, cell] : key) out += (out.size() > 1 ? ", " : "") + c->name + "=" + show_cell(cell, c->type);
  return out + ")";
}

std::string encode_key(const Resolved& key) {
  std::string out;
  for (const auto& [c, cell] : key) {
    out += std::to_string(c->column_id) + ":" + std::to_string(static_cast<int>(cell.type)) + ":" +
           (cell.type == Cell::Type::Int ? std::to_string(cell.i) : cell.type == Cell::Type::Real ? std::to_string(cell.d) : cell.s) + "|";
  }
  return out;
}

std::string column_names(const Table& t) {
  std::string out;
  for (const auto& c : t.columns) out += (out.empty() ? "" : ", ") + quote_ident(c.name);
  return out;
}

// Key cells in key order from a resolved row; requires every key column.
Resolved key_of(const Table& t, const Resolved& row, std::string_view context) {
  Resolved key;
  for (const Column* k : t.key()) {
    auto it = std::find_if(row.begin(), row.end(), [&](const auto& p) { return p.first == k; });
    if (it == row.end()) {
      throw Error(ErrorKind::InvalidArgument, t.full_name() + ": " + std::string(context) + " must give key column " + k->name +
                                                  " (key: " + [&] {
                                                    std::string s;
                                                    for (const Column* c : t.key()) s += (s.empty() ? "" : ", ") + c->name;
                                                    return s;
                                                  }() + ")");
    }
    if (it->second.is_null()) {
      throw Error(ErrorKind::EmuConstraint, t.full_name() + ": key column " + k->name +
                                                " cannot be NULL (error 515); give it a value", 515);
    }
    key.push_back(*it);
  }
  return key;
}

// The stored row with this key (or the one heap row matching the filter), as an image.
struct Found {
  std::int64_t rowid = 0;
  Image image;
};

std::optional<Found> fetch(Db& db, const Table& t, const Resolved& where, bool heap_filter) {
  std::string sql = "SELECT " + std::string(t.heap ? "rowid, " : "0, ") + column_names(t) + " FROM " + t.storage() + " WHERE ";
  for (std::size_t i = 0; i < where.size(); ++i) sql += (i ? " AND " : "") + quote_ident(where[i].first->name) + " IS ?";
  if (where.empty()) sql += "1";
  sql += " LIMIT 2";
  auto st = db.prepare(sql);
  for (std::size_t i = 0; i < where.size(); ++i) st.bind(static_cast<int>(i + 1), where[i].second);
  if (!st.step()) return std::nullopt;
  Found f;
  f.rowid = st.i64(0);
  for (std::size_t i = 0; i < t.columns.size(); ++i) f.image.emplace_back(t.columns[i].column_id, st.cell(static_cast<int>(i + 1)));
  if (heap_filter && st.step()) {
    throw Error(ErrorKind::EmuConstraint, t.full_name() + ": the filter " + show_key(t, where) +
                                              " matches more than one row of the heap; give a filter that matches exactly one");
  }
  return f;
}

void store_image(Db& db, const Table& t, const Image& im) {
  std::string sql = "INSERT INTO " + t.storage() + " (" + column_names(t) + ") VALUES (";
  for (std::size_t i = 0; i < t.columns.size(); ++i) sql += i ? ", ?" : "?";
  auto st = db.prepare(sql + ")");
  for (std::size_t i = 0; i < im.size(); ++i) st.bind(static_cast<int>(i + 1), im[i].second);
  st.run();
}

void remove_row(Db& db, const Table& t, const Found& f, const Resolved& key) {
  if (t.heap) {
    db.prepare("DELETE FROM " + t.storage() + " WHERE rowid = ?").bind(1, f.rowid).run();
    return;
  }
  std::string sql = "DELETE FROM " + t.storage() + " WHERE ";
  for (std::size_t i = 0; i < key.size(); ++i) sql += (i ? " AND " : "") + quote_ident(key[i].first->name) + " = ?";
  auto st = db.prepare(sql);
  for (std::size_t i = 0; i < key.size(); ++i) st.bind(static_cast<int>(i + 1), key[i].second);
  st.run();
}

void rewrite_row(Db& db, const Table& t, const Found& f, const Resolved& key, const Image& im) {
  std::string sql = "UPDATE " + t.storage() + " SET ";
  for (std::size_t i = 0; i < t.columns.size(); ++i) sql += (i ? ", " : "") + quote_ident(t.columns[i].name) + " = ?";
  int n = static_cast<int>(t.columns.size());
  if (t.heap) {
    auto st = db.prepare(sql + " WHERE rowid = ?");
    for (std::size_t i = 0; i < im.size(); ++i) st.bind(static_cast<int>(i + 1), im[i].second);
    st.bind(n + 1, f.rowid).run();
    return;
  }
  sql += " WHERE ";
  for (std::size_t i = 0; i < key.size(); ++i) sql += (i ? " AND " : "") + quote_ident(key[i].first->name) + " = ?";
  auto st = db.prepare(sql);
  for (std::size_t i = 0; i < im.size(); ++i) st.bind(static_cast<int>(i + 1), im[i].second);
  for (std::size_t i = 0; i < key.size(); ++i) st.bind(n + 1 + static_cast<int>(i), key[i].second);
  st.run();
}

void set_cell(Image& im, std::int64_t column_id, const Cell& c) {
  for (auto& [id, cell] : im) {
    if (id == column_id) cell = c;
  }
}

std::string rowversion_bytes(std::int64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[7 - i] = static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF);
  return out;
}

// Rewrites one column of every row of `t` with fn(old value); all values are computed first.
template <typename Fn>
void for_each_row(Db& db, const Table& t, const Column& col, Fn fn) {
  const std::vector<const Column*> key = t.key();
  std::string sel = "SELECT " + quote_ident(col.name);
  for (const Column* k : key) sel += ", " + quote_ident(k->name);
  if (t.heap) sel += ", rowid";
  std::vector<std::pair<Cell, std::vector<Cell>>> rows;
  {
    auto st = db.prepare(sel + " FROM " + t.storage());
    while (st.step()) {
      std::vector<Cell> where;
      for (int i = 1; i < st.columns(); ++i) where.push_back(st.cell(i));
      rows.emplace_back(fn(st.cell(0)), std::move(where));
    }
  }
  std::string upd = "UPDATE " + t.storage() + " SET " + quote_ident(col.name) + " = ? WHERE ";
  if (t.heap) {
    upd += "rowid = ?";
  } else {
    for (std::size_t i = 0; i < key.size(); ++i) upd += (i ? " AND " : "") + quote_ident(key[i]->name) + " = ?";
  }
  for (const auto& [cell, where] : rows) {
    auto st = db.prepare(upd);
    st.bind(1, cell);
    for (std::size_t i = 0; i < where.size(); ++i) st.bind(static_cast<int>(i + 2), where[i]);
    st.run();
  }
}

const char* kind_word(Change::Kind k) {
  switch (k) {
    case Change::Kind::Insert: return "insert";
    case Change::Kind::Update: return "update";
    case Change::Kind::Delete: return "delete";
  }
  return "change";
}

}  // namespace

std::string show_cell(const Cell& c, const SqlType& type) {
  switch (c.type) {
    case Cell::Type::Null: return "NULL";
    case Cell::Type::Int: return std::to_string(c.i);
    case Cell::Type::Real: return std::to_string(c.d);
    case Cell::Type::Text: return "'" + c.s + "'";
    case Cell::Type::Blob:
      if (type.family() == Family::Exact) return decimal_text(c.s, type.scale);
      if (type.base == Base::UniqueIdentifier) return "'" + guid_to_text(c.s) + "'";
      return hex(c.s);
  }
  return "?";
}

void Engine::create(const std::filesystem::path& path, const CreateOptions& options) { create_file(path, options); }

Engine::Engine(const std::filesystem::path& path) : db_(open_file(path)) {}

Engine::~Engine() = default;

WriteState Engine::load_state() {
  WriteState s;
  s.cursor = LsnCursor::load(*db_);
  s.last_time = meta_int(*db_, "last_time");
  s.tran_counter = meta_int(*db_, "tran_id_counter");
  s.rowversion = meta_int(*db_, "rowversion_counter");
  return s;
}

void Engine::store_state(const WriteState& s) {
  s.cursor.store(*db_);
  meta_set(*db_, "last_time", std::to_string(s.last_time));
  meta_set(*db_, "tran_id_counter", std::to_string(s.tran_counter));
  meta_set(*db_, "rowversion_counter", std::to_string(s.rowversion));
}

bool Engine::manual() { return get_setting(*db_, "capture") == "manual"; }

std::string Engine::setting(const std::string& name) {
  ReadTxn r(*db_);
  return get_setting(*db_, name);
}

void Engine::configure(const std::string& name, const std::string& value) {
  if (name == "capture" && value == "immediate") drain();
  WriteTxn txn(*db_);
  set_setting(*db_, name, value);
  txn.commit();
}

Micros Engine::last_time() {
  ReadTxn r(*db_);
  return meta_int(*db_, "last_time");
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
    for (const auto& key : t.keys) {
      if (key.first == table_id) {
        throw Error(ErrorKind::InvalidArgument, std::string(what) + " while an open Transaction of this Emulator has "
                                                                     "changes on the table; commit or roll it back first");
      }
    }
  }
}

void Engine::create_table(std::string_view table, const std::vector<std::pair<std::string, std::string>>& columns,
                          const std::vector<std::string>& primary_key) {
  const auto [schema, name] = split_table_name(table);
  const std::string full = schema + "." + name;
  for (const char* reserved : {"cdc", "sys", "emu"}) {
    if (iequals(schema, reserved)) throw Error(ErrorKind::EmuSchema, full + ": schema " + schema + " is reserved; use another schema such as dbo");
  }
  if (columns.empty() || columns.size() > 1024) throw Error(ErrorKind::EmuSchema, full + ": a table takes 1 to 1024 columns");
  std::vector<SqlType> types;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    check_identifier(columns[i].first, full + ": column");
    for (std::size_t j = 0; j < i; ++j) {
      if (iequals(columns[i].first, columns[j].first)) {
        throw Error(ErrorKind::EmuSchema, full + ": column " + columns[i].first + " is given twice; name each column once", 2705);
      }
    }
    try {
      types.push_back(SqlType::parse(columns[i].second));
    } catch (const Error& e) {
      throw Error(ErrorKind::EmuSchema, full + "." + columns[i].first + ": " + e.what());
    }
  }
  std::vector<int> key_ordinal(columns.size(), 0);
  for (std::size_t k = 0; k < primary_key.size(); ++k) {
    auto it = std::find_if(columns.begin(), columns.end(), [&](const auto& c) { return iequals(c.first, primary_key[k]); });
    if (it == columns.end()) {
      throw Error(ErrorKind::EmuSchema, full + ": primary key column " + primary_key[k] + " is not one of the columns");
    }
    const auto i = static_cast<std::size_t>(it - columns.begin());
    if (key_ordinal[i] != 0) throw Error(ErrorKind::EmuSchema, full + ": primary key column " + primary_key[k] + " is given twice");
    if (types[i].is_lob() || types[i].base == Base::RowVersion) {
      throw Error(ErrorKind::EmuSchema, full + ": column " + columns[i].first + " of type " + types[i].canonical() +
                                            " cannot be part of the primary key; pick another key column");
    }
    key_ordinal[i] = static_cast<int>(k + 1);
  }
  WriteTxn txn(*db_);
  if (find_table(*db_, full)) {
    throw Error(ErrorKind::EmuSchema, full + ": there is already a table named so in " + db_->path().string() +
                                          " (error 2714); pick another name", 2714);
  }
  const std::int64_t id = next_object_id();
  db_->prepare("INSERT INTO \"sys.tables\" (object_id, schema_name, name, is_heap) VALUES (?, ?, ?, ?)")
      .bind(1, id).bind(2, std::string_view(schema)).bind(3, std::string_view(name)).bind(4, std::int64_t{primary_key.empty()}).run();
  std::string ddl = "CREATE TABLE " + quote_ident(full) + " (";
  for (std::size_t i = 0; i < columns.size(); ++i) {
    db_->prepare("INSERT INTO \"sys.columns\" (object_id, column_id, name, sql_type, key_ordinal) VALUES (?, ?, ?, ?, ?)")
        .bind(1, id).bind(2, static_cast<std::int64_t>(i + 1)).bind(3, std::string_view(columns[i].first))
        .bind(4, std::string_view(types[i].canonical())).bind(5, std::int64_t{key_ordinal[i]}).run();
    ddl += (i ? ", " : "") + quote_ident(columns[i].first) + (key_ordinal[i] ? " NOT NULL" : "");
  }
  if (!primary_key.empty()) {
    ddl += ", PRIMARY KEY (";
    for (std::size_t k = 0; k < primary_key.size(); ++k) ddl += (k ? ", " : "") + quote_ident(primary_key[k]);
    ddl += ")) WITHOUT ROWID";
  } else {
    ddl += ")";
  }
  db_->exec(ddl);
  txn.commit();
}

std::string Engine::enable_cdc(std::string_view table, std::optional<std::string> capture_instance,
                               std::optional<std::vector<std::string>> captured_columns) {
  WriteTxn txn(*db_);
  const Table t = load_table(*db_, table);
  check_no_open_txn(t.object_id, "cannot enable CDC on " + t.full_name());
  const std::string name = capture_instance.value_or(t.schema + "_" + t.name);
  check_identifier(name, "capture instance", 100);
  if (auto other = find_instance(*db_, name)) {
    throw Error(ErrorKind::EmuSchema, "capture instance name '" + name + "' is already used in " + db_->path().string() +
                                          "; pass another capture_instance");
  }
  const auto existing = instances_of(*db_, t.object_id);
  if (existing.size() >= 2) {
    throw Error(ErrorKind::EmuInstanceLimit, t.full_name() + " already has two capture instances (" + existing[0].name +
                                                 ", " + existing[1].name + "); disable one first", 22963);
  }
  std::vector<const Column*> cols;
  if (captured_columns) {
    for (const auto& n : *captured_columns) {
      const Column* c = t.find(n);
      if (c == nullptr) {
        throw Error(ErrorKind::EmuUnknownObject, t.full_name() + ": no column " + n + " to capture (columns: " +
                                                     t.column_list() + ")", 207);
      }
      if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
    }
    for (const Column* k : t.key()) {
      if (std::find(cols.begin(), cols.end(), k) == cols.end()) {
        throw Error(ErrorKind::EmuSchema, t.full_name() + ": captured_columns must include key column " + k->name);
      }
    }
    std::sort(cols.begin(), cols.end(), [](const Column* a, const Column* b) { return a->column_id < b->column_id; });
  } else {
    for (const auto& c : t.columns) cols.push_back(&c);
  }
  for (const Column* c : cols) {
    if (c->name.starts_with("__$")) throw Error(ErrorKind::EmuSchema, t.full_name() + ": column " + c->name + " cannot be captured");
  }
  WriteState s = load_state();
  const Lsn begin = s.cursor.take();
  (void)begin;
  const Lsn lsn = s.cursor.take();
  s.cursor.flush();
  const bool command_id = get_setting(*db_, "command_id_column") == "true";
  const std::int64_t id = next_object_id();
  db_->prepare(
         "INSERT INTO \"cdc.change_tables\" (object_id, capture_instance, source_object_id, start_lsn, create_lsn, "
         "index_name, create_date, create_date_utc, has_command_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind(1, id).bind(2, std::string_view(name)).bind(3, t.object_id).bind_blob(4, lsn_blob(lsn)).bind_blob(5, lsn_blob(lsn))
      .bind(6, std::string_view(t.heap ? std::string() : "PK_" + t.name)).bind(7, s.last_time).bind(8, s.last_time)
      .bind(9, std::int64_t{command_id}).run();
  if (t.heap) db_->prepare("UPDATE \"cdc.change_tables\" SET index_name = NULL WHERE object_id = ?").bind(1, id).run();
  std::string ddl = "CREATE TABLE " + quote_ident("cdc." + name + "_CT") +
                    " (\"__$start_lsn\" BLOB NOT NULL, \"__$end_lsn\" BLOB, \"__$seqval\" BLOB NOT NULL, "
                    "\"__$operation\" INTEGER NOT NULL, \"__$update_mask\" BLOB";
  for (std::size_t i = 0; i < cols.size(); ++i) {
    db_->prepare(
           "INSERT INTO \"cdc.captured_columns\" (object_id, column_name, column_id, column_type, column_ordinal) "
           "VALUES (?, ?, ?, ?, ?)")
        .bind(1, id).bind(2, std::string_view(cols[i]->name)).bind(3, cols[i]->column_id)
        .bind(4, std::string_view(cols[i]->type.base == Base::RowVersion ? "binary(8)" : cols[i]->type.canonical()))
        .bind(5, static_cast<std::int64_t>(i + 1)).run();
    ddl += ", " + quote_ident(cols[i]->name);
  }
  const auto key = t.key();
  for (std::size_t k = 0; k < key.size(); ++k) {
    db_->prepare("INSERT INTO \"cdc.index_columns\" (object_id, column_name, index_ordinal, column_id) VALUES (?, ?, ?, ?)")
        .bind(1, id).bind(2, std::string_view(key[k]->name)).bind(3, static_cast<std::int64_t>(k + 1)).bind(4, key[k]->column_id).run();
  }
  if (command_id) {
    ddl += ", \"__$command_id\" INTEGER NOT NULL, PRIMARY KEY (\"__$start_lsn\", \"__$command_id\", \"__$seqval\", \"__$operation\"))";
  } else {
    ddl += ", PRIMARY KEY (\"__$start_lsn\", \"__$seqval\", \"__$operation\"))";
  }
  db_->exec(ddl + " WITHOUT ROWID");
  db_->prepare("UPDATE \"sys.tables\" SET is_tracked_by_cdc = 1 WHERE object_id = ?").bind(1, t.object_id).run();
  store_state(s);
  txn.commit();
  return name;
}

void Engine::disable_cdc(std::string_view capture_instance) {
  WriteTxn txn(*db_);
  const Instance in = load_instance(*db_, capture_instance);
  db_->exec("DROP TABLE " + in.change_table());
  for (const char* t : {"\"cdc.change_tables\"", "\"cdc.captured_columns\"", "\"cdc.index_columns\"", "\"cdc.ddl_history\""}) {
    db_->prepare(std::string("DELETE FROM ") + t + " WHERE object_id = ?").bind(1, in.object_id).run();
  }
  db_->prepare(
         "UPDATE \"sys.tables\" SET is_tracked_by_cdc = EXISTS (SELECT 1 FROM \"cdc.change_tables\" c "
         "WHERE c.source_object_id = \"sys.tables\".object_id) WHERE object_id = ?")
      .bind(1, in.source_object_id).run();
  txn.commit();
}

void Engine::apply(const std::vector<Change>& changes, WriteState& s, LogRecord& rec, const std::vector<Lsn>* seqvals,
                   std::set<std::pair<std::int64_t, std::string>>& keys, std::int64_t self_txn) {
  if (changes.empty()) throw Error(ErrorKind::InvalidArgument, "a transaction needs at least one change; pass a non-empty list");
  std::map<std::string, Table> tables;
  std::map<std::int64_t, std::set<std::int64_t>> lob_captured;  // table -> captured LOB column ids
  const long long lob_limit = std::stoll(get_setting(*db_, "max_text_repl_size"));
  std::int32_t command_id = 1;
  std::size_t seq_index = 0;
  auto take_seqval = [&]() {
    if (seqvals != nullptr) return seq_index < seqvals->size() ? (*seqvals)[seq_index++] : s.cursor.take();
    return s.cursor.take();
  };
  auto lock = [&](const Table& t, const Resolved& key) {
    const auto k = std::make_pair(t.object_id, encode_key(key));
    for (const auto& [id, other] : open_) {
      if (id != self_txn && other.keys.count(k) != 0) {
        throw Error(ErrorKind::EmuConstraint, t.full_name() + ": the row with key " + show_key(t, key) +
                                                  " is changed by another open Transaction of this Emulator (SQL Server "
                                                  "would block); commit or roll that one back first");
      }
    }
    keys.insert(k);
  };
  for (std::size_t n = 0; n < changes.size(); ++n) {
    const Change& ch = changes[n];
    auto it = tables.find(ch.table);
    if (it == tables.end()) {
      Table t = load_table(*db_, ch.table);
      std::set<std::int64_t> lobs;
      for (const auto& in : instances_of(*db_, t.object_id)) {
        for (const auto& c : in.columns) {
          if (c.type.is_lob()) lobs.insert(c.column_id);
        }
      }
      lob_captured[t.object_id] = std::move(lobs);
      it = tables.emplace(ch.table, std::move(t)).first;
    }
    const Table& t = it->second;
    const std::string context = std::string(kind_word(ch.kind)) + " #" + std::to_string(n + 1);
    auto check_lobs = [&](const Image& im) {
      if (lob_limit < 0) return;
      for (const auto& [id, cell] : im) {
        if (lob_captured[t.object_id].count(id) != 0 && static_cast<long long>(cell.s.size()) > lob_limit) {
          throw Error(ErrorKind::EmuConstraint, t.full_name() + "." + t.by_id(id)->name + ": a captured value of " +
                                                    std::to_string(cell.s.size()) + " bytes exceeds max_text_repl_size " +
                                                    std::to_string(lob_limit) + " (error 7139); raise the setting", 7139);
        }
      }
    };
    auto fill_rowversion = [&](Image& im) {
      for (const auto& c : t.columns) {
        if (c.type.base == Base::RowVersion) set_cell(im, c.column_id, Cell::blob(rowversion_bytes(++s.rowversion)));
      }
    };
    RowOp op;
    op.table_id = t.object_id;
    const Resolved row = resolve(t, ch.row, context);
    if (ch.kind == Change::Kind::Insert) {
      if (ch.old_key) throw Error(ErrorKind::InvalidArgument, t.full_name() + ": an insert takes (\"insert\", table, row)");
      Image im;
      for (const auto& c : t.columns) im.emplace_back(c.column_id, Cell::null());
      for (const auto& [c, cell] : row) set_cell(im, c->column_id, cell);
      fill_rowversion(im);
      if (!t.heap) {
        const Resolved key = key_of(t, row, context);
        lock(t, key);
        if (fetch(*db_, t, key, false)) {
          throw Error(ErrorKind::EmuConstraint, t.full_name() + ": a row with key " + show_key(t, key) +
                                                    " already exists (error 2627, primary key violation); update it or use another key", 2627);
        }
      }
      check_lobs(im);
      store_image(*db_, t, im);
      op.kind = RowOp::Kind::Insert;
      op.after = std::move(im);
    } else if (ch.kind == Change::Kind::Delete) {
      if (ch.old_key) throw Error(ErrorKind::InvalidArgument, t.full_name() + ": a delete takes (\"delete\", table, key)");
      Resolved key = row;
      if (!t.heap) {
        key = key_of(t, row, context);
        if (row.size() != key.size()) {
          throw Error(ErrorKind::InvalidArgument, t.full_name() + ": " + context + " must give exactly the key columns");
        }
      }
      auto f = fetch(*db_, t, key, t.heap);
      if (!f) {
        throw Error(ErrorKind::EmuConstraint, t.full_name() + ": no row with key " + show_key(t, key) + " to delete");
      }
      if (!t.heap) lock(t, key);
      remove_row(*db_, t, *f, key);
      op.kind = RowOp::Kind::Delete;
      op.before = std::move(f->image);
    } else if (!ch.old_key) {
      if (t.heap) {
        throw Error(ErrorKind::InvalidArgument, t.full_name() + " is a heap: update it with (\"update\", table, values, filter)");
      }
      const Resolved key = key_of(t, row, context);
      Resolved set;
      for (const auto& p : row) {
        if (p.first->key_ordinal == 0) set.push_back(p);
      }
      if (set.empty()) {
        throw Error(ErrorKind::InvalidArgument, t.full_name() + ": " + context + " sets no column besides the key; give the columns to change");
      }
      auto f = fetch(*db_, t, key, false);
      if (!f) throw Error(ErrorKind::EmuConstraint, t.full_name() + ": no row with key " + show_key(t, key) + " to update");
      lock(t, key);
      Image im = f->image;
      for (const auto& [c, cell] : set) {
        set_cell(im, c->column_id, cell);
        op.set_columns.push_back(c->column_id);
      }
      fill_rowversion(im);
      for (const auto& c : t.columns) {
        if (c.type.base == Base::RowVersion) op.set_columns.push_back(c.column_id);
      }
      check_lobs(im);
      rewrite_row(*db_, t, *f, key, im);
      op.kind = RowOp::Kind::Update;
      op.before = std::move(f->image);
      op.after = std::move(im);
    } else {
      const Resolved old = resolve(t, *ch.old_key, context + " (old key)");
      Resolved old_key = old;
      if (!t.heap) {
        old_key = key_of(t, old, context + " old key");
        if (old.size() != old_key.size()) {
          throw Error(ErrorKind::InvalidArgument, t.full_name() + ": the old key of " + context + " must give exactly the key columns");
        }
      }
      auto f = fetch(*db_, t, old_key, t.heap);
      if (!f) throw Error(ErrorKind::EmuConstraint, t.full_name() + ": no row with key " + show_key(t, old_key) + " to update");
      Image im = f->image;
      for (const auto& [c, cell] : row) {
        set_cell(im, c->column_id, cell);
        op.set_columns.push_back(c->column_id);
      }
      fill_rowversion(im);
      check_lobs(im);
      if (t.heap) {
        if (row.empty()) throw Error(ErrorKind::InvalidArgument, t.full_name() + ": " + context + " sets no column");
        rewrite_row(*db_, t, *f, old_key, im);
        op.kind = RowOp::Kind::Update;
        for (const auto& c : t.columns) {
          if (c.type.base == Base::RowVersion) op.set_columns.push_back(c.column_id);
        }
      } else {
        const Resolved new_key = key_of(t, row, context + " new key");
        if (encode_key(new_key) == encode_key(old_key)) {
          throw Error(ErrorKind::InvalidArgument, t.full_name() + ": " + context + " keeps the key " + show_key(t, old_key) +
                                                      "; use (\"update\", table, row) to change other columns");
        }
        lock(t, old_key);
        lock(t, new_key);
        if (fetch(*db_, t, new_key, false)) {
          throw Error(ErrorKind::EmuConstraint, t.full_name() + ": a row with key " + show_key(t, new_key) +
                                                    " already exists (error 2627, primary key violation)", 2627);
        }
        remove_row(*db_, t, *f, old_key);
        store_image(*db_, t, im);
        op.kind = RowOp::Kind::KeyUpdate;
      }
      op.before = std::move(f->image);
      op.after = std::move(im);
    }
    op.seqval = take_seqval();
    op.command_id = command_id;
    command_id += op.kind == RowOp::Kind::KeyUpdate ? 2 : 1;
    rec.ops.push_back(std::move(op));
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
    capture_record(*db_, rec);
    return;
  }
  const char* kind = rec.kind == LogRecord::Kind::Txn ? "txn" : rec.kind == LogRecord::Kind::Ddl ? "ddl" : "idle";
  db_->prepare("INSERT INTO emu_log (commit_lsn, kind, begin_lsn, tran_id, begin_time, end_time, payload) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .bind_blob(1, lsn_blob(rec.commit_lsn)).bind(2, std::string_view(kind)).bind_blob(3, lsn_blob(rec.begin_lsn))
      .bind_blob(4, rec.tran_id).bind(5, rec.begin_time).bind(6, rec.end_time).bind_blob(7, rec.payload()).run();
}

Lsn Engine::commit(const std::vector<Change>& changes, std::optional<Micros> at) {
  WriteTxn txn(*db_);
  WriteState s = load_state();
  LogRecord rec;
  rec.begin_lsn = s.cursor.take();
  std::set<std::pair<std::int64_t, std::string>> keys;
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
  WriteTxn txn(*db_);
  WriteState s = load_state();
  std::vector<Lsn> out;
  for (std::size_t i = 0; i < transactions.size(); ++i) {
    LogRecord rec;
    rec.begin_lsn = s.cursor.take();
    std::set<std::pair<std::int64_t, std::string>> keys;
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
  WriteTxn txn(*db_);
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

void Engine::ddl(std::string_view table, const std::string& kind, std::string_view column, std::string_view sql_type,
                 std::optional<Micros> at, Lsn& out) {
  WriteTxn txn(*db_);
  const Table t = load_table(*db_, table);
  check_no_open_txn(t.object_id, "cannot change the columns of " + t.full_name());
  WriteState s = load_state();
  LogRecord rec;
  rec.kind = LogRecord::Kind::Ddl;
  rec.table_id = t.object_id;
  rec.ddl_kind = kind;
  const std::string bracket = "[" + t.schema + "].[" + t.name + "]";
  if (kind == "add") {
    check_identifier(column, t.full_name() + ": column");
    if (t.find(column)) throw Error(ErrorKind::EmuSchema, t.full_name() + ": column " + std::string(column) + " already exists (error 2705)", 2705);
    if (t.columns.size() >= 1024) throw Error(ErrorKind::EmuSchema, t.full_name() + ": a table takes at most 1024 columns");
    SqlType type;
    try {
      type = SqlType::parse(sql_type);
    } catch (const Error& e) {
      throw Error(ErrorKind::EmuSchema, t.full_name() + "." + std::string(column) + ": " + e.what());
    }
    std::int64_t id = 0;
    {
      auto st = db_->prepare("SELECT coalesce(max(column_id), 0) + 1 FROM \"sys.columns\" WHERE object_id = ?");
      st.bind(1, t.object_id);
      st.step();
      id = st.i64(0);
      // Column ids are never reused, also after a drop of the highest one.
      const auto stored = meta_get(*db_, "max_column_id." + std::to_string(t.object_id));
      if (stored && std::stoll(*stored) >= id) id = std::stoll(*stored) + 1;
    }
    meta_set(*db_, "max_column_id." + std::to_string(t.object_id), std::to_string(id));
    db_->prepare("INSERT INTO \"sys.columns\" (object_id, column_id, name, sql_type, key_ordinal) VALUES (?, ?, ?, ?, 0)")
        .bind(1, t.object_id).bind(2, id).bind(3, column).bind(4, std::string_view(type.canonical())).run();
    db_->exec("ALTER TABLE " + t.storage() + " ADD COLUMN " + quote_ident(column));
    if (type.base == Base::RowVersion) {
      Column added;
      added.column_id = id;
      added.name = std::string(column);
      added.type = type;
      for_each_row(*db_, t, added, [&](const Cell&) { return Cell::blob(rowversion_bytes(++s.rowversion)); });
    }
    rec.column = std::string(column);
    rec.column_id = id;
    rec.new_type = type.canonical();
    rec.ddl_command = "ALTER TABLE " + bracket + " ADD [" + std::string(column) + "] " + type.canonical();
  } else {
    const Column* c = t.find(column);
    if (c == nullptr) {
      throw Error(ErrorKind::EmuUnknownObject, t.full_name() + ": no column " + std::string(column) + " (error 207); columns: " + t.column_list(), 207);
    }
    rec.column = c->name;
    rec.column_id = c->column_id;
    if (kind == "drop") {
      if (c->key_ordinal > 0) {
        throw Error(ErrorKind::EmuSchema, t.full_name() + ": cannot drop column " + c->name + ", it is part of the primary key (error 5074)", 5074);
      }
      if (t.columns.size() == 1) throw Error(ErrorKind::EmuSchema, t.full_name() + ": cannot drop the last column " + c->name, 5074);
      const auto stored = meta_get(*db_, "max_column_id." + std::to_string(t.object_id));
      const std::int64_t max_id = t.columns.back().column_id;
      if (!stored || std::stoll(*stored) < max_id) meta_set(*db_, "max_column_id." + std::to_string(t.object_id), std::to_string(max_id));
      db_->prepare("DELETE FROM \"sys.columns\" WHERE object_id = ? AND column_id = ?").bind(1, t.object_id).bind(2, c->column_id).run();
      db_->exec("ALTER TABLE " + t.storage() + " DROP COLUMN " + quote_ident(c->name));
      rec.ddl_command = "ALTER TABLE " + bracket + " DROP COLUMN [" + c->name + "]";
    } else {
      if (c->key_ordinal > 0) {
        throw Error(ErrorKind::EmuSchema, t.full_name() + ": cannot alter column " + c->name + ", it is part of the primary key (error 5074)", 5074);
      }
      SqlType type;
      try {
        type = SqlType::parse(sql_type);
      } catch (const Error& e) {
        throw Error(ErrorKind::EmuSchema, t.full_name() + "." + c->name + ": " + e.what());
      }
      if (type.family() != c->type.family() || type.family() == Family::RowVersion || type.family() == Family::Guid) {
        throw Error(ErrorKind::EmuSchema, t.full_name() + ": cannot alter column " + c->name + " from " + c->type.canonical() +
                                              " to " + type.canonical() + "; only changes within a type family are supported");
      }
      // Every stored value converts before any is written: a value that does not fit
      // (2628, 8115) changes nothing.
      for_each_row(*db_, t, *c, [&](const Cell& old) { return convert(old, c->type, type, t.full_name() + "." + c->name); });
      db_->prepare("UPDATE \"sys.columns\" SET sql_type = ? WHERE object_id = ? AND column_id = ?")
          .bind(1, std::string_view(type.canonical())).bind(2, t.object_id).bind(3, c->column_id).run();
      rec.new_type = type.canonical();
      rec.ddl_command = "ALTER TABLE " + bracket + " ALTER COLUMN [" + c->name + "] " + type.canonical();
    }
  }
  rec.begin_lsn = s.cursor.take();
  (void)s.cursor.take();  // the DDL record itself
  rec.commit_lsn = s.cursor.take();
  s.cursor.flush();
  rec.end_time = rec.begin_time = s.last_time = next_event_time(at, s.last_time);
  emit(rec);
  store_state(s);
  txn.commit();
  out = rec.commit_lsn;
}

Lsn Engine::add_column(std::string_view table, std::string_view column, std::string_view sql_type, std::optional<Micros> at) {
  Lsn out;
  ddl(table, "add", column, sql_type, at, out);
  return out;
}

Lsn Engine::drop_column(std::string_view table, std::string_view column, std::optional<Micros> at) {
  Lsn out;
  ddl(table, "drop", column, "", at, out);
  return out;
}

Lsn Engine::alter_column(std::string_view table, std::string_view column, std::string_view sql_type, std::optional<Micros> at) {
  Lsn out;
  ddl(table, "alter", column, sql_type, at, out);
  return out;
}

std::int64_t Engine::begin(std::optional<Micros> at) {
  WriteTxn txn(*db_);
  WriteState s = load_state();
  OpenTxn t;
  t.begin_lsn = s.cursor.take();
  t.begin_time = s.last_time = next_event_time(at, s.last_time);
  store_state(s);
  txn.commit();
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
  WriteTxn txn(*db_);
  WriteState s = load_state();
  std::vector<Change> all = t.changes;
  all.insert(all.end(), changes.begin(), changes.end());
  db_->exec("SAVEPOINT validate");
  LogRecord rec;
  std::set<std::pair<std::int64_t, std::string>> keys;
  try {
    apply(all, s, rec, &t.seqvals, keys, id);
  } catch (...) {
    db_->exec("ROLLBACK TO validate; RELEASE validate");
    throw;
  }
  db_->exec("ROLLBACK TO validate; RELEASE validate");
  std::vector<Lsn> seqvals;
  for (const auto& op : rec.ops) seqvals.push_back(op.seqval);
  store_state(s);
  txn.commit();
  t.changes = std::move(all);
  t.seqvals = std::move(seqvals);
  t.keys = std::move(keys);
}

Lsn Engine::commit_open(std::int64_t id, std::optional<Micros> at) {
  auto it = open_.find(id);
  if (it == open_.end()) throw Error(ErrorKind::InvalidArgument, "this Transaction is no longer open; begin a new one");
  OpenTxn t = std::move(it->second);
  open_.erase(it);
  if (t.changes.empty()) {
    throw Error(ErrorKind::InvalidArgument, "this Transaction has no changes; execute some before commit (it is now rolled back)");
  }
  WriteTxn txn(*db_);
  WriteState s = load_state();
  LogRecord rec;
  rec.begin_lsn = t.begin_lsn;
  rec.begin_time = t.begin_time;
  std::set<std::pair<std::int64_t, std::string>> keys;
  apply(t.changes, s, rec, &t.seqvals, keys, id);
  const Lsn lsn = commit_record(rec, s, at);
  store_state(s);
  txn.commit();
  return lsn;
}

void Engine::rollback(std::int64_t id) { open_.erase(id); }
void Engine::rollback_all() { open_.clear(); }

void Engine::add_hook(const std::string& kind, const std::string& read_kind, const std::string& payload) {
  WriteTxn txn(*db_);
  const Micros now = meta_int(*db_, "last_time");
  db_->prepare("INSERT INTO emu_hooks (kind, read_kind, payload, registered_at) VALUES (?, ?, ?, ?)")
      .bind(1, std::string_view(kind)).bind(2, std::string_view(read_kind)).bind_blob(3, payload).bind(4, now).run();
  txn.commit();
}

}  // namespace mssqlcdc::emu
