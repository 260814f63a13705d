// hooks.hpp: fault hooks (spec 40, section 3.8). A hook is a row in emu_hooks, so it fires in
// whichever process reads next; the first read of its kind claims it with DELETE ... RETURNING
// in a short write transaction, so of concurrent readers exactly one fires it.
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

}  // namespace mssqlcdc::emu
