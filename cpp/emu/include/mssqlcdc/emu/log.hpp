// log.hpp: the emulator's transaction log. The LSN cursor allocates LSNs as SQL Server's log
// does; log records carry the row images that capture turns into
// change rows, kept in memory (immediate mode) or serialized into emu_log (manual mode).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mssqlcdc/emu/sqlite.hpp"
#include "mssqlcdc/lsn.hpp"

namespace mssqlcdc::emu {

// Hands out LSNs in log order, as SQL Server's log does: slots within a block, a new block after
// each commit (skipping further ahead the more records the block held), a new VLF when a block
// number would reach 0x1000. A value type; the writer keeps it in WriteState.
class LsnCursor {
 public:
  // The first LSN of a new file, 0x00000027000000200001.
  static Lsn initial() { return Lsn(0x27, 0x20, 1); }
  // A cursor whose next LSN is `next`, with `records_since_flush` records in the current block.
  static LsnCursor at(const Lsn& next, std::int64_t records_since_flush);
  // The LSN take() returns next, and the records taken since the last flush().
  [[nodiscard]] const Lsn& next() const { return next_; }
  [[nodiscard]] std::int64_t records() const { return records_; }

  Lsn take();    // the next record's LSN
  void flush();  // after a commit or idle record: the next block, slot 1

 private:
  Lsn next_ = initial();
  std::int64_t records_ = 0;  // records since the last flush
};

// Mutable counters of the database: the LSN cursor, last_time, the tran-id and rowversion
// counters. One emu_meta row ("write_state"), loaded at the start of a write transaction and
// stored before its commit, so several writer processes agree.
struct WriteState {
  LsnCursor cursor;
  std::int64_t last_time = 0;  // UTC microseconds
  std::int64_t tran_counter = 0;
  std::int64_t rowversion = 0;

  // Reads the row; throws Corrupt when it is missing or unreadable. Call inside the write
  // transaction that will store() it.
  static WriteState load(Db& db);
  // Writes the row back, in the caller's write transaction.
  void store(Db& db) const;
};

// A row image: (column_id, stored cell) for every column the row had when it was written.
using Image = std::vector<std::pair<std::int64_t, Cell>>;

// One row change of a transaction as the log holds it, with the images capture needs.
struct RowOp {
  enum class Kind : std::uint8_t { Insert, Update, KeyUpdate, Delete };
  Kind kind = Kind::Insert;
  std::int64_t table_id = 0;
  Lsn seqval;                             // the operation's LSN within its transaction
  std::int32_t command_id = 0;            // the first command id; a key update takes this and the next
  Image before;                           // update and delete: the row before
  Image after;                            // insert and update: the row after
  std::vector<std::int64_t> set_columns;  // update: the columns of the SET list
};

// One entry of the log: a committed transaction, a DDL, an idle entry or a manual-mode enable.
struct LogRecord {
  // Enable: a manual-mode enable_cdc at its create LSN; capturing it establishes the instance.
  enum class Kind : std::uint8_t { Txn, Ddl, Idle, Enable };
  Kind kind = Kind::Txn;
  Lsn begin_lsn;
  Lsn commit_lsn;               // the record's LSN in cdc.lsn_time_mapping
  std::string tran_id;          // 10 bytes
  std::int64_t begin_time = 0;  // UTC microseconds
  std::int64_t end_time = 0;    // UTC microseconds
  std::vector<RowOp> ops;       // Txn
  // Ddl (Enable: the change table's object id)
  std::int64_t table_id = 0;
  std::string ddl_kind;  // add, drop, alter
  std::string column;
  std::int64_t column_id = 0;
  std::string new_type;
  std::string ddl_command;

  [[nodiscard]] std::string payload() const;  // the serialized ops or DDL
  // Reads an emu_log row: commit_lsn, kind, begin_lsn, tran_id, times, payload. Throws Corrupt
  // for a payload it cannot read.
  static LogRecord from_row(Stmt& row);
};

// "0x" + 2..20 hex digits (even count, either case) right-padded with zero bytes as SQL Server
// pads binary(10); throws InvalidArgument naming `what`.
Lsn parse_lsn_arg(std::string_view text, std::string_view what);

// An LSN as stored in the file: its 10 bytes (binary(10)), so blob order is LSN order.
inline std::string lsn_blob(const Lsn& l) {
  return std::string(reinterpret_cast<const char*>(l.bytes().data()), Lsn::kBytes);
}
// The reverse: the first 10 bytes of `blob`, zero-padded when shorter. Never throws.
Lsn lsn_from_blob(std::string_view blob);

// A 10-byte tran_id: four zero bytes and a 6-byte big-endian counter; zeros for an idle entry.
std::string tran_id_bytes(std::int64_t counter);

}  // namespace mssqlcdc::emu
