// statistics.cpp: the histogram builder and the statistics stored in the file (decision 1448).
#include "mssqlcdc/emu/statistics.hpp"

#include <algorithm>
#include <cmath>

namespace mssqlcdc::emu {

namespace {

// Made when first written, so files made before statistics existed gain them then.
constexpr const char* kTables =
    "CREATE TABLE IF NOT EXISTS emu_stats (object_id INTEGER PRIMARY KEY, rows INTEGER NOT NULL, "
    "rows_sampled INTEGER NOT NULL, last_updated INTEGER NOT NULL, modification_counter INTEGER NOT NULL); "
    "CREATE TABLE IF NOT EXISTS emu_stats_steps (object_id INTEGER NOT NULL, step_number INTEGER NOT NULL, "
    "range_hi_key, range_rows REAL NOT NULL, eq_rows REAL NOT NULL, distinct_range_rows INTEGER NOT NULL, "
    "avg_range_rows REAL NOT NULL, PRIMARY KEY (object_id, step_number)) WITHOUT ROWID";

bool have_tables(Db& db) {
  auto st = db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'emu_stats'");
  st.step();
  return st.i64(0) > 0;
}

}  // namespace

HistogramBuilder::HistogramBuilder(std::int64_t total_rows) {
  const auto usable = static_cast<std::int64_t>(kMaxHistogramSteps - 2);  // the first and last steps are fixed
  target_ = std::max<std::int64_t>(1, (total_rows + usable - 1) / usable);
}

void HistogramBuilder::add(Cell value, std::int64_t rows) {
  if (pending_) place(std::move(pending_->first), pending_->second, false);
  pending_.emplace(std::move(value), rows);
}

void HistogramBuilder::place(Cell value, std::int64_t rows, bool last) {
  if (!steps_.empty() && !last && range_rows_ + rows < target_) {
    range_rows_ += rows;
    ++range_distinct_;
    return;
  }
  HistogramStep step;
  step.range_hi_key = std::move(value);
  step.range_rows = static_cast<double>(range_rows_);
  step.eq_rows = static_cast<double>(rows);
  step.distinct_range_rows = range_distinct_;
  step.avg_range_rows =
      range_distinct_ > 0 ? static_cast<double>(range_rows_) / static_cast<double>(range_distinct_) : 1.0;
  steps_.push_back(std::move(step));
  range_rows_ = 0;
  range_distinct_ = 0;
}

std::vector<HistogramStep> HistogramBuilder::finish() {
  if (pending_) place(std::move(pending_->first), pending_->second, true);
  pending_.reset();
  return std::move(steps_);
}

bool statistics_stale(std::int64_t rows, std::int64_t modifications) {
  if (rows <= 500) return modifications >= 500;
  const double threshold =
      std::min(500.0 + 0.20 * static_cast<double>(rows), std::sqrt(1000.0 * static_cast<double>(rows)));
  return static_cast<double>(modifications) >= threshold;
}

std::optional<Statistics> load_statistics(Db& db, std::int64_t object_id) {
  if (!have_tables(db)) return std::nullopt;
  auto st =
      db.prepare("SELECT rows, rows_sampled, last_updated, modification_counter FROM emu_stats WHERE object_id = ?");
  st.bind(1, object_id);
  if (!st.step()) return std::nullopt;
  Statistics out{st.i64(0), st.i64(1), st.i64(2), st.i64(3), {}};
  auto steps = db.prepare(
      "SELECT range_hi_key, range_rows, eq_rows, distinct_range_rows, avg_range_rows FROM emu_stats_steps "
      "WHERE object_id = ? ORDER BY step_number");
  steps.bind(1, object_id);
  while (steps.step()) {
    out.histogram.push_back(HistogramStep{steps.cell(0), sqlite3_column_double(steps.raw(), 1),
                                          sqlite3_column_double(steps.raw(), 2), steps.i64(3),
                                          sqlite3_column_double(steps.raw(), 4)});
  }
  return out;
}

void store_statistics(Db& db, std::int64_t object_id, const Statistics& stats) {
  db.exec(kTables);
  drop_statistics(db, object_id);
  auto head = db.prepare(
      "INSERT INTO emu_stats (object_id, rows, rows_sampled, last_updated, modification_counter) "
      "VALUES (?, ?, ?, ?, ?)");
  head.bind(1, object_id).bind(2, stats.rows).bind(3, stats.rows_sampled).bind(4, stats.last_updated);
  head.bind(5, stats.modification_counter).run();
  std::int64_t number = 0;
  for (const auto& s : stats.histogram) {
    auto st = db.prepare(
        "INSERT INTO emu_stats_steps (object_id, step_number, range_hi_key, range_rows, eq_rows, "
        "distinct_range_rows, avg_range_rows) VALUES (?, ?, ?, ?, ?, ?, ?)");
    st.bind(1, object_id).bind(2, ++number).bind(3, s.range_hi_key);
    st.bind(4, Cell::real(s.range_rows)).bind(5, Cell::real(s.eq_rows)).bind(6, s.distinct_range_rows);
    st.bind(7, Cell::real(s.avg_range_rows)).run();
  }
}

void count_modifications(Db& db, std::int64_t object_id, std::int64_t rows) {
  if (rows == 0 || !have_tables(db)) return;
  auto st = db.prepare("UPDATE emu_stats SET modification_counter = modification_counter + ? WHERE object_id = ?");
  st.bind(1, rows).bind(2, object_id).run();
}

void drop_statistics(Db& db, std::int64_t object_id) {
  if (!have_tables(db)) return;
  db.prepare("DELETE FROM emu_stats WHERE object_id = ?").bind(1, object_id).run();
  db.prepare("DELETE FROM emu_stats_steps WHERE object_id = ?").bind(1, object_id).run();
}

}  // namespace mssqlcdc::emu
