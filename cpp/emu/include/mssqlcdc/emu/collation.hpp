// collation.hpp: the SQL Server collations the emulator models for character columns, and the
// SQLite collating sequences that make a table's key, =, <, ORDER BY and range reads follow
// them. The model (decision 1325): trailing spaces are dropped first (ANSI padding, under every
// collation); a binary (_BIN2) collation then compares code points; the others compare three
// levels in turn: letters without case or accent, then with their accents, then (_CS only) case,
// lower case first.
#pragma once

#include <sqlite3.h>

#include <string>
#include <string_view>
#include <vector>

namespace mssqlcdc::emu {

// One modelled collation. The instances are static; callers hold pointers or references.
class Collation {
 public:
  // The database default: columns without COLLATE get it.
  static const Collation& database_default();
  // The collation named `name` (any letter case), or nullptr when it is not modelled.
  static const Collation* find(std::string_view name);
  // Every modelled collation, in the order error messages list them.
  static const std::vector<const Collation*>& all();
  // The modelled names, comma-separated, for error messages.
  static std::string supported_names();
  // Registers each collation's SQLite collating sequence (sqlite_name()) on `db`; every
  // connection that reads or writes an emulator file's tables needs them.
  static void register_all(sqlite3* db);

  // SQL Server's name, e.g. Latin1_General_CS_AS.
  [[nodiscard]] const std::string& name() const { return name_; }
  // The SQLite collating sequence: "mssql_" and the lower-case name.
  [[nodiscard]] std::string sqlite_name() const;
  [[nodiscard]] bool binary() const { return binary_; }                  // _BIN2
  [[nodiscard]] bool case_sensitive() const { return case_sensitive_; }  // _CS (and _BIN2)

  // Orders two UTF-8 strings: negative, zero or positive.
  [[nodiscard]] int compare(std::string_view a, std::string_view b) const;
  // A byte string whose bytewise order is compare()'s order, and equal exactly when compare()
  // gives zero: for hashing, GROUP BY and DISTINCT.
  [[nodiscard]] std::string sort_key(std::string_view text) const;

  // Made by the static table; not for direct use.
  Collation(std::string name, bool binary, bool case_sensitive)
      : name_(std::move(name)), binary_(binary), case_sensitive_(case_sensitive) {}

 private:
  std::string name_;
  bool binary_;
  bool case_sensitive_;
};

}  // namespace mssqlcdc::emu
