// catalog_databases.cpp: sys.databases, DB_ID, DB_NAME and database-qualified names
// (https://learn.microsoft.com/en-us/sql/relational-databases/system-catalog-views/sys-databases-transact-sql).
// The served file is always enabled for CDC (sp_cdc_enable_db is a no-op there), so its row
// says is_cdc_enabled 1; the system databases say 0, as on a server where they never are
// (decision 1442).
#include <array>
#include <utility>

#include "databases.hpp"
#include "mssqlcdc/emu/catalog.hpp"
#include "objects.hpp"

namespace mssqlcdc::tds {
namespace {

// SQL Server's system databases with their fixed ids; the user database is the next id.
constexpr std::array<std::pair<std::string_view, std::int64_t>, 4> kSystem{
    {{"master", 1}, {"tempdb", 2}, {"model", 3}, {"msdb", 4}}};
constexpr std::int64_t kUserDatabaseId = 5;

}  // namespace

std::optional<std::int64_t> database_id(const std::string& name, const std::string& database) {
  if (emu::iequals(name, database)) return kUserDatabaseId;
  for (const auto& [system, id] : kSystem) {
    if (emu::iequals(name, system)) return id;
  }
  return std::nullopt;
}

std::optional<std::string> database_name(std::int64_t id, const std::string& database) {
  if (id == kUserDatabaseId) return database;
  for (const auto& [system, system_id] : kSystem) {
    if (id == system_id) return std::string(system);
  }
  return std::nullopt;
}

std::unique_ptr<Relation> sys_databases(const std::string& database) {
  std::vector<RelColumn> cols{{"name", kSysnameT, false},
                              {"database_id", kIntT, false},
                              {"source_database_id", kIntT, true},
                              {"compatibility_level", kTinyIntT, false},
                              {"collation_name", kSysnameT, true},
                              {"user_access", kTinyIntT, true},
                              {"user_access_desc", kDesc60T, true},
                              {"is_read_only", kBitT, true},
                              {"state", kTinyIntT, true},
                              {"state_desc", kDesc60T, true},
                              {"snapshot_isolation_state", kTinyIntT, true},
                              {"snapshot_isolation_state_desc", kDesc60T, true},
                              {"is_read_committed_snapshot_on", kBitT, true},
                              {"recovery_model", kTinyIntT, true},
                              {"recovery_model_desc", kDesc60T, true},
                              {"is_cdc_enabled", kBitT, false}};
  std::vector<std::vector<Value>> rows;
  const auto row = [&](std::string name, std::int64_t id, bool cdc) {
    rows.push_back({std::move(name), id, std::monostate{}, std::int64_t{160},
                    std::string("SQL_Latin1_General_CP1_CI_AS"), std::int64_t{0}, std::string("MULTI_USER"), false,
                    std::int64_t{0}, std::string("ONLINE"), std::int64_t{0}, std::string("OFF"), false, std::int64_t{1},
                    std::string("FULL"), cdc});
  };
  for (const auto& [system, id] : kSystem) row(std::string(system), id, false);
  row(database, kUserDatabaseId, true);
  return rows_relation(std::move(cols), std::move(rows));
}

ObjectName local_object_name(const ObjectName& name, const std::string& database) {
  if (name.size() >= 3 && emu::iequals(name[name.size() - 3], database)) {
    return ObjectName(name.end() - 2, name.end());
  }
  return name;
}

}  // namespace mssqlcdc::tds
