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

// One registered fault hook and its arguments; which fields count depends on `kind`.
struct Hook {
  std::int64_t id = 0;  // its emu_hooks row, in registration order
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

// The payload of a hook's emu_hooks row (its arguments), and the Hook back from a row's fields;
// decode_hook throws Corrupt for a payload it cannot read.
std::string encode_hook(const Hook& hook);
Hook decode_hook(std::int64_t id, const std::string& kind, const std::string& read_kind, const std::string& payload);

// Registers a hook after checking its arguments: InvalidArgument for a bad read kind, a
// negative after_rows or a commit_before_read without changes; EmuUnknownObject for an unknown
// instance or table.
void register_hook(Engine& engine, const Hook& hook);
// Lists pending hooks, oldest first; clears them all (returns how many). Each opens its own
// transaction on `db`, which must have none open.
std::vector<Hook> pending_hooks(Db& db);
std::int64_t clear_hooks(Db& db);

// Claims (deletes and returns, oldest first) every pending hook of `read_kind` for one read, in
// a write transaction of its own; a read that finds none takes no write lock.
std::vector<Hook> claim_hooks(Db& db, const std::string& read_kind);
// Fires one claimed hook through an Engine of its own on `path`: a commit_before_read commits
// its changes, a cleanup hook runs the instance's cleanup at its mark, others do nothing here.
// Any Error becomes EmuHook; the hook stays consumed.
void fire_hook(const std::filesystem::path& path, const Hook& hook);

// The hooks one read claimed, by when they fire. claim() fires the before-read ones at once, so
// the reader opens its read transaction after them; the reader fires the others at their points.
struct ReadHooks {
  std::vector<Hook> during;  // cleanup_during_read: rows fetched, read transaction ended
  std::vector<Hook> mid;     // cleanup_mid_read: after `after_rows` rows, oldest first
  bool null_row = false;     // inject_null_row: one all-NULL row first

  // Claims the hooks of `read_kind` on a connection of its own and fires the before-read ones.
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
