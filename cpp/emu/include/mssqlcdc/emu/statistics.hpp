// statistics.hpp: the statistics SQL Server keeps for a table's primary key, as the emulator
// keeps them (decision 1448): a histogram of at most 200 steps over the key's leading column,
// built by a full scan in key order and stored in the file with a modification counter that
// the table's writes raise. sys.stats, sys.dm_db_stats_histogram and sys.dm_db_stats_properties
// show them over TDS; UPDATE STATISTICS, sp_updatestats and Emulator.update_statistics build
// them, and a read of missing or stale statistics builds them first, as AUTO_UPDATE_STATISTICS.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "mssqlcdc/emu/clock.hpp"
#include "mssqlcdc/emu/sqlite.hpp"

namespace mssqlcdc::emu {

// The most steps a histogram has, as in SQL Server.
inline constexpr std::size_t kMaxHistogramSteps = 200;

// One step of a histogram, with the columns DBCC SHOW_STATISTICS WITH HISTOGRAM shows.
struct HistogramStep {
  Cell range_hi_key;                     // the step's upper bound, a stored cell of the leading column
  double range_rows = 0;                 // rows strictly between the previous step's bound and this one
  double eq_rows = 0;                    // rows equal to range_hi_key
  std::int64_t distinct_range_rows = 0;  // distinct values strictly between the two bounds
  double avg_range_rows = 1;             // range_rows / distinct_range_rows; 1 when there are none
  bool operator==(const HistogramStep&) const = default;
};

// Statistics of one table's primary key, as sys.dm_db_stats_properties shows them.
struct Statistics {
  std::int64_t rows = 0;                  // rows when built
  std::int64_t rows_sampled = 0;          // rows the build read: all of them, a full scan
  Micros last_updated = 0;                // UTC, when built
  std::int64_t modification_counter = 0;  // rows of the key's leading column changed since
  std::vector<HistogramStep> histogram;   // empty for an empty table
};

// Builds a histogram from the distinct values of the leading key column in key order, fed one
// at a time with their row counts: the smallest value is step 1, the largest the last step, and
// a value closes a step once the rows since the previous step reach about total_rows / 198, so
// there are never more than 200 steps; with 198 rows or fewer every distinct value is a step.
class HistogramBuilder {
 public:
  // `total_rows`: the rows the values to come add up to.
  explicit HistogramBuilder(std::int64_t total_rows);
  // The next distinct value, above the previous one, and how many rows hold it (1 or more).
  void add(Cell value, std::int64_t rows);
  // The steps; the builder is spent.
  std::vector<HistogramStep> finish();

 private:
  void place(Cell value, std::int64_t rows, bool last);
  std::int64_t target_ = 1;
  std::optional<std::pair<Cell, std::int64_t>> pending_;
  std::int64_t range_rows_ = 0;
  std::int64_t range_distinct_ = 0;
  std::vector<HistogramStep> steps_;
};

// Whether statistics with `modifications` changes since a build over `rows` rows are stale:
// SQL Server 2016's threshold (compatibility level 130 and later), 500 changes for a table of 500
// rows or fewer, else MIN(500 + 0.20 * rows, SQRT(1000 * rows)).
[[nodiscard]] bool statistics_stale(std::int64_t rows, std::int64_t modifications);

// The statistics stored for table `object_id`, or nothing when none were built.
[[nodiscard]] std::optional<Statistics> load_statistics(Db& db, std::int64_t object_id);
// Stores `stats` for table `object_id`, replacing what was stored; needs a write transaction.
void store_statistics(Db& db, std::int64_t object_id, const Statistics& stats);
// Adds `rows` to the modification counter of table `object_id`'s statistics, if it has any;
// needs a write transaction.
void count_modifications(Db& db, std::int64_t object_id, std::int64_t rows);
// Forgets table `object_id`'s statistics (its drop); needs a write transaction.
void drop_statistics(Db& db, std::int64_t object_id);

}  // namespace mssqlcdc::emu
