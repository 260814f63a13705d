// reader.hpp: the read interface the Spark source plans and reads with.
// Every call is ONE read transaction (or joins the open snapshot()), so it sees whole commits,
// capture cycles and DDL only. The two data reads return Arrow C streams that own their own
// connection and read transaction, which ends when the stream is exhausted or released; a
// stream holds at most one batch (batch_rows / batch_bytes) in memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mssqlcdc/emu/arrow.hpp"
#include "mssqlcdc/emu/catalog.hpp"
#include "mssqlcdc/emu/clock.hpp"
#include "mssqlcdc/emu/sqlite.hpp"
#include "mssqlcdc/lsn.hpp"

namespace mssqlcdc::emu {

enum class Relation { LargestLessThan, LargestLessOrEqual, SmallestGreaterThan, SmallestGreaterOrEqual };

struct MinLsn {
  enum class State { Value, Unknown, NotEstablished };
  State state = State::Unknown;
  Lsn lsn;  // the low water mark for Value; zeros for Unknown
};

struct Tile {
  Lsn last;
  std::int64_t rows = 0;
};

struct ChangeReadOptions {
  std::optional<std::vector<std::string>> columns;  // captured names in the order asked; default all
  bool include_command_id = true;
  bool include_update_mask = false;
  std::string row_filter = "all update old";
  std::int64_t batch_rows = 65536;
  std::int64_t batch_bytes = 64LL << 20;
  bool binary_lsn = false;
  bool fire_hooks = true;  // false for inspection (change_rows), which never fires hooks
  bool raw_names = false;  // change_rows: every change-table column under its SQL Server name
};

using Key = std::vector<Value>;  // one value per key column, in key order

struct KeyRange {
  std::optional<Key> lo;  // inclusive
  std::optional<Key> hi;  // exclusive
};

struct TableReadOptions {
  std::optional<std::vector<std::string>> columns;
  std::optional<std::vector<std::string>> key_columns;
  std::int64_t batch_rows = 65536;
  std::int64_t batch_bytes = 64LL << 20;
  bool fire_hooks = true;
};

// Times are server-local, as SQL Server stores them; the _utc twins serve the Emulator face.
struct DdlEntry {
  Lsn ddl_lsn;
  Micros ddl_time = 0;
  Micros ddl_time_utc = 0;
  std::string ddl_command;
  bool required_column_update = false;
  std::string kind;
  std::string column;
  std::optional<std::string> new_type;
};

struct InstanceInfo {
  std::string name;
  std::string table;
  Lsn start_lsn;            // the stored low water mark
  bool established = true;  // false: SQL Server shows start_lsn as NULL (catalog.hpp)
  Lsn create_lsn;
  Micros create_date = 0;
  Micros create_date_utc = 0;
  bool has_command_id = true;
  std::vector<std::string> index_columns;
};

struct ColumnInfo {
  std::string name;
  std::int64_t column_id = 0;
  int ordinal = 0;  // captured ordinal; key ordinal for table_info
  std::string sql_type;
  std::string arrow_type;
  bool present = true;
  bool is_identity = false;  // table_info only
  bool is_computed = false;
  bool is_nullable = true;  // table_info only
};

struct TableInfo {
  std::string name;
  std::vector<ColumnInfo> columns;
  std::vector<std::string> key_columns;
  std::int64_t row_count = 0;
};

struct KeyExtent {
  Key min;
  Key max;
  std::int64_t rows = 0;
};

struct Bucket {
  __int128 lo = 0;
  __int128 hi = 0;
  std::int64_t rows = 0;
};

struct Entry {
  Lsn start_lsn;
  Micros begin_time = 0;
  Micros end_time = 0;
  std::string tran_id;
  Lsn tran_begin_lsn;
  Micros begin_utc = 0;
  Micros end_utc = 0;
};

// A forward-only cursor over stored rows, for the TDS front end: it owns its connection and
// read transaction and holds one row; the transaction ends when it is exhausted or destroyed.
class RowCursor {
 public:
  virtual ~RowCursor() = default;
  virtual bool next(std::vector<Cell>& row) = 0;  // false at the end
  // Whether the read claimed inject_null_row: its consumer shows one all-NULL row first. The
  // cursor does not yield it, since the consumer's own filter (a WHERE) would drop it.
  [[nodiscard]] virtual bool null_row_first() const { return false; }
};

// Stored-cell bounds on the column a cursor is ordered by; open where nullopt.
struct CellBound {
  Cell value;
  bool inclusive = true;
};
struct CellRange {
  std::optional<CellBound> lo;
  std::optional<CellBound> hi;
};

// Every table and capture instance, read in one transaction.
struct Objects {
  std::vector<Table> tables;
  std::vector<Instance> instances;
};

class Reader {
 public:
  explicit Reader(std::filesystem::path file);
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  ~Reader();

  // Reads as a database user from now on (permissions.hpp); nothing is dbo, the default. An
  // unknown user is EmuUnknownObject 15151 when `strict`, else dbo (a TDS login that is no
  // user). `database` names the database in error 229's text (default: the file's stem).
  void act_as(std::optional<std::string> user, std::optional<std::string> database, bool strict = true);
  [[nodiscard]] const std::optional<std::string>& user() const { return user_; }
  // Whether the user may read instance `ci`'s change data; true for an unknown `ci`.
  bool may_read(std::string_view ci);
  // Error 229 naming the object `prefix` + the instance's name + `suffix` when the user may not
  // read instance `ci`; an unknown `ci` passes, so the read that follows reports it (208).
  void check_read(std::string_view ci, std::string_view prefix, std::string_view suffix = "");

  // Groups metadata calls in one read transaction until end_snapshot().
  void begin_snapshot();
  void end_snapshot();
  [[nodiscard]] bool in_snapshot() const { return snapshot_ != nullptr; }

  std::optional<Lsn> max_lsn();
  std::optional<Lsn> max_commit_lsn();
  MinLsn min_lsn(std::string_view ci);
  std::optional<Micros> lsn_to_time(const Lsn& lsn);  // that entry's local time
  std::optional<Micros> lsn_to_utc(const Lsn& lsn);   // the same entry's UTC time
  // The commit time of an LSN as the library defines it: the local time of the
  // newest entry at or below `lsn` (idle entries count), or nothing when there is none.
  std::optional<Micros> time_at_or_below(const Lsn& lsn);
  std::optional<Lsn> time_to_lsn(Relation rel, Micros t);
  std::optional<Lsn> nth_commit_after(const Lsn& after, std::int64_t n, std::optional<std::string> ci);
  std::vector<Tile> split_points(std::string_view ci, std::optional<Lsn> from, std::optional<Lsn> to, int n);
  void read_changes(std::string_view ci, std::optional<Lsn> from, std::optional<Lsn> to,
                    const ChangeReadOptions& options, ArrowArrayStream* out);
  std::vector<ColumnInfo> captured_columns(std::string_view ci);
  std::vector<DdlEntry> ddl_history(std::string_view ci, const Lsn& after, const Lsn& upto);
  std::vector<InstanceInfo> capture_instances(std::string_view table);
  InstanceInfo resolve_instance(std::string_view ci);
  TableInfo table_info(std::string_view table);
  std::optional<KeyExtent> key_extent(std::string_view table,
                                      const std::optional<std::vector<std::string>>& key_columns);
  std::vector<Key> key_tiles(std::string_view table, std::int64_t n, std::int64_t rows_per_tile,
                             const std::optional<std::vector<std::string>>& key_columns);
  std::optional<Key> next_key(std::string_view table, const Key& after,
                              const std::optional<std::vector<std::string>>& key_columns);
  std::vector<Bucket> key_buckets(std::string_view table, int n, std::optional<__int128> lo, std::optional<__int128> hi,
                                  const std::optional<std::vector<std::string>>& key_columns);
  void read_table(std::string_view table, const KeyRange& range, const TableReadOptions& options,
                  ArrowArrayStream* out);
  std::vector<Entry> lsn_time_mapping();
  std::string server_time_zone();  // the IANA name of the time_zone setting, e.g. "UTC"
  // The shuffle_unordered setting: the TDS front end then returns stored rows read without
  // ORDER BY in a shuffled order, as SQL Server guarantees none (docs/emulator.md).
  bool shuffle_unordered();
  std::vector<std::string> tables();

  // Row cursors and the catalog for the TDS front end (rows.cpp). Rows hold stored cells.
  Objects objects();
  Micros now();  // UTC: the later of the wall clock and the newest timed event
  // start_lsn, tran_begin_time, tran_end_time, tran_id, tran_begin_lsn by start_lsn.
  std::unique_ptr<RowCursor> mapping_rows(const CellRange& start_lsn);
  // __$start_lsn, __$end_lsn, __$seqval, __$operation, __$update_mask, the captured columns by
  // ordinal, then __$command_id when the table has it; by (__$start_lsn, __$command_id,
  // __$seqval, __$operation), the order the backends ask for. With `fire_hooks` the read claims
  // and fires the hooks of read kind "changes" as read_changes does (hooks.hpp, decision 0760).
  std::unique_ptr<RowCursor> change_table_rows(std::string_view ci, const CellRange& start_lsn,
                                               bool fire_hooks = false);
  std::int64_t change_row_count(std::string_view ci);  // rows in cdc.<ci>_CT, for sys.partitions
  // Every column in column_id order, by primary key (a heap in insertion order, unbounded). With
  // `fire_hooks` the read claims and fires the hooks of read kind "table" as read_table does.
  std::unique_ptr<RowCursor> table_rows(std::string_view table, const CellRange& first_key, bool fire_hooks = false);

  // Converts a stored key cell back to a caller value (for keys returned to Python).
  static Value to_value(const Cell& c, const SqlType& type);

 private:
  template <typename Fn>
  auto in_read(Fn fn);
  Db& db() { return *db_; }

  std::filesystem::path path_;
  std::unique_ptr<Db> db_;
  std::unique_ptr<ReadTxn> snapshot_;
  std::optional<std::string> user_;  // nothing: dbo
  std::string database_;
};

}  // namespace mssqlcdc::emu
