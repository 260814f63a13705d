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
#include "mssqlcdc/emu/file_pool.hpp"
#include "mssqlcdc/emu/io_stats.hpp"
#include "mssqlcdc/emu/permissions.hpp"
#include "mssqlcdc/emu/sqlite.hpp"
#include "mssqlcdc/emu/statistics.hpp"
#include "mssqlcdc/lsn.hpp"

namespace mssqlcdc::emu {

// How time_to_lsn() picks an entry relative to a time, as sys.fn_cdc_map_time_to_lsn's
// relational operators do.
enum class Relation { LargestLessThan, LargestLessOrEqual, SmallestGreaterThan, SmallestGreaterOrEqual };

struct LockRange;  // row_locks.hpp: the keys a read touches

// SET TRANSACTION ISOLATION LEVEL of a reader's session, for its source-table reads (decision
// 1335): READ COMMITTED (the default; REPEATABLE READ and SERIALIZABLE read as it) waits for
// rows an open transaction holds, SNAPSHOT reads the last committed rows without waiting and
// needs the allow_snapshot_isolation setting (else error 3952), READ UNCOMMITTED does not wait.
enum class Isolation : std::uint8_t { ReadCommitted, Snapshot, ReadUncommitted };

// sys.fn_cdc_get_min_lsn's answer: a low water mark, or why there is none.
struct MinLsn {
  // Value: `lsn` holds it. Unknown: no such instance, or the user may not read it (SQL Server
  // answers zeros for both). NotEstablished: capture has not reached the instance's start yet.
  enum class State { Value, Unknown, NotEstablished };
  State state = State::Unknown;
  Lsn lsn;  // the low water mark for Value; zeros for Unknown
};

// One tile of split_points(): the tile ends at commit `last` (inclusive) and holds `rows` rows.
struct Tile {
  Lsn last;
  std::int64_t rows = 0;
};

// What read_changes() returns and how it batches. Besides the captured columns a stream has
// _start_lsn, _seqval, _operation, then _update_mask and _command_id when asked for, then
// _commit_ts (UTC); with raw_names, the change table's own columns instead.
struct ChangeReadOptions {
  std::optional<std::vector<std::string>> columns;  // captured names in the order asked; default all
  bool include_command_id = true;                   // needs a change table that has __$command_id
  bool include_update_mask = false;
  std::string row_filter = "all update old";  // or "all": no update-before rows
  std::int64_t batch_rows = 65536;            // 1..1000000 rows per batch
  std::int64_t batch_bytes = 64LL << 20;      // a batch stops growing past this; at least one row
  bool binary_lsn = false;                    // LSNs as binary(10) instead of their text
  bool fire_hooks = true;                     // false for inspection (change_rows), which never fires hooks
  bool raw_names = false;                     // change_rows: every change-table column under its SQL Server name
  // datetime2/datetimeoffset columns read as their text, Arrow string (ticks_text; decision 1345)
  std::vector<std::string> text_columns;
};

using Key = std::vector<Value>;  // one value per key column, in key order

// A range of keys of read_table(): [lo, hi), open where absent.
struct KeyRange {
  std::optional<Key> lo;  // inclusive
  std::optional<Key> hi;  // exclusive
};

// What read_table() returns and how it batches.
struct TableReadOptions {
  std::optional<std::vector<std::string>> columns;      // default: all, in column_id order
  std::optional<std::vector<std::string>> key_columns;  // the order and range key; default the primary key
  std::int64_t batch_rows = 65536;                      // 1..1000000 rows per batch
  std::int64_t batch_bytes = 64LL << 20;
  bool fire_hooks = true;
  bool inspect = false;  // the emulator's own look (Emulator.rows): waits for no row lock, checks no isolation
  // datetime2/datetimeoffset columns read as their text, Arrow string (ticks_text; decision 1345)
  std::vector<std::string> text_columns;
};

// One row of cdc.ddl_history. Times are server-local, as SQL Server stores them; the _utc
// twins serve the Emulator face.
struct DdlEntry {
  Lsn ddl_lsn;
  Micros ddl_time = 0;
  Micros ddl_time_utc = 0;
  std::string ddl_command;  // the statement's text
  bool required_column_update = false;
  std::string kind;                     // add, drop or alter
  std::string column;                   // the column the DDL changed
  std::optional<std::string> new_type;  // the column's type after an add or alter
};

// A capture instance as sp_cdc_help_change_data_capture shows it.
struct InstanceInfo {
  std::string name;
  std::string table;        // the source table, schema.name
  Lsn start_lsn;            // the stored low water mark
  bool established = true;  // false: SQL Server shows start_lsn as NULL (catalog.hpp)
  Lsn create_lsn;
  Micros create_date = 0;  // server-local
  Micros create_date_utc = 0;
  bool has_command_id = true;  // whether the change table has __$command_id
  std::vector<std::string> index_columns;
};

// A column of a capture instance (captured_columns) or of a table (table_info).
struct ColumnInfo {
  std::string name;
  std::int64_t column_id = 0;
  int ordinal = 0;           // captured ordinal; key ordinal for table_info
  std::string sql_type;      // canonical SQL Server type, e.g. decimal(18,2)
  std::string arrow_type;    // pyarrow's name of the type it reads as
  bool present = true;       // false once the column was dropped from the source table
  bool is_identity = false;  // table_info only
  bool is_computed = false;
  bool is_nullable = true;  // table_info only
  std::string collation;    // a character column's collation name; "" for other types
};

// A table's columns, primary key and current row count.
struct TableInfo {
  std::string name;  // schema.name
  std::vector<ColumnInfo> columns;
  std::vector<std::string> key_columns;  // empty for a heap
  std::int64_t row_count = 0;
};

// The smallest and largest key of a table and its row count.
struct KeyExtent {
  Key min;
  Key max;
  std::int64_t rows = 0;
};

// One bucket of key_buckets(): integer keys in [lo, hi) and how many rows have them.
struct Bucket {
  __int128 lo = 0;
  __int128 hi = 0;
  std::int64_t rows = 0;
};

// One row of cdc.lsn_time_mapping; times are server-local, the _utc ones UTC. An idle entry
// has a zero tran_id.
struct Entry {
  Lsn start_lsn;
  Micros begin_time = 0;
  Micros end_time = 0;
  std::string tran_id;  // 10 bytes
  Lsn tran_begin_lsn;
  Micros begin_utc = 0;
  Micros end_utc = 0;
};

// A forward-only cursor over stored rows, for the TDS front end: it owns its connection and
// read transaction and holds one row; the transaction ends when it is exhausted or destroyed.
// Used by one thread at a time; it does not need the Reader that made it.
class RowCursor {
 public:
  virtual ~RowCursor() = default;
  // Fills `row` with the next row's stored cells; false at the end. Throws Error(EmuBusy) or
  // Error(EmuHook) when a fault hook it fires fails.
  virtual bool next(std::vector<Cell>& row) = 0;
  // Whether the read claimed inject_null_row: its consumer shows one all-NULL row first. The
  // cursor does not yield it, since the consumer's own filter (a WHERE) would drop it.
  [[nodiscard]] virtual bool null_row_first() const { return false; }
};

// Stored-cell bounds on the column a cursor is ordered by; open where nullopt.
struct CellBound {
  Cell value;
  bool inclusive = true;
};
// A range of the ordering column: rows between `lo` and `hi`, each open when absent.
struct CellRange {
  std::optional<CellBound> lo;
  std::optional<CellBound> hi;
};

// Every table and capture instance, read in one transaction.
struct Objects {
  std::vector<Table> tables;
  std::vector<Instance> instances;
};

// The read side of one emulator file: sys.fn_cdc_* and the catalog, as the library's backends
// see them. Each call reads in its own read transaction, or in the open snapshot. Not
// thread-safe: one thread uses a Reader at a time; the Arrow streams and row cursors it returns
// own their own connections and may be used from another thread, and outlive the Reader.
// Unknown tables and instances throw Error(EmuUnknownObject); a lock wait past the busy timeout
// throws Error(EmuBusy).
class Reader {
 public:
  // Opens `file` for reading. Throws FileNotFound, EmuFileFormat or EmuFormatVersion.
  explicit Reader(std::filesystem::path file);
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  // Ends an open snapshot and closes the connection.
  ~Reader();

  // Reads as a database user from now on (permissions.hpp); nothing is dbo, the default. An
  // unknown user is EmuUnknownObject 15151 when `strict`, else dbo (a TDS login that is no
  // user; there `user` is a login name, which picks the user CREATE USER ... FOR LOGIN mapped
  // to it, else the user of the same name). `database` names the database in error 229's text (default: the file's
  // stem).
  void act_as(std::optional<std::string> user, std::optional<std::string> database, bool strict = true);
  // The user act_as() set; nothing for dbo.
  [[nodiscard]] const std::optional<std::string>& user() const { return user_; }
  // Whether the user may read instance `ci`'s change data; true for an unknown `ci`.
  bool may_read(std::string_view ci);
  // Error 229 naming the object `prefix` + the instance's name + `suffix` when the user may not
  // read instance `ci`; an unknown `ci` passes, so the read that follows reports it (208).
  void check_read(std::string_view ci, std::string_view prefix, std::string_view suffix = "");
  // Error 229 naming `table` when the user has no SELECT on `schema`.`table` (permissions.hpp's
  // may_select: a grant on the table or its schema, to the user or a role of it); dbo passes.
  void check_select(std::string_view schema, std::string_view table);
  // The SQL login of that name kept in the file (CREATE LOGIN over TDS), or nothing.
  [[nodiscard]] std::optional<LoginRecord> find_login(std::string_view name);

  // The session's isolation level for source-table reads (read_table, table_rows, key_extent,
  // key_tiles, next_key, key_buckets); READ COMMITTED until set.
  void set_isolation(Isolation level) { isolation_ = level; }
  [[nodiscard]] Isolation isolation() const { return isolation_; }
  // SET LOCK_TIMEOUT: how long a READ COMMITTED read waits for rows an open transaction holds
  // before EmuBusy 1222; 0 does not wait, -1 (the default) means the file's lock_timeout_ms
  // setting (a safety cap, -1 there to wait without end as SQL Server does).
  void set_lock_timeout(std::int64_t ms) { lock_timeout_ms_ = ms; }
  [[nodiscard]] std::int64_t lock_timeout() const { return lock_timeout_ms_; }
  // The lock owner of the session's own open transaction (Engine::lock_owner), whose row locks
  // its reads do not wait for, as SQL Server's session never waits for its own locks; nullopt
  // when the session has none.
  void set_own_lock_owner(std::optional<std::int64_t> owner) { own_lock_owner_ = owner; }
  // Reads of source tables this Reader starts from now on add to `tally` as well as to the
  // file's (file_io; decision 1411): a TDS statement's SET STATISTICS IO. nullptr stops that.
  void count_into(std::shared_ptr<IoTally> tally) { statement_io_ = std::move(tally); }
  // The tallies a read started now adds to: the file's, and the one count_into() set.
  [[nodiscard]] IoTallies io_tallies() const { return {file_io_, statement_io_}; }

  // Groups metadata calls in one read transaction until end_snapshot(): they all see the file
  // as it was at begin_snapshot(). A second begin_snapshot() throws InvalidArgument;
  // end_snapshot() without one does nothing. read_changes() and read_table() refuse to run
  // inside a snapshot (InvalidArgument), as they read in their own transaction.
  void begin_snapshot();
  void end_snapshot();
  // Whether a snapshot is open.
  [[nodiscard]] bool in_snapshot() const { return snapshot_ != nullptr; }

  // sys.fn_cdc_get_max_lsn: the newest entry of cdc.lsn_time_mapping, idle entries included;
  // nothing while there is none.
  std::optional<Lsn> max_lsn();
  // The newest entry that is a commit (not idle); nothing while there is none.
  std::optional<Lsn> max_commit_lsn();
  // sys.fn_cdc_get_min_lsn of instance `ci`; see MinLsn for the three answers. Never throws
  // for an unknown instance or one the user may not read.
  MinLsn min_lsn(std::string_view ci);
  // sys.fn_cdc_map_lsn_to_time: the time of the entry at exactly `lsn`, or nothing.
  std::optional<Micros> lsn_to_time(const Lsn& lsn);  // that entry's local time
  std::optional<Micros> lsn_to_utc(const Lsn& lsn);   // the same entry's UTC time
  // The commit time of an LSN as the library defines it: the local time of the
  // newest entry at or below `lsn` (idle entries count), or nothing when there is none.
  std::optional<Micros> time_at_or_below(const Lsn& lsn);
  // sys.fn_cdc_map_time_to_lsn: the entry nearest local time `t` (rounded to a datetime tick)
  // in the direction `rel` asks; of several entries at that time, the largest LSN for the
  // "less" relations and the smallest for the "greater" ones. Nothing when none qualifies.
  std::optional<Lsn> time_to_lsn(Relation rel, Micros t);
  // The n-th (1-based) distinct commit LSN above `after`: of instance `ci`'s change rows, or of
  // all mapping entries when `ci` is nothing. Nothing when there are fewer. n < 1 throws
  // InvalidArgument.
  std::optional<Lsn> nth_commit_after(const Lsn& after, std::int64_t n, std::optional<std::string> ci);
  // Splits instance `ci`'s changes in [from, to] into at most `n` tiles of about equal row
  // counts, cutting only between commits; the last tile ends at `to`. Throws InvalidArgument
  // for n < 1, EmuInvalidRange (313) for a range fn_cdc_get_all_changes would refuse, and
  // EmuPermission (229) when the user may not read the instance.
  std::vector<Tile> split_points(std::string_view ci, std::optional<Lsn> from, std::optional<Lsn> to, int n);
  // cdc.fn_cdc_get_all_changes_<ci>(from, to, row_filter) as an Arrow stream written to `out`,
  // which the caller then owns and releases; rows are in (start LSN, command id, seqval,
  // operation) order. Checks, before any row: 229 (EmuPermission), 208 and 207
  // (EmuUnknownObject), 313 (EmuInvalidRange), bad batch options (InvalidArgument). Claims and
  // fires the "changes" fault hooks when options.fire_hooks.
  void read_changes(std::string_view ci, std::optional<Lsn> from, std::optional<Lsn> to,
                    const ChangeReadOptions& options, ArrowArrayStream* out);
  // The columns instance `ci` captures, by ordinal, dropped ones included (present = false).
  std::vector<ColumnInfo> captured_columns(std::string_view ci);
  // Instance `ci`'s DDL history entries with after < ddl_lsn <= upto, oldest first.
  std::vector<DdlEntry> ddl_history(std::string_view ci, const Lsn& after, const Lsn& upto);
  // The capture instances of `table` the user may read, oldest first.
  std::vector<InstanceInfo> capture_instances(std::string_view table);
  // The capture instance named `ci` (any case), whatever the user may read.
  InstanceInfo resolve_instance(std::string_view ci);
  // `table`'s columns, primary key and row count.
  TableInfo table_info(std::string_view table);
  // The smallest and largest key (`key_columns`, else the primary key) and the row count;
  // nothing for an empty table. A heap needs `key_columns` (else InvalidArgument).
  std::optional<KeyExtent> key_extent(std::string_view table,
                                      const std::optional<std::vector<std::string>>& key_columns);
  // The first keys of tiles 2, 3, ... of `table` in key order: `n` tiles of about equal size,
  // or tiles of `rows_per_tile` rows. Exactly one of the two must be positive (else
  // InvalidArgument). Empty when the table fits one tile.
  std::vector<Key> key_tiles(std::string_view table, std::int64_t n, std::int64_t rows_per_tile,
                             const std::optional<std::vector<std::string>>& key_columns);
  // The smallest key above `after`, or nothing. `after` must hold one value per key column
  // (else InvalidArgument).
  std::optional<Key> next_key(std::string_view table, const Key& after,
                              const std::optional<std::vector<std::string>>& key_columns);
  // The smallest key whose first column is at or above `first`, or nothing: one seek reading at
  // most one row (decision 1412). `first` is a value of the first key column.
  std::optional<Key> first_key_from(std::string_view table, const Value& first,
                                    const std::optional<std::vector<std::string>>& key_columns);
  // The statistics of `table`'s primary key (statistics.hpp; decision 1448), nothing for a heap.
  // When `auto_update`, missing or stale ones (statistics_stale) are built first, as SQL Server's
  // AUTO_UPDATE_STATISTICS does, unless a snapshot is open, the file's write lock is busy or
  // the file cannot be written: then the stored ones (or nothing) come back.
  std::optional<Statistics> statistics(std::string_view table, bool auto_update = true);
  // UPDATE STATISTICS `table` WITH FULLSCAN: builds the primary key's statistics by one read of
  // every row in key order and stores them. The build's rows count in the file's io statistics
  // under "<table> (statistics)", apart from any statement's. Throws InvalidArgument for a heap
  // or inside a snapshot, EmuBusy when the write lock stays busy.
  Statistics update_statistics(std::string_view table);
  // sp_updatestats: builds the statistics of every table with a primary key whose statistics
  // are missing or have a modification since their build; returns the tables built, schema.name.
  std::vector<std::string> update_all_statistics();
  // Splits [lo, hi) of a single integer key into `n` buckets of equal width with their row
  // counts; lo and hi default to the table's smallest key and largest key + 1. Empty buckets of
  // zero width are left out. Throws InvalidArgument for n < 1 or a key that is not one integer
  // column.
  std::vector<Bucket> key_buckets(std::string_view table, int n, std::optional<__int128> lo, std::optional<__int128> hi,
                                  const std::optional<std::vector<std::string>>& key_columns);
  // The rows of `table` in `range`, in key order (a heap without key_columns: insertion order,
  // and only open bounds), as an Arrow stream written to `out`, which the caller owns. Throws
  // EmuUnknownObject (207 for a column) and InvalidArgument for bad options or bounds. Claims
  // and fires the "table" fault hooks when options.fire_hooks.
  void read_table(std::string_view table, const KeyRange& range, const TableReadOptions& options,
                  ArrowArrayStream* out);
  // Every entry of cdc.lsn_time_mapping, by start LSN.
  std::vector<Entry> lsn_time_mapping();
  std::string server_time_zone();  // the IANA name of the time_zone setting, e.g. "UTC"
  // The shuffle_unordered setting: the TDS front end then returns stored rows read without
  // ORDER BY in a shuffled order, as SQL Server guarantees none (docs/emulator.md).
  bool shuffle_unordered();
  // The names of every table, schema.name.
  std::vector<std::string> tables();

  // Row cursors and the catalog for the TDS front end (rows.cpp). Rows hold stored cells.
  // Every table and capture instance. catalog() shares one load per catalog state among all
  // the Readers of this process (keyed by catalog_token), as the front end asks at nearly every
  // statement and a load reads every table's rows of the catalog; objects() is a copy of it.
  std::shared_ptr<const Objects> catalog();
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
  // The rows the session's own open transaction (set_own_lock_owner) wrote show as it left
  // them (decision 1446). `dirty` is a READ UNCOMMITTED read (a TDS session's level or a NOLOCK
  // hint): it waits for no row lock and shows every open transaction's uncommitted rows
  // (decision 1447). A heap's read shows its committed rows only.
  std::unique_ptr<RowCursor> table_rows(std::string_view table, const CellRange& first_key, bool fire_hooks = false,
                                        bool dirty = false);

  // Converts a stored key cell back to a caller value (for keys returned to Python).
  static Value to_value(const Cell& c, const SqlType& type);

 private:
  template <typename Fn>
  auto in_read(Fn fn);
  Db& db() { return *db_; }
  // Waits for (or refuses) a source-table read of `table` at the session's isolation level
  // (row_locks.hpp); `key_columns` name the columns the read ranges over, `lo`/`hi` its bounds.
  void guard_key_read(std::string_view table, const std::optional<std::vector<std::string>>& key_columns,
                      const std::optional<Key>& lo, bool lo_inclusive, const std::optional<Key>& hi, bool hi_inclusive);
  // The same for a read of `table`'s rows in `range` of its primary key.
  void guard_read(std::string_view table, const LockRange& range);

  std::filesystem::path path_;
  PooledDb db_;
  std::unique_ptr<ReadTxn> snapshot_;
  std::optional<std::string> user_;  // nothing: dbo
  std::string database_;
  Isolation isolation_ = Isolation::ReadCommitted;
  std::int64_t lock_timeout_ms_ = -1;
  std::optional<std::int64_t> own_lock_owner_;
  std::shared_ptr<IoTally> file_io_;
  std::shared_ptr<IoTally> statement_io_;
};

}  // namespace mssqlcdc::emu
