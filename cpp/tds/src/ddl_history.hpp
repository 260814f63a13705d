// ddl_history.hpp: the cdc.ddl_history system table over TDS (decision 1436).
#pragma once

#include <memory>

#include "objects.hpp"

namespace mssqlcdc::emu {
class Reader;
}  // namespace mssqlcdc::emu

namespace mssqlcdc::tds {

// cdc.ddl_history: one row per DDL change of each capture instance's source table, with
// Microsoft's columns (source_object_id, object_id, required_column_update, ddl_command,
// ddl_lsn, ddl_time), as sys.sp_cdc_get_ddl_history reports them.
[[nodiscard]] std::unique_ptr<Relation> cdc_ddl_history(const ObjectModel& model, emu::Reader& reader);

}  // namespace mssqlcdc::tds
