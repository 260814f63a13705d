#include "mssqlcdc/emu/catalog.hpp"

#include <algorithm>
#include <cctype>

#include "mssqlcdc/emu/log.hpp"
#include "mssqlcdc/error.hpp"
#include "nullability.hpp"

namespace mssqlcdc::emu {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

void check_identifier(std::string_view name, std::string_view what, std::size_t limit) {
  const bool ok = !name.empty() && name.size() <= limit &&
                  (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                  std::all_of(name.begin(), name.end(),
                              [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  if (!ok) {
    throw Error(ErrorKind::EmuSchema, std::string(what) + " '" + std::string(name) +
                                          "' is not a valid name; use letters, digits and _ (not first), at most " +
                                          std::to_string(limit) + " characters");
  }
}

std::pair<std::string, std::string> split_table_name(std::string_view name) {
  const auto dot = name.find('.');
  std::string schema = dot == std::string_view::npos ? "dbo" : std::string(name.substr(0, dot));
  std::string table(dot == std::string_view::npos ? name : name.substr(dot + 1));
  check_identifier(schema, "schema");
  check_identifier(table, "table");
  return {schema, table};
}

std::vector<const Column*> Table::key() const {
  std::vector<const Column*> out;
  for (const auto& c : columns) {
    if (c.key_ordinal > 0) out.push_back(&c);
  }
  std::sort(out.begin(), out.end(), [](const Column* a, const Column* b) { return a->key_ordinal < b->key_ordinal; });
  return out;
}

const Column* Table::find(std::string_view column) const {
  for (const auto& c : columns) {
    if (iequals(c.name, column)) return &c;
  }
  return nullptr;
}

const Column* Table::by_id(std::int64_t column_id) const {
  for (const auto& c : columns) {
    if (c.column_id == column_id) return &c;
  }
  return nullptr;
}

std::string Table::column_list() const {
  std::string out;
  for (const auto& c : columns) out += (out.empty() ? "" : ", ") + c.name;
  return out;
}

const CapturedColumn* Instance::find(std::string_view column) const {
  for (const auto& c : columns) {
    if (iequals(c.name, column)) return &c;
  }
  return nullptr;
}

namespace {

Table read_table_row(Db& db, Stmt& st) {
  Table t;
  t.object_id = st.i64(0);
  t.schema = st.text(1);
  t.name = st.text(2);
  t.heap = st.i64(3) != 0;
  auto cols = db.prepare(
      "SELECT column_id, name, sql_type, key_ordinal FROM \"sys.columns\" WHERE object_id = ? ORDER BY column_id");
  cols.bind(1, t.object_id);
  while (cols.step()) {
    Column c;
    c.column_id = cols.i64(0);
    c.name = cols.text(1);
    c.type = SqlType::parse(cols.text(2));
    c.key_ordinal = static_cast<int>(cols.i64(3));
    t.columns.push_back(std::move(c));
  }
  t.identity = load_identity(db, t.object_id);
  bool present = false;
  for (auto& c : t.columns) present |= c.is_identity = t.identity && t.identity->column_id == c.column_id;
  if (!present) t.identity.reset();  // its column was dropped
  for (auto& c : t.columns)
    c.nullable = c.key_ordinal == 0 && !c.is_identity && !load_not_null(db, t.object_id, c.column_id);
  const auto computed = load_computed(db, t.object_id);
  if (!computed.empty()) {
    std::vector<Expression::Operand> operands;
    for (const auto& c : t.columns) {
      const bool is_computed =
          std::any_of(computed.begin(), computed.end(), [&](const auto& p) { return p.first == c.column_id; });
      operands.push_back({c.name, c.column_id, c.type, is_computed});
    }
    for (const auto& [column_id, text] : computed) {
      for (auto& c : t.columns) {
        if (c.column_id == column_id)
          c.computed = std::make_shared<const Expression>(
              Expression::parse(text, operands, c.type, t.schema + "." + t.name + "." + c.name));
      }
    }
  }
  return t;
}

Instance read_instance_row(Db& db, Stmt& st) {
  Instance in;
  in.object_id = st.i64(0);
  in.name = st.text(1);
  in.source_object_id = st.i64(2);
  in.start_lsn = lsn_from_blob(st.blob(3));
  in.create_lsn = lsn_from_blob(st.blob(4));
  in.create_date = st.i64(5);
  in.has_command_id = st.i64(6) != 0;
  in.create_date_utc = st.i64(7);
  in.established = st.i64(8) != 0;
  auto cols = db.prepare(
      "SELECT column_name, column_id, column_type, column_ordinal, present, is_computed FROM "
      "\"cdc.captured_columns\" "
      "WHERE object_id = ? ORDER BY column_ordinal");
  cols.bind(1, in.object_id);
  while (cols.step()) {
    CapturedColumn c;
    c.name = cols.text(0);
    c.column_id = cols.i64(1);
    c.type = SqlType::parse(cols.text(2));
    c.ordinal = static_cast<int>(cols.i64(3));
    c.present = cols.i64(4) != 0;
    c.is_computed = cols.i64(5) != 0;
    in.columns.push_back(std::move(c));
  }
  auto idx = db.prepare("SELECT column_name FROM \"cdc.index_columns\" WHERE object_id = ? ORDER BY index_ordinal");
  idx.bind(1, in.object_id);
  while (idx.step()) in.index_columns.push_back(idx.text(0));
  return in;
}

constexpr const char* kInstanceColumns =
    "SELECT object_id, capture_instance, source_object_id, start_lsn, create_lsn, create_date, has_command_id, "
    "create_date_utc, NOT EXISTS (SELECT 1 FROM emu_log WHERE kind = 'enable' AND commit_lsn = create_lsn) "
    "FROM \"cdc.change_tables\" ";

}  // namespace

std::optional<Table> find_table(Db& db, std::string_view name) {
  const auto [schema, table] = split_table_name(name);
  auto st = db.prepare(
      "SELECT object_id, schema_name, name, is_heap FROM \"sys.tables\" WHERE schema_name = ? COLLATE NOCASE "
      "AND name = ? COLLATE NOCASE");
  st.bind(1, std::string_view(schema)).bind(2, std::string_view(table));
  if (!st.step()) return std::nullopt;
  return read_table_row(db, st);
}

std::vector<std::string> table_names(Db& db) {
  std::vector<std::string> out;
  auto st = db.prepare("SELECT schema_name || '.' || name FROM \"sys.tables\" ORDER BY schema_name, name");
  while (st.step()) out.push_back(st.text(0));
  return out;
}

Table load_table(Db& db, std::string_view name) {
  auto t = find_table(db, name);
  if (!t) {
    std::string list;
    for (const auto& n : table_names(db)) list += (list.empty() ? "" : ", ") + n;
    const auto [schema, table] = split_table_name(name);
    throw Error(ErrorKind::EmuUnknownObject,
                schema + "." + table + ": no such table in " + db.path().string() +
                    " (tables: " + (list.empty() ? "none" : list) + ")",
                208);
  }
  return *t;
}

Table load_table_by_id(Db& db, std::int64_t object_id) {
  auto st = db.prepare("SELECT object_id, schema_name, name, is_heap FROM \"sys.tables\" WHERE object_id = ?");
  st.bind(1, object_id);
  if (!st.step()) throw Error(ErrorKind::Corrupt, "table object " + std::to_string(object_id) + " is missing");
  return read_table_row(db, st);
}

std::optional<Instance> find_instance(Db& db, std::string_view name) {
  // sysname comparison ignores trailing spaces (only spaces: a tab is a character), so
  // sys.fn_cdc_get_min_lsn('dbo_orders ') finds dbo_orders on SQL Server.
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  auto st = db.prepare(std::string(kInstanceColumns) + "WHERE capture_instance = ? COLLATE NOCASE");
  st.bind(1, name);
  if (!st.step()) return std::nullopt;
  return read_instance_row(db, st);
}

Instance load_instance(Db& db, std::string_view name) {
  auto in = find_instance(db, name);
  if (!in) {
    throw Error(ErrorKind::EmuUnknownObject,
                "capture instance '" + std::string(name) + "': no such capture instance in " + db.path().string() +
                    " (error 208, invalid object name cdc." + std::string(name) +
                    "_CT); check capture_instances(table)",
                208);
  }
  return *in;
}

std::vector<Instance> instances_of(Db& db, std::int64_t table_id) {
  std::vector<Instance> out;
  std::vector<std::int64_t> ids;
  {
    auto st = db.prepare("SELECT object_id FROM \"cdc.change_tables\" WHERE source_object_id = ? ORDER BY create_lsn");
    st.bind(1, table_id);
    while (st.step()) ids.push_back(st.i64(0));
  }
  for (auto id : ids) {
    auto st = db.prepare(std::string(kInstanceColumns) + "WHERE object_id = ?");
    st.bind(1, id);
    if (st.step()) out.push_back(read_instance_row(db, st));
  }
  return out;
}

}  // namespace mssqlcdc::emu
