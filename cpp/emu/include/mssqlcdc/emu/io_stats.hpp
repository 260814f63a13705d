// io_stats.hpp: what reads cost the emulator, per table, in the spirit of SQL Server's SET
// STATISTICS IO (decision 1411). A read is a seek when it starts at a key bound and a scan when
// it starts at the table's first row; rows_read counts the rows the storage stepped over for
// it. The emulator has no pages: one stored row read is one read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mssqlcdc::emu {

// The reads of one table: how many started, by kind, and the rows they stepped over.
struct TableIo {
  std::int64_t scans = 0;      // reads started at the table's first (or last) row
  std::int64_t seeks = 0;      // reads started at a key bound
  std::int64_t rows_read = 0;  // stored rows the reads stepped over
  bool operator==(const TableIo&) const = default;
};

// TableIo by table name as the emulator names it ("dbo.orders", "cdc.dbo_orders_CT").
using IoByTable = std::map<std::string, TableIo>;

// A thread-safe tally of reads; cursors and streams hold it shared and add as they step.
class IoTally {
 public:
  // One read of `table` starts: a seek when `seek`, else a scan.
  void start(const std::string& table, bool seek);
  // The read of `table` stepped over `n` more stored rows.
  void rows(const std::string& table, std::int64_t n);
  // What was tallied so far.
  [[nodiscard]] IoByTable totals() const;
  // Forgets everything tallied.
  void clear();

 private:
  mutable std::mutex mutex_;
  IoByTable tables_;
};

// The tallies one read adds to: the file's (file_io) and, over TDS, its statement's.
using IoTallies = std::vector<std::shared_ptr<IoTally>>;

// One read of one table, adding to every tally it was given: made when the read starts.
class IoRead {
 public:
  IoRead() = default;
  // Starts a read of `table` (a seek when `seek`) in each of `tallies`.
  IoRead(IoTallies tallies, std::string table, bool seek);
  // Adds `n` stepped rows to every tally.
  void rows(std::int64_t n = 1) const;

 private:
  IoTallies tallies_;
  std::string table_;
};

// The process's tally of every read of the emulator file at `path` (by its canonical path),
// made by every Reader, stream and cursor of this process.
std::shared_ptr<IoTally> file_io(const std::filesystem::path& path);

}  // namespace mssqlcdc::emu
