// jdbc_metadata.hpp: the catalog procedures JDBC's DatabaseMetaData calls (sp_tables, sp_columns
// and its versioned form sp_columns_100, sp_pkeys), answered from the emulator's object model
// with the result columns Microsoft documents for them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "statements.hpp"

namespace mssqlcdc::emu {
class Reader;
}

namespace mssqlcdc::tds {

// The arguments the three procedures share; an absent one is nullopt. Names are LIKE patterns
// (%, _, [...]) unless `use_pattern` is false.
struct MetadataFilter {
  std::optional<std::string> table_name;
  std::optional<std::string> table_owner;
  std::optional<std::string> table_qualifier;
  std::optional<std::string> column_name;  // sp_columns
  std::optional<std::string> table_type;   // sp_tables: "'TABLE','VIEW'"
  bool use_pattern = true;
};

// sp_tables: TABLE_QUALIFIER, TABLE_OWNER, TABLE_NAME, TABLE_TYPE, REMARKS.
[[nodiscard]] std::vector<ResultSet> sp_tables(emu::Reader& reader, const std::string& database,
                                               const MetadataFilter& filter);

// sp_columns (19 columns) or, with `version_100`, sp_columns_100 (the SS_ columns added in SQL
// Server 2008 before SS_DATA_TYPE), one row per column in ordinal order.
[[nodiscard]] std::vector<ResultSet> sp_columns(emu::Reader& reader, const std::string& database,
                                                const MetadataFilter& filter, bool version_100);

// sp_pkeys: TABLE_QUALIFIER, TABLE_OWNER, TABLE_NAME, COLUMN_NAME, KEY_SEQ, PK_NAME.
[[nodiscard]] std::vector<ResultSet> sp_pkeys(emu::Reader& reader, const std::string& database,
                                              const MetadataFilter& filter);

}  // namespace mssqlcdc::tds
