// catalog_meta.hpp: the catalog a generic SQL Server client reads (decision 1439): the
// INFORMATION_SCHEMA views, sys.indexes and sys.index_columns, CDC's monitoring views and
// msdb.dbo.cdc_jobs (the parser names it {"msdb.dbo", "cdc_jobs"}), and the
// scalar functions that describe the server and the session (SERVERPROPERTY, SCHEMA_ID,
// SCHEMA_NAME, SUSER_SNAME, USER_NAME). Each answers with the columns, types and values
// Microsoft documents for SQL Server 2022 Developer edition; free-text fields say "emulator".
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jobs.hpp"
#include "relations.hpp"

namespace mssqlcdc::emu {
class Reader;
}

namespace mssqlcdc::tds {

class ObjectModel;

// Who the session is and where it is, for the functions that name them.
struct SessionNames {
  std::string database;  // DB_NAME()
  std::string login;     // SUSER_SNAME(); "" means the emulator's default login, sa
  // The jobs' views (jobs.hpp): msdb.dbo.cdc_jobs, sys.dm_cdc_log_scan_sessions; unset: no rows.
  std::function<JobViews()> job_views;
};

// The relation `name` names among the views above (case-insensitive schema and name), or
// nullptr when it is none of them.
[[nodiscard]] std::unique_ptr<Relation> meta_relation(const ObjectModel& model, emu::Reader& reader,
                                                      const SessionNames& names, const ObjectName& name);

// The value of scalar function `fn` (lower-case, as written with its schema if any) called with
// `args`, or nullopt when `fn` is none of the functions above; reads the catalog only for
// SCHEMA_ID and SCHEMA_NAME. Throws Error(Sql) 174 for a wrong argument count.
[[nodiscard]] std::optional<TypedValue> meta_scalar(emu::Reader& reader, const SessionNames& names,
                                                    const std::string& fn, const std::vector<TypedValue>& args);

// SERVERPROPERTY(`property`): SQL Server 2022 Developer edition's answer, NULL for a name
// SQL Server does not know (as it answers one). Text comes back as nvarchar(128), numbers as int
// or bigint: the base types of SQL Server's sql_variant.
[[nodiscard]] TypedValue server_property(const std::string& property);

}  // namespace mssqlcdc::tds
