// drop.cpp: DROP TABLE, TRUNCATE TABLE and CREATE INDEX (decision 1436).
#include <algorithm>

#include "ascii.hpp"
#include "mssqlcdc/emu/catalog.hpp"
#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/emu/statistics.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {
namespace {

std::string index_prefix(std::int64_t table_id) { return "index." + std::to_string(table_id) + "."; }

}  // namespace

void Engine::drop_table(std::string_view table) {
  std::vector<std::string> names;
  {
    ReadTxn r(*db_);
    const Table t = load_table(*db_, table);
    for (const auto& in : instances_of(*db_, t.object_id)) names.push_back(in.name);
    r.end();
  }
  // SQL Server removes the CDC metadata of a dropped table with it: its instances go first.
  for (const auto& n : names) disable_cdc(n);
  Txn txn(*this);
  const Table t = load_table(*db_, table);
  check_no_open_txn(t.object_id, "cannot drop " + t.full_name());
  db_->exec("DROP TABLE " + t.storage());
  for (const char* catalog : {"\"sys.columns\"", "\"sys.tables\""}) {
    db_->prepare(std::string("DELETE FROM ") + catalog + " WHERE object_id = ?").bind(1, t.object_id).run();
  }
  drop_statistics(*db_, t.object_id);
  const std::string id = std::to_string(t.object_id);
  db_->prepare(
         "DELETE FROM emu_meta WHERE key IN (?, ?, ?) OR substr(key, 1, length(?)) = ? OR substr(key, 1, "
         "length(?)) = ? OR substr(key, 1, length(?)) = ?")
      .bind(1, std::string_view("identity." + id))
      .bind(2, std::string_view("identity_last." + id))
      .bind(3, std::string_view("max_column_id." + id))
      .bind(4, std::string_view("not_null." + id + "."))
      .bind(5, std::string_view("not_null." + id + "."))
      .bind(6, std::string_view("computed." + id + "."))
      .bind(7, std::string_view("computed." + id + "."))
      .bind(8, std::string_view(index_prefix(t.object_id)))
      .bind(9, std::string_view(index_prefix(t.object_id)))
      .run();
  bump_catalog(*db_);
  txn.commit();
}

void Engine::truncate_table(std::string_view table) {
  Txn txn(*this);
  const Table t = load_table(*db_, table);
  if (!instances_of(*db_, t.object_id).empty()) {
    throw Error(ErrorKind::EmuSchema,
                "Cannot truncate table '" + t.full_name() +
                    "' because it is published for replication or enabled for Change Data Capture.",
                4711);
  }
  check_no_open_txn(t.object_id, "cannot truncate " + t.full_name());
  db_->exec("DELETE FROM " + t.storage());
  // TRUNCATE TABLE reseeds an identity column: the next row takes the seed again.
  db_->prepare("DELETE FROM emu_meta WHERE key = ?")
      .bind(1, std::string_view("identity_last." + std::to_string(t.object_id)))
      .run();
  txn.commit();
}

void Engine::create_index(std::string_view table, std::string_view name, const std::vector<std::string>& columns,
                          bool unique) {
  check_identifier(name, "index");
  Txn txn(*this);
  const Table t = load_table(*db_, table);
  std::string list;
  for (const auto& c : columns) {
    const Column* col = t.find(c);
    if (col == nullptr) {
      throw Error(ErrorKind::EmuUnknownObject, "Column name '" + c + "' does not exist in the target table or view.",
                  1911);
    }
    list += (list.empty() ? "" : ",") + col->name;
  }
  if (list.empty()) throw Error(ErrorKind::EmuSchema, t.full_name() + ": an index takes at least one column");
  const std::string key = index_prefix(t.object_id) + ascii_lower(name);
  if (meta_get(*db_, key) || iequals(name, "PK_" + t.name)) {
    throw Error(ErrorKind::EmuSchema,
                "The operation failed because an index or statistics with name '" + std::string(name) +
                    "' already exists on table '" + t.full_name() + "'.",
                1913);
  }
  meta_set(*db_, key, std::string(unique ? "unique:" : "nonunique:") + list);
  bump_catalog(*db_);
  txn.commit();
}

std::optional<IndexInfo> find_index(Db& db, const Table& table, std::string_view name) {
  if (!table.heap && iequals(name, "PK_" + table.name)) {
    IndexInfo out{"PK_" + table.name, true, true, {}};
    for (const Column* k : table.key()) out.columns.push_back(k->name);
    return out;
  }
  const auto value = meta_get(db, index_prefix(table.object_id) + ascii_lower(name));
  if (!value) return std::nullopt;
  const auto colon = value->find(':');
  IndexInfo out{std::string(name), value->substr(0, colon) == "unique", false, {}};
  std::string rest = value->substr(colon + 1);
  for (std::size_t start = 0; start <= rest.size();) {
    const auto comma = std::min(rest.find(',', start), rest.size());
    out.columns.push_back(rest.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace mssqlcdc::emu
