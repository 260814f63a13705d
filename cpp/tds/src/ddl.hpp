// ddl.hpp: CREATE TABLE, ALTER TABLE ... ADD / DROP COLUMN / ALTER COLUMN, DROP TABLE,
// TRUNCATE TABLE and CREATE [UNIQUE] INDEX over the wire, with CDC's rules (decision 1436):
// an ALTER of a captured table records cdc.ddl_history through the emulator's schema changes,
// TRUNCATE of a captured table fails with 4711, DROP TABLE drops the table's capture instances
// with it; and sp_cdc_enable_table's argument checks SQL Server makes before enabling.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "procedures.hpp"

namespace mssqlcdc::tds {

struct SqlToken;

// Whether `tokens` is a statement run_ddl runs (CREATE TABLE / [UNIQUE] INDEX, ALTER TABLE,
// DROP TABLE, TRUNCATE TABLE, UPDATE STATISTICS).
[[nodiscard]] bool is_ddl_statement(const std::vector<SqlToken>& tokens);

// Runs one DDL statement; each is its own emulator commit, also inside an open transaction.
// Throws SQL Server's errors: 102/156 for syntax, 2714, 3701, 4701, 4711, 4902, 4924, 1911,
// 1913, and 50000 for a clause the emulator does not model (DEFAULT, FOREIGN KEY, CHECK).
void run_ddl(Storage& storage, const std::vector<SqlToken>& tokens, const std::string& database);

// sp_cdc_enable_table's checks before it enables: 22939 for @supports_net_changes = 1 without a
// primary key or @index_name, 22928/22929 for an @index_name that is no (unique) index of the
// table, 22930 for a @captured_column_list name that is no column, 22943 for a list without
// the key columns. `supports_net_changes` is the argument (nothing when not passed).
void check_enable_table(Storage& storage, const std::string& schema, const std::string& name,
                        std::optional<bool> supports_net_changes, const std::optional<std::string>& index_name,
                        const std::optional<std::vector<std::string>>& captured_columns);

}  // namespace mssqlcdc::tds
