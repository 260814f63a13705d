// dml.cpp: the Engine's row changes: validation, source-table writes and the row images
// that capture turns into change rows.
#include <algorithm>
#include <set>

#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/emu/statistics.hpp"
#include "mssqlcdc/error.hpp"
#include "nullability.hpp"

namespace mssqlcdc::emu {

namespace {

using Resolved = std::vector<std::pair<const Column*, Cell>>;

std::string hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "0x";
  for (char b : bytes) {
    out += kHex[(static_cast<unsigned char>(b) >> 4) & 0xF];
    out += kHex[static_cast<unsigned char>(b) & 0xF];
  }
  return out;
}

Resolved resolve(const Table& t, const Row& row, std::string_view context) {
  Resolved out;
  for (const auto& [name, value] : row) {
    const Column* c = t.find(name);
    if (c == nullptr) {
      throw Error(ErrorKind::EmuUnknownObject,
                  t.full_name() + ": no column " + name + " (error 207) in " + std::string(context) +
                      "; columns: " + t.column_list(),
                  207);
    }
    for (const auto& [seen, cell] : out) {
      if (seen == c) {
        throw Error(ErrorKind::InvalidArgument, t.full_name() + ": column " + c->name + " is given twice in " +
                                                    std::string(context) + "; give each column once");
      }
    }
    out.emplace_back(c, coerce(value, c->type, t.full_name() + "." + c->name));
  }
  return out;
}

std::string show_key(const Table&, const Resolved& key) {
  std::string out = "(";
  for (const auto& [c, cell] : key) out += (out.size() > 1 ? ", " : "") + c->name + "=" + show_cell(cell, c->type);
  return out + ")";
}

// A key's identity for row locks: text under its column's collation, so keys the primary key
// calls equal ('a' and 'A ' under a _CI collation) are one row.
std::string encode_key(const Resolved& key) {
  std::string out;
  for (const auto& [c, cell] : key) {
    const bool collated = cell.type == Cell::Type::Text && c->type.collation != nullptr;
    out += std::to_string(c->column_id) + ":" + std::to_string(static_cast<int>(cell.type)) + ":" +
           (cell.type == Cell::Type::Int    ? std::to_string(cell.i)
            : cell.type == Cell::Type::Real ? std::to_string(cell.d)
            : collated                      ? c->type.collation->sort_key(cell.s)
                                            : cell.s) +
           "|";
  }
  return out;
}

std::string column_names(const Table& t) {
  std::string out;
  for (const auto& c : t.columns) out += (out.empty() ? "" : ", ") + quote_ident(c.name);
  return out;
}

// Key cells in key order from a resolved row; requires every key column.
Resolved key_of(const Table& t, const Resolved& row, std::string_view context) {
  Resolved key;
  for (const Column* k : t.key()) {
    auto it = std::find_if(row.begin(), row.end(), [&](const auto& p) { return p.first == k; });
    if (it == row.end()) {
      throw Error(
          ErrorKind::InvalidArgument, t.full_name() + ": " + std::string(context) + " must give key column " + k->name +
                                          " (key: " +
                                          [&] {
                                            std::string s;
                                            for (const Column* c : t.key()) s += (s.empty() ? "" : ", ") + c->name;
                                            return s;
                                          }() +
                                          ")");
    }
    if (it->second.is_null()) {
      throw Error(ErrorKind::EmuConstraint,
                  t.full_name() + ": key column " + k->name + " cannot be NULL (error 515); give it a value", 515);
    }
    key.push_back(*it);
  }
  return key;
}

// The key cells of a stored row's image, in key order, spelled as stored.
Resolved stored_key(const Table& t, const Image& im) {
  Resolved key;
  for (const Column* k : t.key()) {
    for (const auto& [id, cell] : im) {
      if (id == k->column_id) key.emplace_back(k, cell);
    }
  }
  return key;
}

// The stored row with this key (or the one heap row matching the filter), as an image.
struct Found {
  std::int64_t rowid = 0;
  Image image;
};

std::optional<Found> fetch(Db& db, const Table& t, const Resolved& where, bool heap_filter) {
  std::string sql =
      "SELECT " + std::string(t.heap ? "rowid, " : "0, ") + column_names(t) + " FROM " + t.storage() + " WHERE ";
  for (std::size_t i = 0; i < where.size(); ++i)
    sql += (i ? " AND " : "") + quote_ident(where[i].first->name) + " IS ?";
  if (where.empty()) sql += "1";
  sql += " LIMIT 2";
  auto st = db.prepare(sql);
  for (std::size_t i = 0; i < where.size(); ++i) st.bind(static_cast<int>(i + 1), where[i].second);
  if (!st.step()) return std::nullopt;
  Found f;
  f.rowid = st.i64(0);
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    f.image.emplace_back(t.columns[i].column_id, st.cell(static_cast<int>(i + 1)));
  if (heap_filter && st.step()) {
    throw Error(ErrorKind::EmuConstraint,
                t.full_name() + ": the filter " + show_key(t, where) +
                    " matches more than one row of the heap; give a filter that matches exactly one");
  }
  return f;
}

void store_image(Db& db, const Table& t, const Image& im) {
  std::string sql = "INSERT INTO " + t.storage() + " (" + column_names(t) + ") VALUES (";
  for (std::size_t i = 0; i < t.columns.size(); ++i) sql += i ? ", ?" : "?";
  auto st = db.prepare(sql + ")");
  for (std::size_t i = 0; i < im.size(); ++i) st.bind(static_cast<int>(i + 1), im[i].second);
  st.run();
}

void remove_row(Db& db, const Table& t, const Found& f, const Resolved& key) {
  if (t.heap) {
    db.prepare("DELETE FROM " + t.storage() + " WHERE rowid = ?").bind(1, f.rowid).run();
    return;
  }
  std::string sql = "DELETE FROM " + t.storage() + " WHERE ";
  for (std::size_t i = 0; i < key.size(); ++i) sql += (i ? " AND " : "") + quote_ident(key[i].first->name) + " = ?";
  auto st = db.prepare(sql);
  for (std::size_t i = 0; i < key.size(); ++i) st.bind(static_cast<int>(i + 1), key[i].second);
  st.run();
}

void rewrite_row(Db& db, const Table& t, const Found& f, const Resolved& key, const Image& im) {
  std::string sql = "UPDATE " + t.storage() + " SET ";
  for (std::size_t i = 0; i < t.columns.size(); ++i) sql += (i ? ", " : "") + quote_ident(t.columns[i].name) + " = ?";
  int n = static_cast<int>(t.columns.size());
  if (t.heap) {
    auto st = db.prepare(sql + " WHERE rowid = ?");
    for (std::size_t i = 0; i < im.size(); ++i) st.bind(static_cast<int>(i + 1), im[i].second);
    st.bind(n + 1, f.rowid).run();
    return;
  }
  sql += " WHERE ";
  for (std::size_t i = 0; i < key.size(); ++i) sql += (i ? " AND " : "") + quote_ident(key[i].first->name) + " = ?";
  auto st = db.prepare(sql);
  for (std::size_t i = 0; i < im.size(); ++i) st.bind(static_cast<int>(i + 1), im[i].second);
  for (std::size_t i = 0; i < key.size(); ++i) st.bind(n + 1 + static_cast<int>(i), key[i].second);
  st.run();
}

void set_cell(Image& im, std::int64_t column_id, const Cell& c) {
  for (auto& [id, cell] : im) {
    if (id == column_id) cell = c;
  }
}

// An insert gives no value to the identity column (IDENTITY_INSERT is not modelled): it takes
// the next one, which the row image, and so the change rows, carry.
void add_identity(Db& db, const Table& t, Resolved& row, const std::string& context) {
  if (!t.identity) return;
  const Column* c = t.by_id(t.identity->column_id);
  for (const auto& [given, cell] : row) {
    if (given == c) {
      throw Error(ErrorKind::EmuConstraint,
                  t.full_name() + ": Cannot insert explicit value for identity column in table '" + t.name +
                      "' when IDENTITY_INSERT is set to OFF (error 544, " + context + "); leave " + c->name +
                      " out of the row",
                  544);
    }
  }
  row.emplace_back(c,
                   Cell::integer(next_identity(db, t.object_id, *t.identity, c->type, t.full_name() + "." + c->name)));
}

void refuse_computed(const Table& t, const Resolved& given) {
  for (const auto& [c, cell] : given) {
    if (c->computed) {
      throw Error(ErrorKind::EmuConstraint,
                  t.full_name() + ": The column \"" + c->name +
                      "\" cannot be modified because it is either a computed column or is the result of a UNION "
                      "operator (error 271); leave it out, it is computed as " +
                      c->computed->text(),
                  271);
    }
  }
}

// Computed values go into the source row; the image that capture reads holds NULL for them,
// as SQL Server's change tables do.
void compute(const Table& t, Image& im) {
  for (const auto& c : t.columns) {
    if (!c.computed) continue;
    const Cell value = c.computed->evaluate([&](std::int64_t id) {
      for (const auto& [column_id, cell] : im) {
        if (column_id == id) return cell;
      }
      return Cell::null();
    });
    for (auto& [id, cell] : im) {
      if (id == c.column_id) cell = value;
    }
  }
}

void null_computed(const Table& t, Image& im) {
  for (const auto& c : t.columns) {
    if (!c.computed) continue;
    for (auto& [id, cell] : im) {
      if (id == c.column_id) cell = Cell::null();
    }
  }
}

void refuse_identity_update(const Table& t, const Resolved& set) {
  for (const auto& [c, cell] : set) {
    if (c->is_identity) {
      throw Error(ErrorKind::EmuConstraint,
                  t.full_name() + ": Cannot update identity column '" + c->name +
                      "' (error 8102); delete the row and insert it again instead",
                  8102);
    }
  }
}

const char* kind_word(Change::Kind k) {
  switch (k) {
    case Change::Kind::Insert: return "insert";
    case Change::Kind::Update: return "update";
    case Change::Kind::Delete: return "delete";
  }
  return "change";
}

}  // namespace

std::string rowversion_bytes(std::int64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[7 - i] = static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF);
  return out;
}

std::string show_cell(const Cell& c, const SqlType& type) {
  switch (c.type) {
    case Cell::Type::Null: return "NULL";
    case Cell::Type::Int: return std::to_string(c.i);
    case Cell::Type::Real: return std::to_string(c.d);
    case Cell::Type::Text: return "'" + c.s + "'";
    case Cell::Type::Blob:
      if (type.family() == Family::Exact) return decimal_text(c.s, type.scale);
      if (type.base == Base::UniqueIdentifier) return "'" + guid_to_text(c.s) + "'";
      return hex(c.s);
  }
  return "?";
}

void Engine::apply(const std::vector<Change>& changes, WriteState& s, LogRecord& rec, const std::vector<Lsn>* seqvals,
                   LockedKeys& keys, std::int64_t self_txn) {
  if (changes.empty())
    throw Error(ErrorKind::InvalidArgument, "a transaction needs at least one change; pass a non-empty list");
  std::map<std::string, const Table*> tables;
  std::map<std::int64_t, std::set<std::int64_t>> lob_captured;  // table -> captured LOB column ids
  std::map<std::int64_t, std::int64_t> modified;                // table -> key rows changed
  const long long lob_limit = std::stoll(cached_setting("max_text_repl_size"));
  std::int32_t command_id = 1;
  std::size_t seq_index = 0;
  auto take_seqval = [&]() {
    if (seqvals != nullptr) return seq_index < seqvals->size() ? (*seqvals)[seq_index++] : s.cursor.take();
    return s.cursor.take();
  };
  auto lock = [&](const Table& t, const Resolved& key) {
    const auto k = std::make_pair(t.object_id, encode_key(key));
    for (const auto& [id, other] : open_) {
      if (id != self_txn && other.keys.count(k) != 0) {
        throw Error(ErrorKind::EmuConstraint,
                    t.full_name() + ": the row with key " + show_key(t, key) +
                        " is changed by another open Transaction of this Emulator (SQL Server "
                        "would block); commit or roll that one back first");
      }
    }
    // The primary key cells in key order, which readers compare with their ranges; a heap's
    // row records none and so holds its whole table.
    std::vector<Cell> cells;
    for (const Column* c : t.heap ? std::vector<const Column*>{} : t.key()) {
      for (const auto& [col, cell] : key) {
        if (col->column_id == c->column_id) cells.push_back(cell);
      }
    }
    if (cells.size() != t.key().size()) cells.clear();
    keys.emplace(k, std::move(cells));
  };
  // A heap row has no key to hold: it holds its whole table for readers, under a name no other
  // change takes, so two open transactions may still write one heap.
  auto hold_heap = [&](const Table& t, std::size_t n) {
    keys.emplace(std::make_pair(t.object_id, "heap row " + std::to_string(self_txn) + "." + std::to_string(n)),
                 std::vector<Cell>{});
  };
  for (std::size_t n = 0; n < changes.size(); ++n) {
    const Change& ch = changes[n];
    auto it = tables.find(ch.table);
    if (it == tables.end()) {
      const Table& t = cached_table(ch.table);
      std::set<std::int64_t> lobs;
      for (const auto& in : instances(t.object_id)) {
        for (const auto& c : in.columns) {
          if (c.type.is_lob()) lobs.insert(c.column_id);
        }
      }
      lob_captured[t.object_id] = std::move(lobs);
      it = tables.emplace(ch.table, &t).first;
    }
    const Table& t = *it->second;
    const std::string context = std::string(kind_word(ch.kind)) + " #" + std::to_string(n + 1);
    auto check_lobs = [&](const Image& im) {
      if (lob_limit < 0) return;
      for (const auto& [id, cell] : im) {
        if (lob_captured[t.object_id].count(id) != 0 && static_cast<long long>(cell.s.size()) > lob_limit) {
          throw Error(ErrorKind::EmuConstraint,
                      t.full_name() + "." + t.by_id(id)->name + ": a captured value of " +
                          std::to_string(cell.s.size()) + " bytes exceeds max_text_repl_size " +
                          std::to_string(lob_limit) + " (error 7139); raise the setting",
                      7139);
        }
      }
    };
    auto fill_rowversion = [&](Image& im) {
      for (const auto& c : t.columns) {
        if (c.type.base == Base::RowVersion) set_cell(im, c.column_id, Cell::blob(rowversion_bytes(++s.rowversion)));
      }
    };
    RowOp op;
    op.table_id = t.object_id;
    Resolved row = resolve(t, ch.row, context);
    if (ch.kind == Change::Kind::Insert) {
      if (ch.old_key)
        throw Error(ErrorKind::InvalidArgument, t.full_name() + ": an insert takes (\"insert\", table, row)");
      refuse_computed(t, row);
      add_identity(*db_, t, row, context);
      Image im;
      for (const auto& c : t.columns) im.emplace_back(c.column_id, Cell::null());
      for (const auto& [c, cell] : row) set_cell(im, c->column_id, cell);
      fill_rowversion(im);
      compute(t, im);
      check_not_null(t, im, db_->path().stem().string(), "INSERT");
      if (t.heap) hold_heap(t, n);
      if (!t.heap) {
        const Resolved key = key_of(t, row, context);
        lock(t, key);
        if (fetch(*db_, t, key, false)) {
          throw Error(ErrorKind::EmuConstraint,
                      t.full_name() + ": a row with key " + show_key(t, key) +
                          " already exists (error 2627, primary key violation); update it or use another key",
                      2627);
        }
      }
      check_lobs(im);
      store_image(*db_, t, im);
      null_computed(t, im);
      op.kind = RowOp::Kind::Insert;
      op.after = std::move(im);
    } else if (ch.kind == Change::Kind::Delete) {
      if (ch.old_key)
        throw Error(ErrorKind::InvalidArgument, t.full_name() + ": a delete takes (\"delete\", table, key)");
      Resolved key = row;
      if (!t.heap) {
        key = key_of(t, row, context);
        if (row.size() != key.size()) {
          throw Error(ErrorKind::InvalidArgument,
                      t.full_name() + ": " + context + " must give exactly the key columns");
        }
      }
      auto f = fetch(*db_, t, key, t.heap);
      if (!f) {
        throw Error(ErrorKind::EmuConstraint, t.full_name() + ": no row with key " + show_key(t, key) + " to delete");
      }
      if (t.heap) {
        hold_heap(t, n);
      } else {
        lock(t, key);
      }
      remove_row(*db_, t, *f, key);
      null_computed(t, f->image);
      op.kind = RowOp::Kind::Delete;
      op.before = std::move(f->image);
    } else if (!ch.old_key) {
      if (t.heap) {
        throw Error(ErrorKind::InvalidArgument,
                    t.full_name() + " is a heap: update it with (\"update\", table, values, filter)");
      }
      const Resolved key = key_of(t, row, context);
      Resolved set;
      for (const auto& p : row) {
        if (p.first->key_ordinal == 0) set.push_back(p);
      }
      if (set.empty()) {
        throw Error(ErrorKind::InvalidArgument,
                    t.full_name() + ": " + context + " sets no column besides the key; give the columns to change");
      }
      refuse_identity_update(t, set);
      refuse_computed(t, set);
      auto f = fetch(*db_, t, key, false);
      if (!f)
        throw Error(ErrorKind::EmuConstraint, t.full_name() + ": no row with key " + show_key(t, key) + " to update");
      lock(t, key);
      Image im = f->image;
      for (const auto& [c, cell] : set) {
        set_cell(im, c->column_id, cell);
        op.set_columns.push_back(c->column_id);
      }
      fill_rowversion(im);
      compute(t, im);
      check_not_null(t, im, db_->path().stem().string(), "UPDATE");
      for (const auto& c : t.columns) {
        if (c.type.base == Base::RowVersion) op.set_columns.push_back(c.column_id);
      }
      check_lobs(im);
      rewrite_row(*db_, t, *f, key, im);
      null_computed(t, im);
      null_computed(t, f->image);
      op.kind = RowOp::Kind::Update;
      op.before = std::move(f->image);
      op.after = std::move(im);
    } else {
      const Resolved old = resolve(t, *ch.old_key, context + " (old key)");
      Resolved old_key = old;
      if (!t.heap) {
        old_key = key_of(t, old, context + " old key");
        if (old.size() != old_key.size()) {
          throw Error(ErrorKind::InvalidArgument,
                      t.full_name() + ": the old key of " + context + " must give exactly the key columns");
        }
      }
      refuse_identity_update(t, row);
      refuse_computed(t, row);
      auto f = fetch(*db_, t, old_key, t.heap);
      if (!f)
        throw Error(ErrorKind::EmuConstraint,
                    t.full_name() + ": no row with key " + show_key(t, old_key) + " to update");
      Image im = f->image;
      for (const auto& [c, cell] : row) {
        set_cell(im, c->column_id, cell);
        op.set_columns.push_back(c->column_id);
      }
      fill_rowversion(im);
      compute(t, im);
      check_not_null(t, im, db_->path().stem().string(), "UPDATE");
      check_lobs(im);
      if (t.heap) {
        if (row.empty()) throw Error(ErrorKind::InvalidArgument, t.full_name() + ": " + context + " sets no column");
        rewrite_row(*db_, t, *f, old_key, im);
        op.kind = RowOp::Kind::Update;
        for (const auto& c : t.columns) {
          if (c.type.base == Base::RowVersion) op.set_columns.push_back(c.column_id);
        }
      } else {
        const Resolved new_key = key_of(t, row, context + " new key");
        // A new key the collation calls equal to the old one respells the stored key ('n' to
        // 'N', 'a ' to 'a' under _CI_AS): the same row, so no other row can hold it (decision 1346).
        const bool respelled = encode_key(new_key) == encode_key(old_key);
        if (respelled && stored_key(t, f->image) == new_key) {
          throw Error(ErrorKind::InvalidArgument, t.full_name() + ": " + context + " keeps the key " +
                                                      show_key(t, old_key) +
                                                      "; use (\"update\", table, row) to change other columns");
        }
        lock(t, old_key);
        if (!respelled) lock(t, new_key);
        if (!respelled && fetch(*db_, t, new_key, false)) {
          throw Error(ErrorKind::EmuConstraint,
                      t.full_name() + ": a row with key " + show_key(t, new_key) +
                          " already exists (error 2627, primary key violation)",
                      2627);
        }
        remove_row(*db_, t, *f, old_key);
        store_image(*db_, t, im);
        op.kind = RowOp::Kind::KeyUpdate;
      }
      null_computed(t, im);
      null_computed(t, f->image);
      op.before = std::move(f->image);
      op.after = std::move(im);
    }
    op.seqval = take_seqval();
    op.command_id = command_id;
    command_id += op.kind == RowOp::Kind::KeyUpdate ? 2 : 1;
    // Inserts, deletes and key changes change the primary key's leading column: its statistics'
    // modification counter counts them (decision 1448).
    if (!t.heap && op.kind != RowOp::Kind::Update) ++modified[t.object_id];
    rec.ops.push_back(std::move(op));
  }
  for (const auto& [table_id, rows] : modified) count_modifications(*db_, table_id, rows);
}

}  // namespace mssqlcdc::emu
