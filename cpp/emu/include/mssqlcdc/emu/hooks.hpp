// hooks.hpp: fault hooks. A hook is a row in emu_hooks, so it fires in
// whichever process reads next; the first read of its kind claims it with DELETE ... RETURNING
// in a short write transaction, so of concurrent readers exactly one fires it. The reads that
// claim them: Reader::read_changes and read_table in process (scan.cpp), and the row reads the
// TDS front end serves from change tables and captured tables (rows.cpp, decision 0760).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/emu/sqlite.hpp"

namespace mssqlcdc::emu {

struct Hook {
  std::int64_t id = 0;
  std::string kind;  // commit_before_read, cleanup_before_read, cleanup_during_read, cleanup_mid_read, inject_null_row
  std::string read_kind;  // changes, table
  // cleanup hooks
  std::string capture_instance;
  Lsn mark;
  std::int64_t after_rows = 0;
  // commit_before_read
  std::vector<Change> changes;
  std::optional<Micros> at;
};

std::string encode_hook(const Hook& hook);
Hook decode_hook(std::int64_t id, const std::string& kind, const std::string& read_kind, const std::string& payload);

// Registers a hook after checking its arguments (unknown instance, bad kind).
void register_hook(Engine& engine, const Hook& hook);
// Lists pending hooks, oldest first; clears them all (returns how many).
std::vector<Hook> pending_hooks(Db& db);
std::int64_t clear_hooks(Db& db);

// Claims every pending hook of `read_kind` for one read.
std::vector<Hook> claim_hooks(Db& db, const std::string& read_kind);
// Fires one claimed hook through a separate connection; failures become EmuHook.
void fire_hook(const std::filesystem::path& path, const Hook& hook);

// The hooks one read claimed, by when they fire. claim() fires the before-read ones at once, so
// the reader opens its read transaction after them; the reader fires the others at their points.
struct ReadHooks {
  std::vector<Hook> during;  // cleanup_during_read: rows fetched, read transaction ended
  std::vector<Hook> mid;     // cleanup_mid_read: after `after_rows` rows, oldest first
  bool null_row = false;     // inject_null_row: one all-NULL row first

  static ReadHooks claim(const std::filesystem::path& path, const std::string& read_kind);
  // Whether the next mid-read hook is due once `seen` rows were read.
  [[nodiscard]] bool mid_due(std::int64_t seen) const { return !mid.empty() && seen >= mid.front().after_rows; }
  // Fires the next mid-read hook; returns the low water mark of instance `object_id` after it,
  // read on a connection of its own (the reader's transaction still sees the deleted rows).
  std::optional<Lsn> fire_mid(const std::filesystem::path& path, std::int64_t object_id);
  // Fires the during-read hooks, once.
  void fire_during(const std::filesystem::path& path);
};

}  // namespace mssqlcdc::emu
