// procedures_meta.hpp: the catalog procedures generic clients call (decision 1440): sp_help,
// sp_helpindex, sp_statistics and sp_statistics_100 (the form Microsoft's JDBC driver calls for
// getIndexInfo), with the result sets Microsoft documents, and sp_cdc_disable_db.
#pragma once

#include <optional>
#include <vector>

#include "procedures.hpp"

namespace mssqlcdc::tds {

// Runs `call` when it names one of the procedures above (`sp_x`, `sys.sp_x`, `db.sys.sp_x`) and
// returns its result sets; nullopt for any other name. Binds arguments as run_procedure does
// (119, 8144, 8145, 201) and throws Error(Sql) with SQL Server's numbers: 15009 for an object
// sp_help or sp_helpindex cannot find, 15250 for a qualifier naming another database.
[[nodiscard]] std::optional<std::vector<ResultSet>> run_meta_procedure(Storage& storage, const ProcCall& call);

}  // namespace mssqlcdc::tds
