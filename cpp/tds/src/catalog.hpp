// catalog.hpp: the emulator's storage seen as SQL Server objects, for the query engine. The
// catalog answers the relations (cdc.lsn_time_mapping, change tables, captured tables, the sys
// views the backends read), the table-valued CDC functions and the scalar functions that read
// the database, over one connection's emu::Reader.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "jobs.hpp"
#include "relations.hpp"

namespace mssqlcdc::emu {
class Reader;
}

namespace mssqlcdc::tds {

// `reader` must outlive the catalog; `database` is the name clients see (DB_NAME()), `login`
// the session's login (SUSER_SNAME(); "" for the default login), `job_views` what
// msdb.dbo.cdc_jobs and sys.dm_cdc_log_scan_sessions show (no rows when not set).
[[nodiscard]] std::unique_ptr<Catalog> emulator_catalog(emu::Reader& reader, std::string database,
                                                        std::string login = "",
                                                        std::function<JobViews()> job_views = {});

}  // namespace mssqlcdc::tds
