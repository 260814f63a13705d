// catalog.hpp: tables, columns and capture instances as stored in the emulator file, resolved
// case-insensitively as under SQL Server's default collation while keeping their spelling.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mssqlcdc/emu/computed.hpp"
#include "mssqlcdc/emu/identity.hpp"
#include "mssqlcdc/emu/sqlite.hpp"
#include "mssqlcdc/emu/types.hpp"
#include "mssqlcdc/lsn.hpp"

namespace mssqlcdc::emu {

struct Column {
  std::int64_t column_id = 0;
  std::string name;
  SqlType type;
  int key_ordinal = 0;  // 1-based position in the primary key; 0 for other columns
  bool is_identity = false;
  bool nullable = true;                        // false for key, identity and NOT NULL columns (nullability.hpp)
  std::shared_ptr<const Expression> computed;  // set for a computed column
};

struct Table {
  std::int64_t object_id = 0;
  std::string schema;
  std::string name;
  bool heap = false;
  std::vector<Column> columns;       // in column_id order
  std::optional<Identity> identity;  // at most one identity column per table

  [[nodiscard]] std::string full_name() const { return schema + "." + name; }  // dbo.orders
  [[nodiscard]] std::string storage() const { return quote_ident(full_name()); }
  [[nodiscard]] std::vector<const Column*> key() const;             // in key order
  [[nodiscard]] const Column* find(std::string_view column) const;  // case-insensitive
  [[nodiscard]] const Column* by_id(std::int64_t column_id) const;
  [[nodiscard]] std::string column_list() const;  // for messages
};

struct CapturedColumn {
  std::string name;
  std::int64_t column_id = 0;
  int ordinal = 0;
  SqlType type;
  bool present = true;
  bool is_computed = false;  // always NULL in change rows
};

// A change row's __$operation, stored as the integer SQL Server stores.
enum class Operation : std::int32_t { Delete = 1, Insert = 2, UpdateBefore = 3, UpdateAfter = 4 };

struct Instance {
  std::int64_t object_id = 0;
  std::string name;
  std::int64_t source_object_id = 0;
  Lsn start_lsn;  // the low water mark, stored from the enable on
  Lsn create_lsn;
  // Whether capture has reached the enable point: false while a manual-mode enable waits in the
  // log. Until then SQL Server shows start_lsn as NULL (cdc.change_tables: "NULL = the low
  // endpoint has not been established").
  bool established = true;
  std::int64_t create_date = 0;  // server-local
  std::int64_t create_date_utc = 0;
  bool has_command_id = true;
  std::vector<CapturedColumn> columns;  // by ordinal
  std::vector<std::string> index_columns;

  [[nodiscard]] std::string change_table() const { return quote_ident("cdc." + name + "_CT"); }
  [[nodiscard]] const CapturedColumn* find(std::string_view column) const;
};

bool iequals(std::string_view a, std::string_view b);
// Validates an identifier ([A-Za-z_][A-Za-z0-9_]*, at most `limit` characters).
void check_identifier(std::string_view name, std::string_view what, std::size_t limit = 128);
// Splits "schema.table" (bare "table" means dbo); throws EmuSchema for a bad name.
std::pair<std::string, std::string> split_table_name(std::string_view name);

std::optional<Table> find_table(Db& db, std::string_view name);
Table load_table(Db& db, std::string_view name);  // EmuUnknownObject listing the tables
Table load_table_by_id(Db& db, std::int64_t object_id);
std::vector<std::string> table_names(Db& db);

std::optional<Instance> find_instance(Db& db, std::string_view name);
Instance load_instance(Db& db, std::string_view name);              // EmuUnknownObject (208)
std::vector<Instance> instances_of(Db& db, std::int64_t table_id);  // oldest first

}  // namespace mssqlcdc::emu
