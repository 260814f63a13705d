// nullability.cpp: the NULL / NOT NULL clause of a type string, its emu_meta row and error 515.
#include "nullability.hpp"

#include <cctype>

#include "ascii.hpp"
#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

std::string key(std::int64_t table_id, std::int64_t column_id) {
  return "not_null." + std::to_string(table_id) + "." + std::to_string(column_id);
}

bool ends_with_word(const std::string& low, const std::string& word) {
  if (low.size() < word.size() || low.compare(low.size() - word.size(), word.size(), word) != 0) return false;
  // "int NULL" ends with the word; "nvarchar(8)NULL" does not name a type SQL Server takes either.
  return low.size() == word.size() || std::isspace(static_cast<unsigned char>(low[low.size() - word.size() - 1]));
}

void trim_right(std::string& s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
}

}  // namespace

std::optional<bool> split_nullability(std::string& type_text) {
  trim_right(type_text);
  const std::string low = ascii_lower(type_text);
  if (!ends_with_word(low, "null")) return std::nullopt;
  std::string rest = type_text.substr(0, type_text.size() - 4);
  trim_right(rest);
  std::string rest_low = low.substr(0, rest.size());
  if (ends_with_word(rest_low, "not")) {
    rest = rest.substr(0, rest.size() - 3);
    trim_right(rest);
    type_text = rest;
    return true;
  }
  type_text = rest;
  return false;
}

void store_not_null(Db& db, std::int64_t table_id, std::int64_t column_id, bool not_null) {
  if (not_null) {
    meta_set(db, key(table_id, column_id), "1");
  } else {
    db.prepare("DELETE FROM emu_meta WHERE key = ?").bind(1, key(table_id, column_id)).run();
  }
}

bool load_not_null(Db& db, std::int64_t table_id, std::int64_t column_id) {
  return meta_get(db, key(table_id, column_id)).has_value();
}

std::string not_null_message(const Table& t, const std::string& column, const std::string& database,
                             const std::string& verb) {
  return "Cannot insert the value NULL into column '" + column + "', table '" + database + "." + t.schema + "." +
         t.name + "'; column does not allow nulls. " + verb + " fails.";
}

void check_not_null(const Table& t, const Image& row, const std::string& database, const std::string& verb) {
  for (const auto& [column_id, cell] : row) {
    if (cell.type != Cell::Type::Null) continue;
    const Column* c = t.by_id(column_id);
    if (c == nullptr || c->nullable || c->key_ordinal > 0) continue;
    throw Error(ErrorKind::EmuConstraint,
                t.full_name() + ": " + not_null_message(t, c->name, database, verb) + " (error 515); give " + c->name +
                    " a value, or alter the column to NULL",
                515);
  }
}

}  // namespace mssqlcdc::emu
