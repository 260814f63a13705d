// schema.cpp: tables, capture instances and DDL.
#include <algorithm>
#include <set>

#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/emu/permissions.hpp"
#include "mssqlcdc/error.hpp"
#include "nullability.hpp"
#include "schema_lock.hpp"

namespace mssqlcdc::emu {

namespace {

bool numeric_or_text(Family f) {
  return f == Family::Bit || f == Family::Integer || f == Family::Exact || f == Family::Approximate ||
         f == Family::Character;
}

// Whether alter_column may change a column from `from` to `to`: within a family, or between the
// numeric and character families as SQL Server converts implicitly (convert() in values.cpp).
bool convertible(const SqlType& from, const SqlType& to) {
  if (from.family() == to.family())
    return from.family() != Family::RowVersion && from.family() != Family::Guid && from.family() != Family::Opaque;
  // A float's text form (style 0, six digits) is not modelled, so float to text is refused.
  if (from.family() == Family::Approximate && to.family() == Family::Character) return false;
  if (from.family() == Family::Character && to.family() == Family::Bit) return false;  // 'TRUE' rules not modelled
  return numeric_or_text(from.family()) && numeric_or_text(to.family());
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

// A character column's COLLATE clause in the SQLite table, which makes the primary key, =, <,
// ORDER BY and the range reads follow the column's collation; nothing for other types.
std::string storage_collation(const SqlType& type) {
  std::string out;
  if (type.collation != nullptr) out.append(" COLLATE ").append(type.collation->sqlite_name());
  return out;
}

// Rebuilds the SQLite table of `t` with column `column` under the collation of `type` (SQLite
// cannot alter a column's collating sequence): same columns in the same order, same rowids.
void recollate_storage(Db& db, const Table& t, const std::string& column, const SqlType& type) {
  struct Col {
    std::string name;
    bool not_null;
    int pk;
  };
  std::vector<Col> cols;
  {
    auto st = db.prepare("SELECT name, \"notnull\", pk FROM pragma_table_info(?)");
    st.bind(1, std::string_view(t.full_name()));
    while (st.step()) cols.push_back({st.text(0), st.i64(1) != 0, static_cast<int>(st.i64(2))});
  }
  const std::string fresh = quote_ident(t.full_name() + ".recollate");
  std::string ddl = "CREATE TABLE " + fresh + " (";
  std::string names;
  std::vector<std::pair<int, std::string>> key;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const Column* c = t.find(cols[i].name);
    const SqlType& ty = iequals(cols[i].name, column) ? type : c->type;
    // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on chained operator+.
    if (i != 0) ddl += ", ", names += ", ";
    ddl.append(quote_ident(cols[i].name)).append(storage_collation(ty)).append(cols[i].not_null ? " NOT NULL" : "");
    names += quote_ident(cols[i].name);
    if (cols[i].pk > 0) key.emplace_back(cols[i].pk, cols[i].name);
  }
  std::sort(key.begin(), key.end());
  if (!key.empty()) {
    ddl += ", PRIMARY KEY (";
    for (std::size_t k = 0; k < key.size(); ++k) ddl.append(k ? ", " : "").append(quote_ident(key[k].second));
    ddl += ")) WITHOUT ROWID";
  } else {
    ddl += ")";
  }
  db.exec(ddl);
  const std::string rowid = t.heap ? "rowid, " : "";
  db.exec("INSERT INTO " + fresh + " (" + rowid + names + ") SELECT " + rowid + names + " FROM " + t.storage());
  db.exec("DROP TABLE " + t.storage());
  db.exec("ALTER TABLE " + fresh + " RENAME TO " + t.storage());
}

bool has_rows(Db& db, const Table& t) {
  auto st = db.prepare("SELECT EXISTS (SELECT 1 FROM " + t.storage() + ")");
  st.step();
  return st.i64(0) != 0;
}

}  // namespace

void Engine::create_table(std::string_view table, const std::vector<std::pair<std::string, std::string>>& columns,
                          const std::vector<std::string>& primary_key) {
  const auto [schema, name] = split_table_name(table);
  const std::string full = schema + "." + name;
  for (const char* reserved : {"cdc", "sys", "emu"}) {
    if (iequals(schema, reserved))
      throw Error(ErrorKind::EmuSchema, full + ": schema " + schema + " is reserved; use another schema such as dbo");
  }
  if (columns.empty() || columns.size() > 1024)
    throw Error(ErrorKind::EmuSchema, full + ": a table takes 1 to 1024 columns");
  std::vector<SqlType> types;
  std::optional<Identity> identity;
  std::vector<std::optional<std::string>> expressions;
  std::vector<std::optional<bool>> not_null;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    check_identifier(columns[i].first, full + ": column");
    for (std::size_t j = 0; j < i; ++j) {
      if (iequals(columns[i].first, columns[j].first)) {
        throw Error(ErrorKind::EmuSchema,
                    full + ": column " + columns[i].first + " is given twice; name each column once", 2705);
      }
    }
    const std::string what = full + "." + columns[i].first;
    std::string type_text = columns[i].second;
    expressions.push_back(split_computed(type_text));
    not_null.push_back(split_nullability(type_text));
    if (expressions.back() && not_null.back()) {
      throw Error(ErrorKind::EmuSchema, what +
                                            ": a computed column takes no NULL or NOT NULL here (persisted "
                                            "computed columns are not modelled); leave the clause out");
    }
    const auto column_identity = split_identity(type_text, what);
    try {
      types.push_back(SqlType::parse(type_text));
    } catch (const Error& e) {
      throw Error(ErrorKind::EmuSchema, what + ": " + e.what());
    }
    if (column_identity) {
      if (identity) {
        throw Error(ErrorKind::EmuSchema,
                    full + ": Multiple identity columns specified for table '" + name +
                        "'. Only one identity column per table is allowed (error 2744); keep one",
                    2744);
      }
      if (not_null.back() == false) {
        throw Error(ErrorKind::EmuSchema,
                    what + ": Could not create IDENTITY attribute on nullable column '" + columns[i].first +
                        "', table '" + full + "' (error 8147); write NOT NULL or leave the clause out",
                    8147);
      }
      check_identity(*column_identity, types.back(), what);
      identity = column_identity;
      identity->column_id = static_cast<std::int64_t>(i + 1);
    }
  }
  std::vector<Expression::Operand> operands;
  for (std::size_t i = 0; i < columns.size(); ++i)
    operands.push_back({columns[i].first, static_cast<std::int64_t>(i + 1), types[i], expressions[i].has_value()});
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (!expressions[i]) continue;
    const std::string what = full + "." + columns[i].first;
    if (identity && identity->column_id == static_cast<std::int64_t>(i + 1))
      throw Error(ErrorKind::EmuSchema, what + ": a computed column cannot also be an identity column");
    (void)Expression::parse(*expressions[i], operands, types[i], what);
  }
  std::vector<int> key_ordinal(columns.size(), 0);
  for (std::size_t k = 0; k < primary_key.size(); ++k) {
    auto it =
        std::find_if(columns.begin(), columns.end(), [&](const auto& c) { return iequals(c.first, primary_key[k]); });
    if (it == columns.end()) {
      throw Error(ErrorKind::EmuSchema, full + ": primary key column " + primary_key[k] + " is not one of the columns");
    }
    const auto i = static_cast<std::size_t>(it - columns.begin());
    if (key_ordinal[i] != 0)
      throw Error(ErrorKind::EmuSchema, full + ": primary key column " + primary_key[k] + " is given twice");
    if (expressions[i]) {
      throw Error(ErrorKind::EmuSchema, full + ": computed column " + columns[i].first +
                                            " cannot be part of the primary key here (persisted computed keys are "
                                            "not modelled); key the table on stored columns");
    }
    if (types[i].is_lob() || types[i].is_opaque() || types[i].base == Base::RowVersion) {
      throw Error(ErrorKind::EmuSchema, full + ": column " + columns[i].first + " of type " + types[i].canonical() +
                                            " cannot be part of the primary key; pick another key column");
    }
    if (not_null[i] == false) {
      throw Error(ErrorKind::EmuSchema,
                  full + ": Cannot define PRIMARY KEY constraint on nullable column in table '" + name +
                      "' (error 8111); column " + columns[i].first + " is a key column, write NOT NULL",
                  8111);
    }
    key_ordinal[i] = static_cast<int>(k + 1);
  }
  Txn txn(*this);
  if (find_table(*db_, full)) {
    throw Error(
        ErrorKind::EmuSchema,
        full + ": there is already a table named so in " + db_->path().string() + " (error 2714); pick another name",
        2714);
  }
  const std::int64_t id = next_object_id();
  db_->prepare("INSERT INTO \"sys.tables\" (object_id, schema_name, name, is_heap) VALUES (?, ?, ?, ?)")
      .bind(1, id)
      .bind(2, std::string_view(schema))
      .bind(3, std::string_view(name))
      .bind(4, std::int64_t{primary_key.empty()})
      .run();
  std::string ddl = "CREATE TABLE " + quote_ident(full) + " (";
  for (std::size_t i = 0; i < columns.size(); ++i) {
    db_->prepare(
           "INSERT INTO \"sys.columns\" (object_id, column_id, name, sql_type, key_ordinal) VALUES (?, ?, ?, ?, ?)")
        .bind(1, id)
        .bind(2, static_cast<std::int64_t>(i + 1))
        .bind(3, std::string_view(columns[i].first))
        .bind(4, std::string_view(types[i].declared()))
        .bind(5, std::int64_t{key_ordinal[i]})
        .run();
    ddl += (i ? ", " : "") + quote_ident(columns[i].first) + storage_collation(types[i]) +
           (key_ordinal[i] ? " NOT NULL" : "");
  }
  if (!primary_key.empty()) {
    ddl += ", PRIMARY KEY (";
    for (std::size_t k = 0; k < primary_key.size(); ++k) ddl += (k ? ", " : "") + quote_ident(primary_key[k]);
    ddl += ")) WITHOUT ROWID";
  } else {
    ddl += ")";
  }
  db_->exec(ddl);
  if (identity) store_identity(*db_, id, *identity);
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (not_null[i] == true && key_ordinal[i] == 0) store_not_null(*db_, id, static_cast<std::int64_t>(i + 1), true);
    if (expressions[i]) store_computed(*db_, id, static_cast<std::int64_t>(i + 1), *expressions[i]);
  }
  bump_catalog(*db_);
  txn.commit();
}

std::string Engine::enable_cdc(std::string_view table, std::optional<std::string> capture_instance,
                               std::optional<std::vector<std::string>> captured_columns,
                               std::optional<std::string> role_name) {
  Txn txn(*this);
  const Table t = load_table(*db_, table);
  check_no_open_txn(t.object_id, "cannot enable CDC on " + t.full_name());
  const std::string name = capture_instance.value_or(t.schema + "_" + t.name);
  check_identifier(name, "capture instance", 100);
  if (auto other = find_instance(*db_, name)) {
    throw Error(ErrorKind::EmuSchema, "capture instance name '" + name + "' is already used in " +
                                          db_->path().string() + "; pass another capture_instance");
  }
  const auto existing = instances_of(*db_, t.object_id);
  if (existing.size() >= 2) {
    throw Error(ErrorKind::EmuInstanceLimit,
                t.full_name() + " already has two capture instances (" + existing[0].name + ", " + existing[1].name +
                    "); disable one first",
                22963);
  }
  std::vector<const Column*> cols;
  if (captured_columns) {
    for (const auto& n : *captured_columns) {
      const Column* c = t.find(n);
      if (c == nullptr) {
        throw Error(ErrorKind::EmuUnknownObject,
                    t.full_name() + ": no column " + n + " to capture (columns: " + t.column_list() + ")", 207);
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
    if (c->name.starts_with("__$"))
      throw Error(ErrorKind::EmuSchema, t.full_name() + ": column " + c->name + " cannot be captured");
  }
  WriteState s = load_state();
  const Lsn begin = s.cursor.take();
  const Lsn lsn = s.cursor.take();
  s.cursor.flush();
  const bool command_id = get_setting(*db_, "command_id_column") == "true";
  const std::int64_t id = next_object_id();
  db_->prepare(
         "INSERT INTO \"cdc.change_tables\" (object_id, capture_instance, source_object_id, start_lsn, create_lsn, "
         "index_name, create_date, create_date_utc, has_command_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind(1, id)
      .bind(2, std::string_view(name))
      .bind(3, t.object_id)
      .bind_blob(4, lsn_blob(lsn))
      .bind_blob(5, lsn_blob(lsn))
      .bind(6, std::string_view(t.heap ? std::string() : "PK_" + t.name))
      .bind(7, zone().to_local(s.last_time))
      .bind(8, s.last_time)
      .bind(9, std::int64_t{command_id})
      .run();
  if (t.heap) db_->prepare("UPDATE \"cdc.change_tables\" SET index_name = NULL WHERE object_id = ?").bind(1, id).run();
  if (role_name) set_gating_role(*db_, id, *role_name);
  std::string ddl = "CREATE TABLE " + quote_ident("cdc." + name + "_CT") +
                    " (\"__$start_lsn\" BLOB NOT NULL, \"__$end_lsn\" BLOB, \"__$seqval\" BLOB NOT NULL, "
                    "\"__$operation\" INTEGER NOT NULL, \"__$update_mask\" BLOB";
  for (std::size_t i = 0; i < cols.size(); ++i) {
    db_->prepare(
           "INSERT INTO \"cdc.captured_columns\" (object_id, column_name, column_id, column_type, column_ordinal, "
           "is_computed) VALUES (?, ?, ?, ?, ?, ?)")
        .bind(1, id)
        .bind(2, std::string_view(cols[i]->name))
        .bind(3, cols[i]->column_id)
        .bind(4, std::string_view(cols[i]->type.base == Base::RowVersion ? "binary(8)" : cols[i]->type.declared()))
        .bind(5, static_cast<std::int64_t>(i + 1))
        .bind(6, std::int64_t{cols[i]->computed != nullptr})
        .run();
    ddl += ", " + quote_ident(cols[i]->name);
  }
  const auto key = t.key();
  for (std::size_t k = 0; k < key.size(); ++k) {
    db_->prepare(
           "INSERT INTO \"cdc.index_columns\" (object_id, column_name, index_ordinal, column_id) VALUES (?, ?, ?, ?)")
        .bind(1, id)
        .bind(2, std::string_view(key[k]->name))
        .bind(3, static_cast<std::int64_t>(k + 1))
        .bind(4, key[k]->column_id)
        .run();
  }
  if (command_id) {
    ddl +=
        ", \"__$command_id\" INTEGER NOT NULL, PRIMARY KEY (\"__$start_lsn\", \"__$command_id\", \"__$seqval\", "
        "\"__$operation\"))";
  } else {
    ddl += ", PRIMARY KEY (\"__$start_lsn\", \"__$seqval\", \"__$operation\"))";
  }
  db_->exec(ddl + " WITHOUT ROWID");
  db_->prepare("UPDATE \"sys.tables\" SET is_tracked_by_cdc = 1 WHERE object_id = ?").bind(1, t.object_id).run();
  // In manual mode the instance waits in the log until a capture cycle reaches its create LSN.
  LogRecord enable;
  enable.kind = LogRecord::Kind::Enable;
  enable.begin_lsn = begin;
  enable.commit_lsn = lsn;
  enable.begin_time = enable.end_time = s.last_time;
  enable.table_id = id;
  emit(enable);
  bump_catalog(*db_);
  store_state(s);
  txn.commit();
  return name;
}

namespace {

// Sch-M on instances, taken before the write transaction: a reader waited for never needs the
// writer's lock to finish (its hooks fire through that lock), so the wait cannot deadlock.
std::vector<SchemaLock> lock_instances(Db& db, const std::vector<std::int64_t>& object_ids) {
  std::int64_t timeout = 0;
  {
    ReadTxn r(db);
    timeout = lock_timeout_ms(db);
    r.end();
  }
  std::vector<SchemaLock> locks;
  for (const std::int64_t id : object_ids) locks.emplace_back(db.path(), id, SchemaLock::Mode::Exclusive, timeout);
  return locks;
}

std::vector<std::int64_t> instance_ids_of_table(Db& db, std::string_view table) {
  ReadTxn r(db);
  std::vector<std::int64_t> ids;
  if (auto t = find_table(db, table)) {
    for (const auto& in : instances_of(db, t->object_id)) ids.push_back(in.object_id);
  }
  r.end();
  return ids;
}

}  // namespace

void Engine::disable_cdc(std::string_view capture_instance) {
  std::int64_t object_id = 0;
  {
    ReadTxn r(*db_);
    object_id = load_instance(*db_, capture_instance).object_id;
    r.end();
  }
  // SQL Server drops the change table under Sch-M, which waits for the readers' Sch-S.
  const auto locks = lock_instances(*db_, {object_id});
  Txn txn(*this);
  const Instance in = load_instance(*db_, capture_instance);
  db_->exec("DROP TABLE " + in.change_table());
  db_->prepare("DELETE FROM emu_log WHERE kind = 'enable' AND commit_lsn = ?")
      .bind_blob(1, lsn_blob(in.create_lsn))
      .run();
  for (const char* t :
       {"\"cdc.change_tables\"", "\"cdc.captured_columns\"", "\"cdc.index_columns\"", "\"cdc.ddl_history\""}) {
    db_->prepare(std::string("DELETE FROM ") + t + " WHERE object_id = ?").bind(1, in.object_id).run();
  }
  db_->prepare(
         "UPDATE \"sys.tables\" SET is_tracked_by_cdc = EXISTS (SELECT 1 FROM \"cdc.change_tables\" c "
         "WHERE c.source_object_id = \"sys.tables\".object_id) WHERE object_id = ?")
      .bind(1, in.source_object_id)
      .run();
  bump_catalog(*db_);
  txn.commit();
}

void Engine::ddl(std::string_view table, const std::string& kind, std::string_view column, std::string_view sql_type,
                 std::optional<Micros> at, Lsn& out) {
  before_event(at);
  // An ALTER of a captured column alters the change tables too (capture.cpp), under Sch-M.
  // Manual mode converts them in a later capture cycle, which takes no lock: a read then
  // stops with a clear error if a column it streams changed type (scan.cpp).
  const auto locks =
      kind == "alter" ? lock_instances(*db_, instance_ids_of_table(*db_, table)) : std::vector<SchemaLock>{};
  Txn txn(*this);
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
    if (t.find(column))
      throw Error(ErrorKind::EmuSchema,
                  t.full_name() + ": column " + std::string(column) + " already exists (error 2705)", 2705);
    if (t.columns.size() >= 1024)
      throw Error(ErrorKind::EmuSchema, t.full_name() + ": a table takes at most 1024 columns");
    std::string type_text(sql_type);
    const bool add_not_null = split_nullability(type_text).value_or(false);
    SqlType type;
    try {
      type = SqlType::parse(type_text);
    } catch (const Error& e) {
      throw Error(ErrorKind::EmuSchema, t.full_name() + "." + std::string(column) + ": " + e.what());
    }
    if (add_not_null && type.base != Base::RowVersion && has_rows(*db_, t)) {
      throw Error(ErrorKind::EmuSchema,
                  t.full_name() + ": Column '" + std::string(column) + "' cannot be added to non-empty table '" +
                      t.name +
                      "' because it is NOT NULL without a DEFAULT (error 4901; defaults are not modelled); add it "
                      "as NULL, fill it, then alter it to NOT NULL",
                  4901);
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
    db_->prepare(
           "INSERT INTO \"sys.columns\" (object_id, column_id, name, sql_type, key_ordinal) VALUES (?, ?, ?, ?, 0)")
        .bind(1, t.object_id)
        .bind(2, id)
        .bind(3, column)
        .bind(4, std::string_view(type.declared()))
        .run();
    db_->exec("ALTER TABLE " + t.storage() + " ADD COLUMN " + quote_ident(column) + storage_collation(type));
    if (type.base == Base::RowVersion) {
      Column added;
      added.column_id = id;
      added.name = std::string(column);
      added.type = type;
      for_each_row(*db_, t, added, [&](const Cell&) { return Cell::blob(rowversion_bytes(++s.rowversion)); });
    }
    if (add_not_null) store_not_null(*db_, t.object_id, id, true);
    rec.column = std::string(column);
    rec.column_id = id;
    rec.new_type = type.canonical();
    rec.ddl_command = "ALTER TABLE " + bracket + " ADD [" + std::string(column) + "] " + type.canonical() +
                      (add_not_null ? " NOT NULL" : "");
  } else {
    const Column* c = t.find(column);
    if (c == nullptr) {
      throw Error(ErrorKind::EmuUnknownObject,
                  t.full_name() + ": no column " + std::string(column) + " (error 207); columns: " + t.column_list(),
                  207);
    }
    rec.column = c->name;
    rec.column_id = c->column_id;
    for (const auto& other : t.columns) {
      if (!other.computed) continue;
      const auto& used = other.computed->columns();
      if (std::find(used.begin(), used.end(), c->column_id) != used.end()) {
        throw Error(ErrorKind::EmuSchema,
                    t.full_name() + ": The object '" + other.name + "' is dependent on column '" + c->name +
                        "' (error 5074); " +
                        (kind == "drop" ? "ALTER TABLE DROP COLUMN " : "ALTER TABLE ALTER COLUMN ") + c->name +
                        " failed because one or more objects access this column (error 4922); drop "
                        "the computed column first",
                    5074);
      }
    }
    if (kind == "alter" && c->computed) {
      throw Error(ErrorKind::EmuSchema,
                  t.full_name() + ": Cannot alter column '" + c->name +
                      "' because it is 'COMPUTED' (error 4928); drop it and add it again",
                  4928);
    }
    if (kind == "drop") {
      if (c->key_ordinal > 0) {
        throw Error(ErrorKind::EmuSchema,
                    t.full_name() + ": cannot drop column " + c->name + ", it is part of the primary key (error 5074)",
                    5074);
      }
      if (t.columns.size() == 1)
        throw Error(ErrorKind::EmuSchema, t.full_name() + ": cannot drop the last column " + c->name, 5074);
      const auto stored = meta_get(*db_, "max_column_id." + std::to_string(t.object_id));
      const std::int64_t max_id = t.columns.back().column_id;
      if (!stored || std::stoll(*stored) < max_id)
        meta_set(*db_, "max_column_id." + std::to_string(t.object_id), std::to_string(max_id));
      db_->prepare("DELETE FROM \"sys.columns\" WHERE object_id = ? AND column_id = ?")
          .bind(1, t.object_id)
          .bind(2, c->column_id)
          .run();
      db_->exec("ALTER TABLE " + t.storage() + " DROP COLUMN " + quote_ident(c->name));
      store_not_null(*db_, t.object_id, c->column_id, false);
      rec.ddl_command = "ALTER TABLE " + bracket + " DROP COLUMN [" + c->name + "]";
    } else {
      if (c->key_ordinal > 0) {
        throw Error(ErrorKind::EmuSchema,
                    t.full_name() + ": cannot alter column " + c->name + ", it is part of the primary key (error 5074)",
                    5074);
      }
      std::string type_text(sql_type);
      // Without NULL or NOT NULL the column becomes nullable, as under ANSI_NULL_DFLT_ON, the
      // setting SQL Server's drivers connect with (decision 1260).
      const auto nullability = split_nullability(type_text);
      const bool alter_not_null = nullability.value_or(false);
      SqlType type;
      try {
        type = SqlType::parse(type_text);
      } catch (const Error& e) {
        throw Error(ErrorKind::EmuSchema, t.full_name() + "." + c->name + ": " + e.what());
      }
      if (c->is_identity && nullability == false) {
        throw Error(ErrorKind::EmuSchema, t.full_name() + ": identity column " + c->name +
                                              " cannot become nullable (error 8147); leave the clause out");
      }
      if (c->is_identity && type.family() != Family::Integer) {
        throw Error(ErrorKind::EmuSchema, t.full_name() + ": cannot alter identity column " + c->name + " to " +
                                              type.canonical() + "; an identity column stays an integer type");
      }
      if (!convertible(c->type, type)) {
        throw Error(ErrorKind::EmuSchema, t.full_name() + ": cannot alter column " + c->name + " from " +
                                              c->type.canonical() + " to " + type.canonical() +
                                              "; the emulator converts within a type family and between "
                                              "numbers and character types");
      }
      // Every stored value converts before any is written: a value that does not fit
      // (2628, 8115) changes nothing.
      for_each_row(*db_, t, *c, [&](const Cell& old) {
        if (alter_not_null && old.type == Cell::Type::Null) {
          throw Error(ErrorKind::EmuConstraint,
                      t.full_name() + ": " + not_null_message(t, c->name, db_->path().stem().string(), "UPDATE") +
                          " (error 515); the ALTER changed nothing: set the NULLs to a value first",
                      515);
        }
        return convert(old, c->type, type, t.full_name() + "." + c->name);
      });
      if (!c->is_identity) store_not_null(*db_, t.object_id, c->column_id, alter_not_null);
      if (type.collation != c->type.collation) recollate_storage(*db_, t, c->name, type);
      db_->prepare("UPDATE \"sys.columns\" SET sql_type = ? WHERE object_id = ? AND column_id = ?")
          .bind(1, std::string_view(type.declared()))
          .bind(2, t.object_id)
          .bind(3, c->column_id)
          .run();
      rec.new_type = type.canonical();
      rec.ddl_command = "ALTER TABLE " + bracket + " ALTER COLUMN [" + c->name + "] " + type.canonical() +
                        (nullability ? (*nullability ? " NOT NULL" : " NULL") : "");
    }
  }
  rec.begin_lsn = s.cursor.take();
  (void)s.cursor.take();  // the DDL record itself
  rec.commit_lsn = s.cursor.take();
  s.cursor.flush();
  rec.end_time = rec.begin_time = s.last_time = next_event_time(at, s.last_time);
  bump_catalog(*db_);
  emit(rec);
  store_state(s);
  txn.commit();
  out = rec.commit_lsn;
}

Lsn Engine::add_column(std::string_view table, std::string_view column, std::string_view sql_type,
                       std::optional<Micros> at) {
  Lsn out;
  ddl(table, "add", column, sql_type, at, out);
  return out;
}

Lsn Engine::drop_column(std::string_view table, std::string_view column, std::optional<Micros> at) {
  Lsn out;
  ddl(table, "drop", column, "", at, out);
  return out;
}

Lsn Engine::alter_column(std::string_view table, std::string_view column, std::string_view sql_type,
                         std::optional<Micros> at) {
  Lsn out;
  ddl(table, "alter", column, sql_type, at, out);
  return out;
}

}  // namespace mssqlcdc::emu
