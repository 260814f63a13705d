// pending_rows.hpp: the rows open interleaved transactions leave in source tables, kept in the
// file beside their row locks (row_locks.hpp), so a session's own reads see its uncommitted
// writes (decision 1446) and a READ UNCOMMITTED read sees every open transaction's (decision
// 1447), across connections and processes.
//
// Engine::execute validates a transaction's writes on the source tables and rolls them back;
// before the rollback it reads, for every key the transaction holds, the row as the writes
// left it (or that there is none), and records those rows in emu_pending_rows under the
// transaction's lock owner. They go with its row locks, at commit or rollback. A reader lays
// the rows of the owners it may see over the committed rows of a table. A heap's rows have no
// key and are never recorded: reads of a heap show its committed rows only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mssqlcdc/emu/catalog.hpp"
#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/emu/sqlite.hpp"

namespace mssqlcdc::emu {

// The rows of one table an open transaction's writes leave: the key's identity (pending_key)
// -> the row's stored cells in column order, or nullopt where the writes deleted the row.
using PendingRows = std::map<std::string, std::optional<std::vector<Cell>>>;

// A key's identity: equal exactly when the table's primary key calls two keys equal (text
// compares under its column's collation). `key_cells` are in key order.
[[nodiscard]] std::string pending_key(const Table& t, const std::vector<Cell>& key_cells);

// Inside the write transaction that applied a transaction's writes: for every key of `keys`
// (a heap's rows have no key cells and are left out), the row of `tables` (by object id) with
// that key as it is now, or nullopt. Keyed by table object id.
[[nodiscard]] std::map<std::int64_t, PendingRows> read_after_images(Db& db,
                                                                    const std::map<std::int64_t, const Table*>& tables,
                                                                    const LockedKeys& keys);

// Inside a write transaction: replaces `owner`'s pending rows with `rows` (by table object id).
void record_pending_rows(Db& db, std::int64_t owner, const std::map<std::int64_t, PendingRows>& rows);
// Inside a write transaction: deletes `owner`'s pending rows.
void drop_pending_rows(Db& db, std::int64_t owner);

// In the read transaction open on `db` (the file at `path`): the pending rows of table
// `table_id` a read may see: those of `own` (the reading session's transaction) and, with
// `others`, those of every other owner whose transaction is still open. Where two owners hold
// one key, `own` wins, then the higher owner number.
[[nodiscard]] PendingRows visible_pending_rows(Db& db, const std::filesystem::path& path, std::int64_t table_id,
                                               std::optional<std::int64_t> own, bool others);

// `committed` (rows of `t` in stored cells, column order) with `pending` laid over them: a row
// whose key is pending is replaced by its pending row or dropped, and pending rows whose key
// no committed row has are added; a pending row with another number of columns than `t` (one
// recorded before an ALTER TABLE) is left out. The cursor reads `committed` to its end on the
// first next() and yields every row in key order. `t` must have a primary key.
[[nodiscard]] std::unique_ptr<RowCursor> overlay_rows(std::unique_ptr<RowCursor> committed, const Table& t,
                                                      PendingRows pending);

}  // namespace mssqlcdc::emu
