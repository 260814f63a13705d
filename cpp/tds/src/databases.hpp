// databases.hpp: the server's databases as a client sees them: sys.databases, DB_ID and
// DB_NAME. A served file is one user database beside SQL Server's four system databases, with
// the ids SQL Server gives them (master 1, tempdb 2, model 3, msdb 4) and 5 for the file's.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "relations.hpp"

namespace mssqlcdc::tds {

// The database_id of `name` (compared case-insensitively) on a server whose user database is
// `database`; nullopt for a database the server does not have.
[[nodiscard]] std::optional<std::int64_t> database_id(const std::string& name, const std::string& database);

// The name of database `id`; nullopt for an id the server does not have.
[[nodiscard]] std::optional<std::string> database_name(std::int64_t id, const std::string& database);

// sys.databases: one row per database with the columns clients read (name, database_id,
// state_desc, is_cdc_enabled, snapshot_isolation_state ...).
[[nodiscard]] std::unique_ptr<Relation> sys_databases(const std::string& database);

// `name` without a leading database part naming `database` (`[shop].sys.fn_cdc_get_max_lsn`
// becomes `sys.fn_cdc_get_max_lsn`); other names as they are.
[[nodiscard]] ObjectName local_object_name(const ObjectName& name, const std::string& database);

}  // namespace mssqlcdc::tds
