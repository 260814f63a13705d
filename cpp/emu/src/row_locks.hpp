// row_locks.hpp: the row locks of open interleaved transactions, seen by every connection and
// process of one file (decision 1335). SQL Server holds an exclusive lock on every row a
// transaction changes until it ends; a READ COMMITTED read that meets one waits, up to its
// lock timeout (error 1222), and a SNAPSHOT read returns the last committed version at once.
//
// Engine::execute records the primary key of every row its transaction changes in the table
// emu_row_locks, under an owner number. The owner holds an open-file-description write lock on
// byte kOwnerBase + owner of `<database>-locks` (schema_lock.hpp) until it commits or rolls
// back, and deletes its rows before letting go. A row whose owner's byte is free belongs to a
// transaction that ended or to a process that died: it blocks nothing, and the next begin()
// deletes it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/emu/sqlite.hpp"
#include "schema_lock.hpp"

namespace mssqlcdc::emu {

// Owner bytes start here, far above every object id, whose bytes the schema locks use.
inline constexpr std::int64_t kOwnerBase = std::int64_t{1} << 40;

// One open transaction's hold on its owner byte; released when destroyed.
class OwnerLock {
 public:
  // Takes the byte of `owner`, a number new_lock_owner() gave out (so nothing else holds it).
  OwnerLock(const std::filesystem::path& database, std::int64_t owner);
  // The owner number its rows of emu_row_locks carry.
  [[nodiscard]] std::int64_t owner() const { return owner_; }

 private:
  SchemaLock lock_;
  std::int64_t owner_ = 0;
};

// Inside a write transaction: creates emu_row_locks when an older file has none, deletes the
// rows of owners that no longer hold their byte, and returns a new owner number.
std::int64_t new_lock_owner(Db& db, const std::filesystem::path& database);
// Inside a write transaction: replaces `owner`'s rows with `keys`.
void record_row_locks(Db& db, std::int64_t owner, const LockedKeys& keys);
// Inside a write transaction: deletes `owner`'s rows, and its pending rows (pending_rows.hpp).
void drop_row_locks(Db& db, std::int64_t owner);
// Whether lock owner `owner` of the file at `path` still holds its byte: its transaction is open.
bool lock_owner_alive(const std::filesystem::path& path, std::int64_t owner);
// Cells as bytes (a type byte, then 8 bytes or a length and the bytes), and back; decoding
// throws Corrupt for bytes it did not write.
std::string encode_cells(const std::vector<Cell>& cells);
std::vector<Cell> decode_cells(const std::string& in);
// -1, 0 or 1: `a` against `b` in the order keys sort in (NULL, numbers, text, bytes); text by
// `collation` when given, else bytewise (SQLite's BINARY collation).
int compare_cells(const Cell& a, const Cell& b, const Collation* collation = nullptr);

// The keys a read touches, on the table's primary key: `whole` for every row; else the keys
// between `lo` and `hi` (each open when absent), compared on as many leading key columns as
// the bound has cells.
struct LockRange {
  bool whole = true;
  std::optional<std::vector<Cell>> lo;
  bool lo_inclusive = true;
  std::optional<std::vector<Cell>> hi;
  bool hi_inclusive = false;
};

// Before a source-table read at `level` of table `table_id` (`table` names it in messages):
// READ COMMITTED (and the stricter levels) waits until no live open transaction holds a key in
// `range`, up to `timeout_ms` (-1: without end), then throws EmuBusy with error 1222; SNAPSHOT
// throws EmuArgument 3952 naming `database` unless the allow_snapshot_isolation setting is on;
// READ UNCOMMITTED passes. Runs its own read transactions on `db`, or inside the one open when
// `in_txn`. The rows of `own_owner` (the reading session's own transaction) block nothing.
void before_source_read(Db& db, const std::filesystem::path& path, Isolation level, std::int64_t table_id,
                        const std::string& table, const LockRange& range, std::int64_t timeout_ms,
                        const std::string& database, bool in_txn, std::optional<std::int64_t> own_owner = std::nullopt);

}  // namespace mssqlcdc::emu
