// rename.cpp: sp_rename of a column or a table, as SQL Server's capture sees it (decision 1261).
// Neither writes a log record: the change table's shape does not change, so capture and
// cdc.ddl_history see nothing.
#include <algorithm>

#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

[[noreturn]] void name_in_use(const std::string& name, const std::string& kind) {
  throw Error(ErrorKind::EmuSchema,
              "Error: The new name '" + name + "' is already in use as a " + kind +
                  " name and would cause a duplicate that is not permitted (error 15335); pick another name",
              15335);
}

}  // namespace

void Engine::rename_column(std::string_view table, std::string_view column, std::string_view new_name) {
  Txn txn(*this);
  const Table t = load_table(*db_, table);
  check_no_open_txn(t.object_id, "cannot rename a column of " + t.full_name());
  const Column* c = t.find(column);
  if (c == nullptr) {
    throw Error(ErrorKind::EmuUnknownObject,
                t.full_name() +
                    ": Either the parameter @objname is ambiguous or the claimed @objtype (COLUMN) is "
                    "wrong (error 15248): no column " +
                    std::string(column) + "; columns: " + t.column_list(),
                15248);
  }
  check_identifier(new_name, t.full_name() + ": new column name");
  if (const Column* other = t.find(new_name); other != nullptr && other != c)
    name_in_use(std::string(new_name), "COLUMN");
  // Capture marks every captured column replicated, and a replicated column cannot be renamed.
  for (const auto& in : instances_of(*db_, t.object_id)) {
    for (const auto& cc : in.columns) {
      if (cc.present && cc.column_id == c->column_id) {
        throw Error(ErrorKind::EmuSchema,
                    t.full_name() + ": Cannot alter column '" + c->name +
                        "' because it is 'REPLICATED' (error 4928); capture instance '" + in.name +
                        "' captures it: enable a new instance after the rename, or disable this one first",
                    4928);
      }
    }
  }
  for (const auto& other : t.columns) {
    if (!other.computed) continue;
    const auto& used = other.computed->columns();
    if (std::find(used.begin(), used.end(), c->column_id) != used.end()) {
      throw Error(ErrorKind::EmuSchema,
                  t.full_name() + ": computed column " + other.name + " uses " + c->name +
                      " (error 5074); renaming a column a computed column uses is not modelled, drop the "
                      "computed column first",
                  5074);
    }
  }
  db_->prepare("UPDATE \"sys.columns\" SET name = ? WHERE object_id = ? AND column_id = ?")
      .bind(1, new_name)
      .bind(2, t.object_id)
      .bind(3, c->column_id)
      .run();
  if (c->name != new_name) {
    db_->exec("ALTER TABLE " + t.storage() + " RENAME COLUMN " + quote_ident(c->name) + " TO " + quote_ident(new_name));
  }
  bump_catalog(*db_);
  txn.commit();
}

void Engine::rename_table(std::string_view table, std::string_view new_name) {
  Txn txn(*this);
  const Table t = load_table(*db_, table);
  check_no_open_txn(t.object_id, "cannot rename " + t.full_name());
  // sp_rename takes the new name within the table's schema; moving a table to another schema is
  // ALTER SCHEMA ... TRANSFER, which is not modelled.
  if (new_name.find('.') != std::string_view::npos) {
    throw Error(ErrorKind::EmuSchema, t.full_name() + ": the new name '" + std::string(new_name) +
                                          "' names a schema; give the table name alone (it stays in schema " +
                                          t.schema + ")");
  }
  check_identifier(new_name, t.full_name() + ": new table name");
  const std::string full = t.schema + "." + std::string(new_name);
  if (auto other = find_table(*db_, full); other && other->object_id != t.object_id) name_in_use(full, "OBJECT");
  db_->prepare("UPDATE \"sys.tables\" SET name = ? WHERE object_id = ?").bind(1, new_name).bind(2, t.object_id).run();
  if (t.name != new_name) db_->exec("ALTER TABLE " + t.storage() + " RENAME TO " + quote_ident(full));
  bump_catalog(*db_);
  txn.commit();
}

}  // namespace mssqlcdc::emu
