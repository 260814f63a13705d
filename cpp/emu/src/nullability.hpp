// nullability.hpp: NULL / NOT NULL columns. A column's NOT NULL lives in emu_meta as
// `not_null.<object_id>.<column_id>`, so files made before nullability existed read unchanged
// and every column of them is nullable except the key (decision 1260).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mssqlcdc/emu/catalog.hpp"
#include "mssqlcdc/emu/log.hpp"
#include "mssqlcdc/emu/sqlite.hpp"

namespace mssqlcdc::emu {

// Splits a trailing "NULL" or "NOT NULL" off a type string such as "int NOT NULL"; true for NOT
// NULL, false for NULL, nullopt when the string names neither. `type_text` keeps the rest.
std::optional<bool> split_nullability(std::string& type_text);

void store_not_null(Db& db, std::int64_t table_id, std::int64_t column_id, bool not_null);
bool load_not_null(Db& db, std::int64_t table_id, std::int64_t column_id);

// SQL Server's error 515 for a NULL in a NOT NULL column of a row about to be stored; `verb` is
// INSERT or UPDATE, as the message ends. Key columns keep their own check (dml.cpp).
void check_not_null(const Table& t, const Image& row, const std::string& database, const std::string& verb);

// The text of error 515 without its number, as SQL Server prints it.
std::string not_null_message(const Table& t, const std::string& column, const std::string& database,
                             const std::string& verb);

}  // namespace mssqlcdc::emu
