// catalog_stats.hpp: a primary key's statistics as SQL Server shows them (decision 1448): the
// sys.stats view and the sys.dm_db_stats_histogram and sys.dm_db_stats_properties functions.
// range_high_key comes in the leading key column's own type: the front end has no sql_variant,
// and a CAST or CONVERT of it reads as on SQL Server.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "relations.hpp"

namespace mssqlcdc::emu {
class Reader;
}

namespace mssqlcdc::tds {

class ObjectModel;

// sys.stats: one row per user table with a primary key, for the key's index (stats_id 1, the
// index's id, named as the index), whether or not its statistics were built yet.
[[nodiscard]] std::unique_ptr<Relation> sys_stats(const ObjectModel& model);

// sys.dm_db_stats_histogram(object_id, stats_id) and sys.dm_db_stats_properties(object_id,
// stats_id), `fn` lower-case with its schema; nullptr when `fn` is neither. Reading builds missing
// or stale statistics first, as AUTO_UPDATE_STATISTICS (emu::Reader::statistics). No rows for an
// object or stats id that has none. Throws Error(Sql) 174 for a wrong argument count.
[[nodiscard]] std::unique_ptr<Relation> stats_function(const ObjectModel& model, emu::Reader& reader,
                                                       const std::string& fn, const std::vector<TypedValue>& args);

}  // namespace mssqlcdc::tds
