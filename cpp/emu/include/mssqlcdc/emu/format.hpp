// format.hpp: the emulator file: header (application id "MSCE" and
// format version), catalog tables, settings, and the checks that open performs in order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "mssqlcdc/emu/sqlite.hpp"

namespace mssqlcdc::emu {

// SQLite's application_id and user_version of an emulator file: open_file() refuses other ids
// (EmuFileFormat) and other versions (EmuFormatVersion). Version 2 stores time, datetime2 and
// datetimeoffset in 100-ns ticks where version 1 stored microseconds (decision 1326).
inline constexpr std::int32_t kApplicationId = 0x4D534345;  // "MSCE"
inline constexpr int kFormatVersion = 2;

// The settings a new file starts with.
struct CreateOptions {
  std::int64_t start_micros = 0;      // the clock's floor, UTC
  int retention_minutes = 4320;       // the cleanup job's retention, 1..52494800
  std::string capture = "immediate";  // or "manual": capture runs only when asked
};

// Creates a new file (FileExists if it or a left-over -wal exists, FileNotFound if its folder
// does not) with the header, catalog and settings; removes what it wrote when it fails.
void create_file(const std::filesystem::path& path, const CreateOptions& options);

// Opens an existing file after the open checks (FileNotFound, EmuFileFormat,
// EmuFormatVersion), with the emulator's pragmas set.
std::unique_ptr<Db> open_file(const std::filesystem::path& path);

// emu_meta key/value access; values are text. meta_get gives nothing for a missing key;
// meta_int throws Corrupt for one. Writes need the caller's write transaction.
std::optional<std::string> meta_get(Db& db, const std::string& key);
void meta_set(Db& db, const std::string& key, const std::string& value);
std::int64_t meta_int(Db& db, const std::string& key);

// The catalog version rises with every change of tables, columns, instances or settings, so
// a connection can keep a cache of them and reload it only when another one changed them.
std::int64_t catalog_version(Db& db);
void bump_catalog(Db& db);
// The name of the catalog's committed state: a 128-bit digest of every catalog row, which a
// transaction that bumped the catalog stores just before its commit. Equal tokens mean equal
// catalogs, in any file, so a process may share one load among all its readers (a copy of a
// file that changes apart from it gets its own token), and the same calls still give identical
// files. Empty for a file whose catalog has not changed since a version without tokens made it.
std::string catalog_token(Db& db);

// Settings, stored as text; set_setting validates name and value. Both throw InvalidArgument
// for an unknown name, set_setting also for a bad value.
std::string get_setting(Db& db, const std::string& name);
void set_setting(Db& db, const std::string& name, const std::string& value);

}  // namespace mssqlcdc::emu
