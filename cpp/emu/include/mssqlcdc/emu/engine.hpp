// engine.hpp: the emulator's write side: one SQL Server database with CDC kept in one SQLite
// file. An Engine is one connection used by one thread; many engines and readers in many
// processes share a file. Every public call is one or more short BEGIN IMMEDIATE
// transactions; any error rolls its transaction back and consumes no LSN.
//
// Times (`at`) are UTC microseconds since 1970. A timed call given no time takes the clock
// rule's next time; one given a time before the file's last time throws EmuClock. A call that
// waits for a lock longer than the busy timeout throws EmuBusy. Names of tables and columns
// are matched without case, as SQL Server's default collation does.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mssqlcdc/emu/catalog.hpp"
#include "mssqlcdc/emu/clock.hpp"
#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/emu/log.hpp"
#include "mssqlcdc/emu/sqlite.hpp"
#include "mssqlcdc/emu/types.hpp"
#include "mssqlcdc/emu/zone.hpp"
#include "mssqlcdc/lsn.hpp"

namespace mssqlcdc::emu {

using Row = std::vector<std::pair<std::string, Value>>;  // column name (any case) -> value

// One element of a commit's list: an insert, an update or a delete of one row of `table`.
struct Change {
  enum class Kind : std::uint8_t { Insert, Update, Delete };
  Kind kind = Kind::Insert;
  std::string table;
  Row row;                     // insert: the row; update: key and SET values; delete: the key or filter
  std::optional<Row> old_key;  // update of a key (or a heap's filter)
};

// The rows an open transaction holds: (table object id, encoded key) -> the row's primary key
// cells in key order (empty for a heap's row, which then holds the whole table).
using LockedKeys = std::map<std::pair<std::int64_t, std::string>, std::vector<Cell>>;

class OwnerLock;  // row_locks.hpp: an open transaction's hold on its row locks

// Capture looks instances up through this, so an Engine can serve them from its cache.
class InstanceSource {
 public:
  virtual ~InstanceSource() = default;
  // The capture instances of source table `table_id`, oldest first; the reference stays valid
  // until the next call.
  virtual const std::vector<Instance>& instances(std::int64_t table_id) = 0;
};

// The write side of one emulator file. Not thread-safe: one thread uses an Engine at a time
// (other threads and processes open their own Engine or Reader on the same file).
class Engine : private InstanceSource {
 public:
  // Creates a new emulator file at `path`. Throws FileExists (the file or a left-over -wal is
  // there), FileNotFound (its folder is missing) or InvalidArgument (bad options).
  static void create(const std::filesystem::path& path, const CreateOptions& options);
  // Opens an existing file. Throws FileNotFound, EmuFileFormat (not an emulator file) or
  // EmuFormatVersion (written by a newer version).
  explicit Engine(const std::filesystem::path& path);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  // Closes the connection; open interleaved transactions are rolled back (they were never
  // written).
  ~Engine();

  // The file this engine writes.
  [[nodiscard]] const std::filesystem::path& path() const { return db_->path(); }
  // The engine's SQLite connection. Internal: it is public because the TDS front end answers
  // catalog views and resolves DML targets with its own SQL over it, and the binding's user
  // and hook calls are free functions over a Db; giving each of them a narrow Engine call
  // would move the front end's catalog queries into the engine. A caller must not keep a
  // statement or transaction open across another Engine call, nor write the catalog tables.
  Db& db() { return *db_; }

  // CREATE TABLE: `columns` are (name, SQL Server type text) in order; `primary_key` names
  // key columns (empty: a heap). Throws EmuSchema for a reserved schema, a bad type or name,
  // duplicates, or a key column that is not a column.
  void create_table(std::string_view table, const std::vector<std::pair<std::string, std::string>>& columns,
                    const std::vector<std::string>& primary_key);
  // sys.sp_cdc_enable_table: creates a capture instance of `table` (named `capture_instance`,
  // else schema_table) over `captured_columns` (else all), gated by `role_name` if given;
  // returns the instance's name. Throws EmuUnknownObject (no such table or column), EmuSchema
  // (a used name, a key column left out, a column that cannot be captured) or
  // EmuInstanceLimit (the table has two instances already).
  std::string enable_cdc(std::string_view table, std::optional<std::string> capture_instance,
                         std::optional<std::vector<std::string>> captured_columns,
                         std::optional<std::string> role_name = std::nullopt);
  // sys.sp_cdc_disable_table for one instance: drops its change table and catalog rows, after
  // readers holding the instance let go. Throws EmuUnknownObject for an unknown instance.
  void disable_cdc(std::string_view capture_instance);
  // ALTER TABLE ... ADD / DROP COLUMN / ALTER COLUMN at time `at`; returns the DDL's LSN, which
  // capture records in each instance's DDL history. Throws EmuUnknownObject, EmuSchema (a key
  // or identity column, the last column, a type change SQL Server refuses) or EmuConstraint
  // (stored values that do not fit the new type).
  Lsn add_column(std::string_view table, std::string_view column, std::string_view sql_type, std::optional<Micros> at);
  Lsn drop_column(std::string_view table, std::string_view column, std::optional<Micros> at);
  Lsn alter_column(std::string_view table, std::string_view column, std::string_view sql_type,
                   std::optional<Micros> at);
  // DROP TABLE: disables the table's capture instances (SQL Server drops a dropped table's CDC
  // metadata with it), then drops the table, its rows and its catalog rows. Throws
  // EmuUnknownObject, and InvalidArgument while an open interleaved transaction holds the table.
  void drop_table(std::string_view table);
  // TRUNCATE TABLE: deletes every row without logging them and reseeds the identity. Throws
  // EmuSchema 4711 for a table with a capture instance, as SQL Server refuses it.
  void truncate_table(std::string_view table);
  // CREATE [UNIQUE] INDEX `name` ON table (columns): recorded for sp_cdc_enable_table's
  // @index_name; the emulator keeps no index structure. Throws EmuUnknownObject 1911 for a
  // missing column and EmuSchema 1913 for a name the table already has.
  void create_index(std::string_view table, std::string_view name, const std::vector<std::string>& columns,
                    bool unique);
  // sp_rename (decision 1261). A table keeps its capture instances, which go on capturing under
  // the new name; the new table name is a bare name in the same schema. Throws EmuUnknownObject
  // (15248 for a column), EmuSchema for a bad or used name (15335), a captured column (4928) or
  // a column a computed column uses (5074), and InvalidArgument while an open interleaved
  // transaction holds the table.
  void rename_column(std::string_view table, std::string_view column, std::string_view new_name);
  void rename_table(std::string_view table, std::string_view new_name);

  // Commits `changes` as one transaction at time `at` and returns its commit LSN. Throws
  // EmuUnknownObject, EmuConstraint (SQL Server's 2627, 515, 2628, 8115, 273, a missing key)
  // or InvalidArgument (a row an open interleaved transaction holds).
  Lsn commit(const std::vector<Change>& changes, std::optional<Micros> at);
  // Commits each element of `transactions` as its own transaction, all in one SQLite
  // transaction (all or none); `at` holds no time, one for all, or one per transaction
  // (else InvalidArgument). Returns the commit LSNs in order.
  std::vector<Lsn> commit_many(const std::vector<std::vector<Change>>& transactions,
                               const std::vector<std::optional<Micros>>& at);
  // Writes an idle entry (an lsn_time_mapping row with no changes) at `at`; returns its LSN.
  Lsn idle(std::optional<Micros> at);

  // Manual mode: one capture cycle, or cycles until nothing is pending; both return max_lsn.
  // In immediate mode capture already happened at commit, and both just return max_lsn.
  std::optional<Lsn> capture();
  std::optional<Lsn> drain();
  // How many committed records (transactions, DDL, idle entries) wait for capture.
  std::int64_t pending_capture();

  // The scheduled jobs (decision 1240): runs, in time order, the capture cycles, idle
  // entries and cleanup runs due up to `at` (or the clock rule's next time), then moves the
  // clock there and returns it. Every timed event runs the jobs due before it.
  Micros advance(std::optional<Micros> at);

  // sys.sp_cdc_cleanup_change_table: moves the instance's low water mark to the first LSN of
  // `low_water_mark`'s time, then deletes the change rows below it in batches. Throws
  // EmuUnknownObject, or EmuArgument (22964) when the mark is no start_lsn of
  // lsn_time_mapping.
  void cleanup(std::string_view capture_instance, const Lsn& low_water_mark);
  // One run of the cleanup job over every instance, keeping `retention_minutes` (else the
  // retention_minutes setting). Throws InvalidArgument outside 1..52494800.
  void run_cleanup_job(std::optional<int> retention_minutes);

  // Interleaved transactions; ids are local to this engine. begin() takes the begin LSN and
  // time; execute() validates `changes` on top of the transaction's earlier ones and takes
  // their sequence values, but writes nothing visible; commit_open() applies them all at
  // `at` and returns the commit LSN. execute and commit_open throw InvalidArgument for an id
  // that is not open, and commit_open for a transaction without changes (it is then rolled
  // back); validation errors are those of commit(). rollback() of an unknown id is a no-op.
  std::int64_t begin(std::optional<Micros> at);
  void execute(std::int64_t txn, const std::vector<Change>& changes);
  Lsn commit_open(std::int64_t txn, std::optional<Micros> at);
  void rollback(std::int64_t txn);
  void rollback_all();
  // The lock owner number of open transaction `txn`, which its rows of emu_row_locks carry (a
  // Reader of the same session skips them, Reader::set_own_lock_owner). Throws
  // InvalidArgument for an id that is not open.
  [[nodiscard]] std::int64_t lock_owner(std::int64_t txn) const;

  // A setting's value as text (the names set_setting() in format.hpp knows); configure()
  // validates and stores one.
  // Both throw InvalidArgument for an unknown name; configure also for a bad value.
  std::string setting(const std::string& name);
  void configure(const std::string& name, const std::string& value);
  // The time of the newest timed event (UTC microseconds), or the clock's floor.
  Micros last_time();
  // sys.fn_cdc_get_max_lsn(): the newest captured entry's LSN, or nothing before the first.
  std::optional<Lsn> max_lsn();

  // Stores one fault hook row as given: `kind` is the fault, `read_kind` the read that fires
  // it, `payload` its encoded arguments. It checks nothing; register_hook() (hooks.hpp) checks
  // a Hook's arguments and encodes it, and is what callers use.
  void add_hook(const std::string& kind, const std::string& read_kind, const std::string& payload);

 private:
  // BEGIN IMMEDIATE with the catalog cache synced to the file; a rolled-back transaction drops
  // the cache, since it may hold what that transaction changed.
  class Txn {
   public:
    explicit Txn(Engine& engine) : engine_(engine), txn_(*engine.db_) { engine_.sync_cache(); }
    Txn(const Txn&) = delete;
    Txn& operator=(const Txn&) = delete;
    ~Txn() {
      if (!done_) engine_.cache_version_ = -1;
    }
    void commit() {
      txn_.commit();
      done_ = true;
    }

   private:
    Engine& engine_;
    WriteTxn txn_;
    bool done_ = false;
  };

  struct OpenTxn {
    Lsn begin_lsn;
    Micros begin_time = 0;
    std::vector<Change> changes;
    std::vector<Lsn> seqvals;           // one per row operation, taken by execute
    LockedKeys keys;                    // the rows this one touched, recorded in emu_row_locks
    std::shared_ptr<OwnerLock> holder;  // its owner byte, held until it ends
  };

  WriteState load_state() { return WriteState::load(*db_); }
  void store_state(const WriteState& s) { s.store(*db_); }
  // Applies `changes` to the source tables, filling rec.ops; seqvals come from `seqvals` when
  // given (an open Transaction's), else from the cursor. `keys` collects the keys touched.
  void apply(const std::vector<Change>& changes, WriteState& s, LogRecord& rec, const std::vector<Lsn>* seqvals,
             LockedKeys& keys, std::int64_t self_txn);
  Lsn commit_record(LogRecord& rec, WriteState& s, std::optional<Micros> at);
  void ddl(std::string_view table, const std::string& kind, std::string_view column, std::string_view sql_type,
           std::optional<Micros> at, Lsn& out);
  void check_no_open_txn(std::int64_t table_id, std::string_view what);
  // Ends open transaction `it`: deletes its row locks (best effort) and forgets it.
  void end_open(std::map<std::int64_t, OpenTxn>::iterator it) noexcept;
  bool manual();
  // One capture pass over at most `limit` pending transactions; returns how many it captured.
  std::int64_t capture_pending(std::int64_t limit);
  void write_idle_entry(WriteState& s, Micros at);
  std::optional<Micros> newest_entry_utc();
  bool jobs_on();
  void run_jobs(Micros until);
  void before_event(std::optional<Micros> at);
  // The catalog cache: refreshed at the start of each write transaction when another
  // connection (or this one) changed the catalog since it was filled.
  void sync_cache();
  const Table& cached_table(const std::string& name);
  const std::vector<Instance>& instances(std::int64_t table_id) override;
  const std::string& cached_setting(const std::string& name);
  const TimeZone& zone();           // the server zone of the time_zone setting, loaded once per name
  void emit(const LogRecord& rec);  // capture now (immediate) or queue in emu_log (manual)
  std::int64_t next_object_id();

  std::unique_ptr<Db> db_;
  std::map<std::int64_t, OpenTxn> open_;
  std::int64_t cache_version_ = -1;
  std::map<std::string, Table> table_cache_;
  std::map<std::int64_t, std::vector<Instance>> instance_cache_;
  std::map<std::string, std::string> setting_cache_;
  std::optional<TimeZone> zone_;
  std::int64_t next_txn_ = 1;
};

// Capture: turns one record into change rows, entries and DDL history.
// Catalog times are written as local times of `zone`, with UTC copies in the _utc columns.
void capture_record(Db& db, const LogRecord& rec, const TimeZone& zone, InstanceSource* cache = nullptr);
// Cleanup on an open connection, with no transaction open: Engine::cleanup and
// Engine::run_cleanup_job without an Engine (the TDS front end's procedures call these).
// Errors as there.
void cleanup_instance(Db& db, std::string_view capture_instance, const Lsn& mark);
void cleanup_job(Db& db, std::optional<int> retention_minutes);

// The 8 big-endian bytes of a rowversion value.
std::string rowversion_bytes(std::int64_t v);

// Stored value shown for messages: 7, 'abc', 0x0A0B, 12.50.
std::string show_cell(const Cell& c, const SqlType& type);

}  // namespace mssqlcdc::emu
