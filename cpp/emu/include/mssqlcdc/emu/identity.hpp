// identity.hpp: identity columns (IDENTITY(seed, increment) of SQL Server's CREATE TABLE). The
// definition and the last value given out live in emu_meta, keyed by the table's object id, so
// files made before identity columns existed read unchanged (decision 1220).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mssqlcdc/emu/sqlite.hpp"
#include "mssqlcdc/emu/types.hpp"

namespace mssqlcdc::emu {

// An identity column's definition: which column, its seed and its increment.
struct Identity {
  std::int64_t column_id = 0;
  std::int64_t seed = 1;
  std::int64_t increment = 1;
};

// Splits a create_table type string such as "int identity(100, 10)" into the type text and the
// identity clause; `type_text` keeps what precedes the clause. nullopt when there is none;
// throws EmuSchema for a malformed clause (the message names `what`).
std::optional<Identity> split_identity(std::string& type_text, const std::string& what);

// Checks that an identity column of `type` can hold seed and increment (SQL Server's 2749 for
// a type that cannot be an identity); throws EmuSchema.
void check_identity(const Identity& identity, const SqlType& type, const std::string& what);

// Stores the table's identity definition, in the caller's write transaction; load_identity
// reads it back (nothing when the table has none; Corrupt for a malformed row).
void store_identity(Db& db, std::int64_t table_id, const Identity& identity);
std::optional<Identity> load_identity(Db& db, std::int64_t table_id);

// The value the next insert takes (seed first, then the last value plus the increment), stored
// as the last value in the caller's write transaction; 8115 past the range of `type`.
std::int64_t next_identity(Db& db, std::int64_t table_id, const Identity& identity, const SqlType& type,
                           const std::string& what);

}  // namespace mssqlcdc::emu
