// file_pool.hpp: read connections to emulator files, reused: opening one parses the file's
// whole schema, and the front end reads through one per table it reads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "mssqlcdc/emu/sqlite.hpp"

namespace mssqlcdc::emu {

// The emulator's connection pragmas (synchronous NORMAL, temp store in memory, mmap), which
// every connection of create_file and open_file gets.
void set_pragmas(Db& db);

// A read connection goes back to the process's idle ones when its holder lets it go, unless a
// transaction is still open on it. It remembers the file it has open, by device and inode, and
// the process that opened it (0: never pooled, closed).
struct ReturnToPool {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  long process = 0;
  // Pools `db`, or closes it when it cannot be pooled.
  void operator()(Db* db) const;
};
using PooledDb = std::unique_ptr<Db, ReturnToPool>;

// open_file for reads, from a pool of idle connections: opening one parses the file's whole
// schema (about 7 ms at 500 tables), and the front end opens one per table it reads. A pooled
// connection is reused only for the file it opened, still at `path` (a replaced file gets new
// ones), and only in the process that opened it (a forked child opens its own). At most 8 idle
// connections per file are kept.
PooledDb pooled_file(const std::filesystem::path& path);

}  // namespace mssqlcdc::emu
