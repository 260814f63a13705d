// ddl.cpp: the DDL statements of ddl.hpp, each one call of the emulator's engine (decision 1436).
#include "ddl.hpp"

#include <algorithm>
#include <utility>

#include "mssqlcdc/emu/catalog.hpp"
#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {
namespace {

using Tokens = std::vector<SqlToken>;

[[noreturn]] void sql_error(int number, const std::string& text) { throw Error(ErrorKind::Sql, text, number); }

[[noreturn]] void syntax_error_at(const Tokens& t, std::size_t at) {
  if (at < t.size() && t[at].kind == TokenKind::Word && t[at].text.size() > 1 &&
      (t[at].is("TABLE") || t[at].is("COLUMN") || t[at].is("ADD") || t[at].is("PRIMARY") || t[at].is("ON"))) {
    sql_error(156, "Incorrect syntax near the keyword '" + t[at].text + "'.");
  }
  sql_error(102, "Incorrect syntax near '" + (at < t.size() ? t[at].text : std::string(";")) + "'.");
}

// The emulator's refusals as SQL Server errors: their own number when they carry one.
[[noreturn]] void rethrow(const Error& e) {
  if (e.kind() == ErrorKind::Sql) throw;
  sql_error(e.number() == 0 ? 50000 : e.number(), e.what());
}

template <typename Fn>
void engine_call(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    rethrow(e);
  }
}

bool word_at(const Tokens& t, std::size_t i, std::string_view w) { return i < t.size() && t[i].is(w); }

// The index of the ')' closing the '(' at `open`.
std::size_t closing(const Tokens& t, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < t.size(); ++i) {
    if (t[i].is_symbol('(')) ++depth;
    if (t[i].is_symbol(')') && --depth == 0) return i;
  }
  syntax_error_at(t, t.size());
}

// The parts of t[from, to) between top-level commas.
std::vector<Tokens> split_commas(const Tokens& t, std::size_t from, std::size_t to) {
  std::vector<Tokens> out(1);
  int depth = 0;
  for (std::size_t i = from; i < to; ++i) {
    if (t[i].is_symbol('(')) ++depth;
    if (t[i].is_symbol(')')) --depth;
    if (depth == 0 && t[i].is_symbol(',')) {
      out.emplace_back();
      continue;
    }
    out.back().push_back(t[i]);
  }
  return out;
}

// Tokens back to text the emulator's type parser reads: nvarchar(50), decimal(10,2), IDENTITY(1,1).
std::string text_of(const Tokens& t, std::size_t from, std::size_t to) {
  std::string out;
  for (std::size_t i = from; i < to; ++i) {
    const SqlToken& x = t[i];
    std::string piece;
    switch (x.kind) {
      case TokenKind::String: piece = "'" + x.text + "'"; break;
      case TokenKind::UnicodeString: piece = "N'" + x.text + "'"; break;
      case TokenKind::QuotedName: piece = "[" + x.text + "]"; break;
      default: piece = x.text;
    }
    const bool tight = x.is_symbol('(') || x.is_symbol(')') || x.is_symbol(',') ||
                       (i > from && (t[i - 1].is_symbol('(') || t[i - 1].is_symbol(',')));
    if (!out.empty() && !tight) out += ' ';
    out += piece;
  }
  return out;
}

// A table name at t[at] (table, schema.table or this database's database.schema.table) as
// "schema.table", and the name as written for messages; advances `at`.
std::pair<std::string, std::string> table_name(const Tokens& t, std::size_t& at, const std::string& database) {
  if (at >= t.size() || !t[at].is_name()) syntax_error_at(t, at);
  std::vector<std::string> parts{t[at++].text};
  while (at + 1 < t.size() && t[at].is_symbol('.') && t[at + 1].is_name()) {
    parts.push_back(t[at + 1].text);
    at += 2;
  }
  std::string written;
  for (const auto& p : parts) written += (written.empty() ? "" : ".") + p;
  if (parts.size() > 3 || (parts.size() == 3 && !emu::iequals(parts[0], database))) {
    sql_error(2702, "Database '" + parts[0] + "' does not exist.");
  }
  const std::string schema = parts.size() == 1 ? "dbo" : parts[parts.size() - 2];
  return {schema + "." + parts.back(), written};
}

std::optional<emu::Table> find(Storage& storage, const std::string& name) {
  try {
    return emu::find_table(storage.writer().db(), name);
  } catch (const Error&) {
    return std::nullopt;  // a name the emulator cannot hold names no table
  }
}

// The column names of `( a [ASC|DESC], b ... )` starting at t[open].
std::vector<std::string> column_names(const Tokens& t, std::size_t open, std::size_t& end) {
  if (open >= t.size() || !t[open].is_symbol('(')) syntax_error_at(t, open);
  end = closing(t, open);
  std::vector<std::string> out;
  for (const Tokens& part : split_commas(t, open + 1, end)) {
    if (part.empty() || !part[0].is_name() || part.size() > 2 ||
        (part.size() == 2 && !part[1].is("ASC") && !part[1].is("DESC")))
      syntax_error_at(t, end);
    out.push_back(part[0].text);
  }
  return out;
}

bool constraint_word(const SqlToken& x) {
  for (const char* w : {"CONSTRAINT", "PRIMARY", "UNIQUE", "DEFAULT", "CHECK", "REFERENCES", "FOREIGN"}) {
    if (x.is(w)) return true;
  }
  return false;
}

[[noreturn]] void not_modelled(const std::string& clause, const std::string& column) {
  sql_error(50000, "The emulator does not model " + clause + " (column or constraint '" + column +
                       "'); create the table without it, and give every column its value in INSERT.");
}

// One column definition: name type [COLLATE c] [IDENTITY(s,i)] [NULL | NOT NULL] [AS expr]
// [CONSTRAINT n] [PRIMARY KEY [CLUSTERED | NONCLUSTERED]] [UNIQUE]. Returns the name and the
// emulator's type text; `primary` tells whether the column is the key.
std::pair<std::string, std::string> column_definition(const Tokens& part, bool& primary) {
  primary = false;
  if (part.size() < 2 || !part[0].is_name()) syntax_error_at(part, part.size() < 2 ? part.size() : 0);
  std::size_t at = 1;
  std::size_t type_end = at;
  while (type_end < part.size() && !constraint_word(part[type_end]) && !part[type_end].is("NOT") &&
         !part[type_end].is("NULL") && !part[type_end].is("IDENTITY"))
    ++type_end;
  // A computed column (name AS expr) keeps its whole text.
  if (part[1].is("AS")) return {part[0].text, text_of(part, 1, part.size())};
  std::string type = text_of(part, at, type_end);
  std::string identity;
  std::string nullability;
  for (at = type_end; at < part.size();) {
    if (part[at].is("IDENTITY")) {
      std::size_t end = at;
      if (at + 1 < part.size() && part[at + 1].is_symbol('(')) end = closing(part, at + 1);
      identity = text_of(part, at, end + 1);
      at = end + 1;
    } else if (part[at].is("NOT") && word_at(part, at + 1, "NULL")) {
      nullability = " NOT NULL";
      at += 2;
    } else if (part[at].is("NULL")) {
      nullability = " NULL";
      ++at;
    } else if (part[at].is("CONSTRAINT") && at + 1 < part.size() && part[at + 1].is_name()) {
      at += 2;
    } else if (part[at].is("PRIMARY") && word_at(part, at + 1, "KEY")) {
      primary = true;
      at += 2;
      if (word_at(part, at, "CLUSTERED") || word_at(part, at, "NONCLUSTERED")) ++at;
    } else if (part[at].is("UNIQUE")) {
      ++at;
      if (word_at(part, at, "CLUSTERED") || word_at(part, at, "NONCLUSTERED")) ++at;
    } else if (part[at].is("DEFAULT")) {
      not_modelled("DEFAULT constraints", part[0].text);
    } else if (part[at].is("CHECK") || part[at].is("REFERENCES") || part[at].is("FOREIGN")) {
      not_modelled(part[at].text + " constraints", part[0].text);
    } else {
      syntax_error_at(part, at);
    }
  }
  if (type.empty()) syntax_error_at(part, 1);
  if (!identity.empty()) type.append(" ").append(identity);
  return {part[0].text, type + nullability};
}

void create_table(Storage& storage, const Tokens& t, const std::string& database) {
  std::size_t at = 2;
  const auto target = table_name(t, at, database);
  const std::string& name = target.first;
  const std::string& written = target.second;
  if (at >= t.size() || !t[at].is_symbol('(')) syntax_error_at(t, at);
  const std::size_t end = closing(t, at);
  // ON filegroup and TEXTIMAGE_ON filegroup after the list place the table: nothing the
  // emulator models.
  std::size_t after = end + 1;
  while (after + 1 < t.size() && (t[after].is("ON") || t[after].is("TEXTIMAGE_ON")) && t[after + 1].is_name())
    after += 2;
  if (after < t.size() && !(after + 1 == t.size() && t[after].is_symbol(';'))) syntax_error_at(t, after);
  std::vector<std::pair<std::string, std::string>> columns;
  std::vector<std::string> key;
  for (const Tokens& part : split_commas(t, at + 1, end)) {
    if (part.empty()) syntax_error_at(t, end);
    std::size_t p = 0;
    if (part[0].is("CONSTRAINT") && part.size() > 2 && part[1].is_name()) p = 2;
    if (word_at(part, p, "PRIMARY") && word_at(part, p + 1, "KEY")) {
      p += 2;
      if (word_at(part, p, "CLUSTERED") || word_at(part, p, "NONCLUSTERED")) ++p;
      if (!key.empty()) sql_error(8110, "Cannot add multiple PRIMARY KEY constraints to table '" + written + "'.");
      std::size_t close = 0;
      key = column_names(part, p, close);
      continue;
    }
    if (word_at(part, p, "UNIQUE") || word_at(part, p, "INDEX")) continue;  // read, not enforced
    if (p > 0 || word_at(part, 0, "CHECK") || word_at(part, 0, "FOREIGN"))
      not_modelled("this table constraint", part[p > 0 ? 1 : 0].text);
    bool primary = false;
    auto column = column_definition(part, primary);
    if (primary) {
      if (!key.empty()) sql_error(8110, "Cannot add multiple PRIMARY KEY constraints to table '" + written + "'.");
      key = {column.first};
    }
    columns.push_back(std::move(column));
  }
  const std::string schema = name.substr(0, name.find('.'));
  if (emu::iequals(schema, "sys") || emu::iequals(schema, "INFORMATION_SCHEMA")) {
    sql_error(2760, "The specified schema name \"" + schema +
                        "\" either does not exist or you do not have permission to use it.");
  }
  if (find(storage, name)) {
    sql_error(2714, "There is already an object named '" + name.substr(name.find('.') + 1) + "' in the database.");
  }
  engine_call([&] { storage.writer().create_table(name, columns, key); });
}

// ALTER TABLE t ADD def [, def] | DROP COLUMN c [, c] | ALTER COLUMN c type [NULL | NOT NULL].
void alter_table(Storage& storage, const Tokens& t, const std::string& database) {
  std::size_t at = 2;
  const auto target = table_name(t, at, database);
  const std::string& name = target.first;
  const std::string& written = target.second;
  const auto table = find(storage, name);
  if (!table) {
    sql_error(4902,
              "Cannot find the object \"" + written + "\" because it does not exist or you do not have permissions.");
  }
  emu::Engine& engine = storage.writer();
  const std::size_t last = !t.empty() && t.back().is_symbol(';') ? t.size() - 1 : t.size();
  if (word_at(t, at, "ADD")) {
    for (const Tokens& part : split_commas(t, at + 1, last)) {
      if (!part.empty() && constraint_word(part[0])) not_modelled("ALTER TABLE ... ADD CONSTRAINT", name);
      bool primary = false;
      const auto def = column_definition(part, primary);
      const std::string& column = def.first;
      const std::string& type = def.second;
      if (primary) not_modelled("a PRIMARY KEY added by ALTER TABLE", column);
      engine_call([&] { (void)engine.add_column(name, column, type, std::nullopt); });
    }
    return;
  }
  if (word_at(t, at, "DROP") && word_at(t, at + 1, "COLUMN")) {
    for (const Tokens& part : split_commas(t, at + 2, last)) {
      if (part.size() != 1 || !part[0].is_name()) syntax_error_at(t, at + 2);
      if (table->find(part[0].text) == nullptr) {
        sql_error(4924, "ALTER TABLE DROP COLUMN failed because column '" + part[0].text +
                            "' does not exist in table '" + table->name + "'.");
      }
      engine_call([&] { (void)engine.drop_column(name, part[0].text, std::nullopt); });
    }
    return;
  }
  if (word_at(t, at, "ALTER") && word_at(t, at + 1, "COLUMN")) {
    if (at + 3 >= last || !t[at + 2].is_name()) syntax_error_at(t, at + 2);
    const std::string column = t[at + 2].text;
    if (table->find(column) == nullptr) {
      sql_error(4924, "ALTER TABLE ALTER COLUMN failed because column '" + column + "' does not exist in table '" +
                          table->name + "'.");
    }
    const Tokens def(t.begin() + static_cast<std::ptrdiff_t>(at + 2), t.begin() + static_cast<std::ptrdiff_t>(last));
    bool primary = false;
    const std::string type = column_definition(def, primary).second;
    if (primary) syntax_error_at(t, at + 3);
    engine_call([&] { (void)engine.alter_column(name, column, type, std::nullopt); });
    return;
  }
  syntax_error_at(t, at);
}

// DROP TABLE [IF EXISTS] t [, t].
void drop_table(Storage& storage, const Tokens& t, const std::string& database) {
  std::size_t at = 2;
  const bool if_exists = word_at(t, at, "IF") && word_at(t, at + 1, "EXISTS");
  if (if_exists) at += 2;
  while (true) {
    const auto target = table_name(t, at, database);
    const std::string& name = target.first;
    const std::string& written = target.second;
    if (find(storage, name)) {
      engine_call([&] { storage.writer().drop_table(name); });
    } else if (!if_exists) {
      sql_error(3701,
                "Cannot drop the table '" + written + "', because it does not exist or you do not have permission.");
    }
    if (at >= t.size() || t[at].is_symbol(';')) return;
    if (!t[at].is_symbol(',')) syntax_error_at(t, at);
    ++at;
  }
}

void truncate_table(Storage& storage, const Tokens& t, const std::string& database) {
  std::size_t at = 2;
  const auto target = table_name(t, at, database);
  const std::string& name = target.first;
  const std::string& written = target.second;
  if (at < t.size() && !t[at].is_symbol(';')) syntax_error_at(t, at);
  const auto table = find(storage, name);
  if (!table) {
    sql_error(4701,
              "Cannot find the object \"" + written + "\" because it does not exist or you do not have permissions.");
  }
  try {
    storage.writer().truncate_table(name);
  } catch (const Error& e) {
    // SQL Server's message names the table without its schema.
    if (e.number() == 4711) {
      sql_error(4711, "Cannot truncate table '" + table->name +
                          "' because it is published for replication or enabled for Change Data Capture.");
    }
    rethrow(e);
  }
}

// CREATE [UNIQUE] [CLUSTERED | NONCLUSTERED] INDEX name ON t (c [ASC|DESC], ...) [WITH ...].
void create_index(Storage& storage, const Tokens& t, const std::string& database) {
  std::size_t at = 1;
  const bool unique = word_at(t, at, "UNIQUE");
  if (unique) ++at;
  if (word_at(t, at, "CLUSTERED") || word_at(t, at, "NONCLUSTERED")) ++at;
  if (!word_at(t, at, "INDEX")) syntax_error_at(t, at);
  ++at;
  if (at >= t.size() || !t[at].is_name()) syntax_error_at(t, at);
  const std::string index = t[at++].text;
  if (!word_at(t, at, "ON")) syntax_error_at(t, at);
  ++at;
  const auto target = table_name(t, at, database);
  const std::string& name = target.first;
  const std::string& written = target.second;
  std::size_t end = 0;
  const std::vector<std::string> columns = column_names(t, at, end);
  if (!find(storage, name)) {
    sql_error(1088,
              "Cannot find the object \"" + written + "\" because it does not exist or you do not have permissions.");
  }
  engine_call([&] { storage.writer().create_index(name, index, columns, unique); });
}

// UPDATE STATISTICS t [index_or_statistics_name | (names)] [WITH options]: builds the primary
// key's statistics by a full scan, whatever the options ask (decision 1448); a heap has none.
void update_statistics(Storage& storage, const Tokens& t, const std::string& database) {
  std::size_t at = 2;
  const auto target = table_name(t, at, database);
  const auto table = find(storage, target.first);
  if (!table) {
    sql_error(1088, "Cannot find the object \"" + target.second +
                        "\" because it does not exist or you do not have permissions.");
  }
  if (table->heap) return;
  engine_call([&] { storage.reader().update_statistics(target.first); });
}

}  // namespace

bool is_ddl_statement(const std::vector<SqlToken>& t) {
  if (t.size() < 2) return false;
  const SqlToken& head = t[0];
  if (head.is("CREATE")) {
    return t[1].is("TABLE") || t[1].is("INDEX") || t[1].is("UNIQUE") || t[1].is("CLUSTERED") || t[1].is("NONCLUSTERED");
  }
  if (head.is("UPDATE")) return t[1].is("STATISTICS");
  return (head.is("ALTER") || head.is("DROP") || head.is("TRUNCATE")) && t[1].is("TABLE");
}

void run_ddl(Storage& storage, const std::vector<SqlToken>& t, const std::string& database) {
  const SqlToken& head = t[0];
  if (head.is("CREATE")) {
    if (t[1].is("TABLE")) return create_table(storage, t, database);
    return create_index(storage, t, database);
  }
  if (head.is("ALTER")) return alter_table(storage, t, database);
  if (head.is("DROP")) return drop_table(storage, t, database);
  if (head.is("UPDATE")) return update_statistics(storage, t, database);
  truncate_table(storage, t, database);
}

void check_enable_table(Storage& storage, const std::string& schema, const std::string& name,
                        std::optional<bool> supports_net_changes, const std::optional<std::string>& index_name,
                        const std::optional<std::vector<std::string>>& captured_columns) {
  const auto table = find(storage, schema + "." + name);
  if (!table) {
    sql_error(22931, "Source table '" + schema + "." + name +
                         "' does not exist in the current database. Ensure that the correct database context is "
                         "set. Specify a valid schema and table name for the database.");
  }
  std::vector<std::string> key;
  for (const emu::Column* k : table->key()) key.push_back(k->name);
  if (index_name) {
    std::optional<emu::IndexInfo> index;
    engine_call([&] { index = emu::find_index(storage.writer().db(), *table, *index_name); });
    if (!index) {
      sql_error(22928, "Index name '" + *index_name + "' is not an index for table '" + schema + "." + name +
                           "'. Specify a valid index name for the table.");
    }
    if (!index->unique) {
      sql_error(22929, "Index '" + *index_name + "' must be either a primary key or a unique index for table '" +
                           schema + "." + name + "'. Specify an index that meets at least one of these requirements.");
    }
    if (!index->primary_key) {
      sql_error(50000, "The emulator identifies a captured table's rows by its primary key only; @index_name '" +
                           *index_name + "' names another unique index of " + schema + "." + name +
                           ". Pass the primary key's index (PK_" + name + ") or leave @index_name out.");
    }
  } else if (supports_net_changes.value_or(false) && key.empty()) {
    sql_error(22939,
              "The parameter @supports_net_changes is set to 1, but the source table does not have a primary key "
              "defined and no alternate unique index has been specified.");
  }
  if (!captured_columns) return;
  for (const auto& c : *captured_columns) {
    if (table->find(c) == nullptr) {
      sql_error(22930, "Could not locate '" + c + "' as a column of source table '" + schema + "." + name +
                           "'. Specify a valid column name.");
    }
  }
  for (const auto& k : key) {
    const bool listed = std::any_of(captured_columns->begin(), captured_columns->end(),
                                    [&](const std::string& c) { return emu::iequals(c, k); });
    if (!listed) {
      sql_error(22943,
                "Columns used to uniquely identify a row for net change tracking must be included in the list of "
                "captured columns. Add either the primary key columns of the source table, or the columns defined "
                "for the index specified in the parameter @index_name to the list of captured columns and retry "
                "the operation.");
    }
  }
}

}  // namespace mssqlcdc::tds
