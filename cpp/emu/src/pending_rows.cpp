// pending_rows.cpp: open transactions' rows in emu_pending_rows, and the cursor that lays them
// over a table's committed rows (decisions 1446, 1447).
#include "pending_rows.hpp"

#include <algorithm>
#include <set>

#include "mssqlcdc/error.hpp"
#include "row_locks.hpp"

namespace mssqlcdc::emu {
namespace {

constexpr const char* kTable =
    "CREATE TABLE IF NOT EXISTS emu_pending_rows (owner INTEGER NOT NULL, table_id INTEGER NOT NULL, key BLOB NOT "
    "NULL, cells BLOB, PRIMARY KEY (owner, table_id, key)) WITHOUT ROWID";

bool has_pending_table(Db& db) {
  auto st = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'emu_pending_rows'");
  return st.step();
}

// Positions of the key columns in a row of `t`'s columns, in key order.
std::vector<std::size_t> key_positions(const Table& t) {
  std::vector<std::size_t> out;
  for (const Column* k : t.key()) {
    for (std::size_t i = 0; i < t.columns.size(); ++i) {
      if (t.columns[i].column_id == k->column_id) out.push_back(i);
    }
  }
  return out;
}

// Every row of a table: committed rows with pending ones laid over them, in key order.
class OverlayCursor final : public RowCursor {
 public:
  OverlayCursor(std::unique_ptr<RowCursor> committed, const Table& t, PendingRows pending)
      : committed_(std::move(committed)), table_(t), positions_(key_positions(t)), pending_(std::move(pending)) {}

  bool next(std::vector<Cell>& row) override {
    if (!filled_) fill();
    if (at_ >= rows_.size()) return false;
    row = std::move(rows_[at_++]);
    return true;
  }
  [[nodiscard]] bool null_row_first() const override { return committed_->null_row_first(); }

 private:
  std::vector<Cell> key_cells(const std::vector<Cell>& row) const {
    std::vector<Cell> out;
    for (const std::size_t p : positions_) out.push_back(row[p]);
    return out;
  }

  void fill() {
    filled_ = true;
    std::set<std::string> seen;
    for (std::vector<Cell> row; committed_->next(row);) {
      const std::string key = pending_key(table_, key_cells(row));
      const auto it = pending_.find(key);
      if (it == pending_.end()) {
        rows_.push_back(row);
        continue;
      }
      seen.insert(key);
      if (it->second) rows_.push_back(*it->second);
    }
    for (const auto& [key, row] : pending_) {
      if (row && seen.count(key) == 0) rows_.push_back(*row);
    }
    const auto key = table_.key();
    std::stable_sort(rows_.begin(), rows_.end(), [&](const std::vector<Cell>& a, const std::vector<Cell>& b) {
      for (std::size_t i = 0; i < positions_.size(); ++i) {
        const int r = compare_cells(a[positions_[i]], b[positions_[i]], key[i]->type.collation);
        if (r != 0) return r < 0;
      }
      return false;
    });
  }

  std::unique_ptr<RowCursor> committed_;
  Table table_;
  std::vector<std::size_t> positions_;
  PendingRows pending_;
  std::vector<std::vector<Cell>> rows_;
  std::size_t at_ = 0;
  bool filled_ = false;
};

}  // namespace

std::string pending_key(const Table& t, const std::vector<Cell>& key_cells) {
  const auto key = t.key();
  std::string out;
  for (std::size_t i = 0; i < key_cells.size() && i < key.size(); ++i) {
    const Cell& cell = key_cells[i];
    const Collation* collation = key[i]->type.collation;
    out += std::to_string(static_cast<int>(cell.type)) + ":";
    switch (cell.type) {
      case Cell::Type::Null: break;
      case Cell::Type::Int: out += std::to_string(cell.i); break;
      case Cell::Type::Real: out += std::to_string(cell.d); break;
      case Cell::Type::Text: out += collation != nullptr ? collation->sort_key(cell.s) : cell.s; break;
      case Cell::Type::Blob: out += cell.s; break;
    }
    out += '|';
  }
  return out;
}

std::map<std::int64_t, PendingRows> read_after_images(Db& db, const std::map<std::int64_t, const Table*>& tables,
                                                      const LockedKeys& keys) {
  std::map<std::int64_t, PendingRows> out;
  for (const auto& [id, cells] : keys) {
    const auto t = tables.find(id.first);
    if (t == tables.end() || cells.empty() || t->second->heap) continue;
    const Table& table = *t->second;
    const auto key = table.key();
    if (cells.size() != key.size()) continue;
    std::string sql = "SELECT ";
    for (std::size_t i = 0; i < table.columns.size(); ++i) sql += (i ? ", " : "") + quote_ident(table.columns[i].name);
    sql += " FROM " + table.storage() + " WHERE ";
    for (std::size_t i = 0; i < key.size(); ++i) {
      sql += (i ? " AND " : "") + quote_ident(key[i]->name) + " = ?" + std::to_string(i + 1);
    }
    auto st = db.prepare(sql);
    for (std::size_t i = 0; i < cells.size(); ++i) st.bind(static_cast<int>(i + 1), cells[i]);
    std::optional<std::vector<Cell>> row;
    if (st.step()) {
      row.emplace();
      for (int c = 0; c < st.columns(); ++c) row->push_back(st.cell(c));
    }
    out[id.first][pending_key(table, cells)] = std::move(row);
  }
  return out;
}

void record_pending_rows(Db& db, std::int64_t owner, const std::map<std::int64_t, PendingRows>& rows) {
  db.exec(kTable);
  drop_pending_rows(db, owner);
  for (const auto& [table_id, pending] : rows) {
    for (const auto& [key, row] : pending) {
      auto st = db.prepare("INSERT INTO emu_pending_rows (owner, table_id, key, cells) VALUES (?, ?, ?, ?)");
      st.bind(1, owner).bind(2, table_id).bind_blob(3, key);
      if (row) {
        st.bind_blob(4, encode_cells(*row));
      } else {
        st.bind_null(4);
      }
      st.run();
    }
  }
}

void drop_pending_rows(Db& db, std::int64_t owner) {
  if (!has_pending_table(db)) return;
  db.prepare("DELETE FROM emu_pending_rows WHERE owner = ?").bind(1, owner).run();
}

PendingRows visible_pending_rows(Db& db, const std::filesystem::path& path, std::int64_t table_id,
                                 std::optional<std::int64_t> own, bool others) {
  PendingRows out;
  if ((!own && !others) || !has_pending_table(db)) return out;
  // Others first, in owner order, so the session's own rows are laid last and win.
  std::map<std::int64_t, std::vector<std::pair<std::string, std::optional<std::vector<Cell>>>>> by_owner;
  auto st = db.prepare("SELECT owner, key, cells FROM emu_pending_rows WHERE table_id = ? ORDER BY owner");
  st.bind(1, table_id);
  while (st.step()) {
    const std::int64_t owner = st.i64(0);
    if (owner != own && !others) continue;
    std::optional<std::vector<Cell>> row;
    if (!st.is_null(2)) row = decode_cells(st.blob(2));
    by_owner[owner].emplace_back(st.blob(1), std::move(row));
  }
  auto lay = [&](const auto& rows) {
    for (const auto& [key, row] : rows) out[key] = row;
  };
  for (const auto& [owner, rows] : by_owner) {
    if (owner == own) continue;
    // A transaction that ended or whose process died shows nothing (its rows go at next begin).
    if (lock_owner_alive(path, owner)) lay(rows);
  }
  if (own) {
    const auto it = by_owner.find(*own);
    if (it != by_owner.end()) lay(it->second);
  }
  return out;
}

std::unique_ptr<RowCursor> overlay_rows(std::unique_ptr<RowCursor> committed, const Table& t, PendingRows pending) {
  if (t.key().empty()) throw Error(ErrorKind::InvalidArgument, t.full_name() + " is a heap: no pending rows to lay");
  // A row recorded before another connection's ALTER TABLE has the old columns: it is left out
  // and the committed row shows, rather than cells under the wrong columns.
  std::erase_if(pending, [&](const auto& p) { return p.second && p.second->size() != t.columns.size(); });
  return std::make_unique<OverlayCursor>(std::move(committed), t, std::move(pending));
}

}  // namespace mssqlcdc::emu
