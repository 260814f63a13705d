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

// A column of a source table.
struct Column {
  std::int64_t column_id = 0;  // 1-based; an added column takes the largest id + 1
  std::string name;
  SqlType type;
  int key_ordinal = 0;  // 1-based position in the primary key; 0 for other columns
  bool is_identity = false;
  bool nullable = true;                        // false for key, identity and NOT NULL columns (nullability.hpp)
  std::shared_ptr<const Expression> computed;  // set for a computed column
};

// A source table as stored: its columns, key and identity. A value: loading it again sees
// later DDL, this copy does not.
struct Table {
  std::int64_t object_id = 0;
  std::string schema;
  std::string name;
  bool heap = false;                 // no primary key; rows are ordered by insertion
  std::vector<Column> columns;       // in column_id order
  std::optional<Identity> identity;  // at most one identity column per table

  [[nodiscard]] std::string full_name() const { return schema + "." + name; }  // dbo.orders
  // The quoted name of the SQLite table that holds the rows.
  [[nodiscard]] std::string storage() const { return quote_ident(full_name()); }
  // Lookups; the pointers point into `columns` and are null when there is no such column.
  [[nodiscard]] std::vector<const Column*> key() const;             // in key order
  [[nodiscard]] const Column* find(std::string_view column) const;  // case-insensitive
  [[nodiscard]] const Column* by_id(std::int64_t column_id) const;
  [[nodiscard]] std::string column_list() const;  // for messages
};

// A column a capture instance captures, as cdc.captured_columns holds it.
struct CapturedColumn {
  std::string name;
  std::int64_t column_id = 0;  // the source column's id
  int ordinal = 0;             // 1-based position among the captured columns
  SqlType type;
  bool present = true;       // false once capture applied a DROP COLUMN of it; change rows hold NULL
  bool is_computed = false;  // always NULL in change rows
};

// A change row's __$operation, stored as the integer SQL Server stores.
enum class Operation : std::int32_t { Delete = 1, Insert = 2, UpdateBefore = 3, UpdateAfter = 4 };

// A capture instance as cdc.change_tables holds it, with its captured columns.
struct Instance {
  std::int64_t object_id = 0;  // the change table's object id
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
  bool has_command_id = true;              // the change table has __$command_id
  std::vector<CapturedColumn> columns;     // by ordinal
  std::vector<std::string> index_columns;  // the key columns, in key order

  // The quoted name of the SQLite table that holds the change rows, "cdc.<name>_CT".
  [[nodiscard]] std::string change_table() const { return quote_ident("cdc." + name + "_CT"); }
  // The captured column of that name (case-insensitive), or null.
  [[nodiscard]] const CapturedColumn* find(std::string_view column) const;
};

// Whether `a` and `b` are equal ignoring ASCII case.
bool iequals(std::string_view a, std::string_view b);
// Validates an identifier ([A-Za-z_][A-Za-z0-9_]*, at most `limit` characters); throws
// EmuSchema naming `what` otherwise.
void check_identifier(std::string_view name, std::string_view what, std::size_t limit = 128);
// Splits "schema.table" (bare "table" means dbo); throws EmuSchema for a bad name.
std::pair<std::string, std::string> split_table_name(std::string_view name);

// Catalog lookups on `db`, which the caller keeps in a transaction when several must agree.
// Table names are "schema.table" or "table" (dbo); a malformed name throws EmuSchema.
// The table of that name (case-insensitive), or nothing.
std::optional<Table> find_table(Db& db, std::string_view name);
Table load_table(Db& db, std::string_view name);  // EmuUnknownObject listing the tables
// The table with that object id; Corrupt when there is none (ids come from the catalog).
Table load_table_by_id(Db& db, std::int64_t object_id);
// Every table's schema.name, sorted.
std::vector<std::string> table_names(Db& db);

// The capture instance of that name (case-insensitive, trailing spaces ignored as sysname
// comparison does), or nothing.
std::optional<Instance> find_instance(Db& db, std::string_view name);
Instance load_instance(Db& db, std::string_view name);              // EmuUnknownObject (208)
std::vector<Instance> instances_of(Db& db, std::int64_t table_id);  // oldest first
// An index of a table as CREATE INDEX recorded it, or its primary key's (named PK_<table>).
struct IndexInfo {
  std::string name;
  bool unique = false;
  bool primary_key = false;
  std::vector<std::string> columns;  // in index order
};
// The index `name` (any case) of `table`, or nothing (drop.cpp).
std::optional<IndexInfo> find_index(Db& db, const Table& table, std::string_view name);

}  // namespace mssqlcdc::emu
