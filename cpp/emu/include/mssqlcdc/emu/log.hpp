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

class LsnCursor {
 public:
  static Lsn initial() { return Lsn(0x27, 0x20, 1); }
  static LsnCursor at(const Lsn& next, std::int64_t records_since_flush);
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

  static WriteState load(Db& db);
  void store(Db& db) const;
};

// A row image: (column_id, stored cell) for every column the row had when it was written.
using Image = std::vector<std::pair<std::int64_t, Cell>>;

struct RowOp {
  enum class Kind : std::uint8_t { Insert, Update, KeyUpdate, Delete };
  Kind kind = Kind::Insert;
  std::int64_t table_id = 0;
  Lsn seqval;
  std::int32_t command_id = 0;  // the first command id; a key update takes this and the next
  Image before;
  Image after;
  std::vector<std::int64_t> set_columns;  // update: the columns of the SET list
};

struct LogRecord {
  // Enable: a manual-mode enable_cdc at its create LSN; capturing it establishes the instance.
  enum class Kind : std::uint8_t { Txn, Ddl, Idle, Enable };
  Kind kind = Kind::Txn;
  Lsn begin_lsn;
  Lsn commit_lsn;
  std::string tran_id;  // 10 bytes
  std::int64_t begin_time = 0;
  std::int64_t end_time = 0;
  std::vector<RowOp> ops;  // Txn
  // Ddl (Enable: the change table's object id)
  std::int64_t table_id = 0;
  std::string ddl_kind;  // add, drop, alter
  std::string column;
  std::int64_t column_id = 0;
  std::string new_type;
  std::string ddl_command;

  [[nodiscard]] std::string payload() const;  // the serialized ops or DDL
  static LogRecord from_row(Stmt& row);       // an emu_log row: commit_lsn, kind, begin_lsn, tran_id, times, payload
};

// "0x" + 2..20 hex digits (even count, either case) right-padded with zero bytes as SQL Server
// pads binary(10); throws InvalidArgument naming `what`.
Lsn parse_lsn_arg(std::string_view text, std::string_view what);

inline std::string lsn_blob(const Lsn& l) {
  return std::string(reinterpret_cast<const char*>(l.bytes().data()), Lsn::kBytes);
}
Lsn lsn_from_blob(std::string_view blob);

// A 10-byte tran_id: four zero bytes and a 6-byte big-endian counter; zeros for an idle entry.
std::string tran_id_bytes(std::int64_t counter);

}  // namespace mssqlcdc::emu
