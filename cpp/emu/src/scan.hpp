// scan.hpp: the two streaming reads behind Reader::read_changes and Reader::read_table, and
// the key helpers they share with the planning queries. A scan owns its own connection and
// read transaction; hooks of its read kind are claimed and fired around it (hooks.hpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mssqlcdc/emu/arrow.hpp"
#include "mssqlcdc/emu/catalog.hpp"
#include "mssqlcdc/emu/io_stats.hpp"
#include "mssqlcdc/emu/reader.hpp"

namespace mssqlcdc::emu {

// A row filter trimmed and lower-cased: "all" or "all update old" are the valid ones.
std::string normalize_row_filter(const std::string& filter);

// Range checks of cdc.fn_cdc_get_all_changes_<ci> (error 313), inside the caller's transaction.
void check_change_range(Db& db, const Instance& in, const std::optional<Lsn>& from, const std::optional<Lsn>& to,
                        const std::string& row_filter);

// The key columns of a table: its primary key, or the present columns named (snapshotKeys).
std::vector<const Column*> key_columns_of(const Table& t, const std::optional<std::vector<std::string>>& names);
std::string key_select(const std::vector<const Column*>& key);            // "a", "b"
std::string key_order(const std::vector<const Column*>& key, bool desc);  // "a" DESC, "b" DESC
std::string placeholders(std::size_t n);
// "key OP (?first, ?first+1, ...)" in key order, OP one of ">=", "<", ">", with NULL below every
// value as SQL Server sorts it: row values for NOT NULL primary keys (so the index serves the
// range), an expanded comparison when a key column may hold NULL.
std::string key_compare(const std::vector<const Column*>& key, const std::string& op, int first);
std::vector<Cell> key_cells(const Table& t, const std::vector<const Column*>& key, const Key& key_values,
                            std::string_view what);

// A column builder for a SQL Server type, and the append of one stored SQLite value to it;
// `as_text` builds a datetime2/datetimeoffset column as its text (ticks_text, with " +00:00"
// for a datetimeoffset, which keeps the UTC instant only).
ColumnBuilder make_builder(const std::string& name, const SqlType& type, bool as_text = false);
void append_stored(ColumnBuilder& b, sqlite3_stmt* st, int column, const SqlType& type, bool as_text = false);
// Which of `cols` `names` asks to read as text (case-insensitive); throws InvalidArgument for a
// name not among them or not of a datetime2/datetimeoffset column. `what` names the read.
// `Col` is Column or CapturedColumn. check_text_column throws that InvalidArgument for `name`
// of `type` (nullopt: the read returns no such column) and returns for a valid one.
void check_text_column(const std::string& name, const std::optional<SqlType>& type, std::string_view what);
template <class Col>
std::vector<bool> text_flags(const std::vector<Col>& cols, const std::vector<std::string>& names,
                             std::string_view what) {
  std::vector<bool> flags(cols.size(), false);
  for (const auto& name : names) {
    bool found = false;
    for (std::size_t i = 0; i < cols.size(); ++i) {
      if (!iequals(cols[i].name, name)) continue;
      check_text_column(cols[i].name, cols[i].type, what);
      flags[i] = found = true;
    }
    if (!found) check_text_column(name, std::nullopt, what);
  }
  return flags;
}

std::unique_ptr<BatchSource> open_change_scan(const std::filesystem::path& path, std::string_view ci,
                                              std::optional<Lsn> from, std::optional<Lsn> to,
                                              const ChangeReadOptions& options);
// `io`: the tallies the read adds to (io_stats.hpp); a read with a lower bound is a seek.
std::unique_ptr<BatchSource> open_table_scan(const std::filesystem::path& path, std::string_view table,
                                             const KeyRange& range, const TableReadOptions& options, IoTallies io = {});

}  // namespace mssqlcdc::emu
