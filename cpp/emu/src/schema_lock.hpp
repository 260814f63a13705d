// schema_lock.hpp: SQL Server's schema locks on a capture instance, across threads and
// processes. A read of an instance's changes (read_changes, a served change-table read) holds a
// shared lock (Sch-S) while it streams; disable_cdc and alter_column (which alters the change
// tables too) take it exclusively (Sch-M), so they wait for those readers. A wait longer than the lock timeout (the
// lock_timeout_ms setting, -1 for no limit) throws EmuBusy with SQL Server's error 1222 (decision 1160).
//
// The locks are Linux open-file-description locks on one byte per instance (its object id) of
// the file `<database>-locks`. They conflict between two handles of one process as between two
// processes, and a crashed process drops its own. They never touch the database file, whose
// POSIX locks SQLite owns: closing any handle on that file would drop SQLite's locks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

namespace mssqlcdc::emu {

class SchemaLock {
 public:
  enum class Mode : std::uint8_t { Shared, Exclusive };

  SchemaLock() = default;  // holds nothing
  // Waits up to `timeout_ms` (-1: without end, 0: not at all) for the lock on `object_id`.
  SchemaLock(const std::filesystem::path& database, std::int64_t object_id, Mode mode, std::int64_t timeout_ms);
  // The lock on byte `object_id` when it is free now, else nothing; it never waits.
  static std::optional<SchemaLock> try_take(const std::filesystem::path& database, std::int64_t object_id, Mode mode);
  SchemaLock(const SchemaLock&) = delete;
  SchemaLock& operator=(const SchemaLock&) = delete;
  SchemaLock(SchemaLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  SchemaLock& operator=(SchemaLock&& other) noexcept;
  ~SchemaLock() { release(); }

  void release() noexcept;  // closing the descriptor drops the lock
  [[nodiscard]] bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

class Db;
// The lock_timeout_ms setting, read on `db`: how long DDL and reads wait for a schema lock.
std::int64_t lock_timeout_ms(Db& db);

}  // namespace mssqlcdc::emu
