// row_locks.cpp: row locks recorded in the file, owners alive by their byte locks, and the
// wait of a READ COMMITTED read polled until a deadline as schema_lock.cpp polls.
#include "row_locks.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/error.hpp"
#include "pending_rows.hpp"

namespace mssqlcdc::emu {

namespace {

constexpr const char* kTable =
    "CREATE TABLE IF NOT EXISTS emu_row_locks (owner INTEGER NOT NULL, table_id INTEGER NOT NULL, key BLOB NOT NULL, "
    "cells BLOB NOT NULL, PRIMARY KEY (owner, table_id, key)) WITHOUT ROWID; "
    "CREATE INDEX IF NOT EXISTS emu_row_locks_table ON emu_row_locks (table_id)";

void put_u64(std::string& out, std::uint64_t v) {
  for (int b = 0; b < 8; ++b) out.push_back(static_cast<char>((v >> (8 * b)) & 0xFF));
}

std::uint64_t get_u64(const std::string& in, std::size_t& at) {
  if (at + 8 > in.size()) throw Error(ErrorKind::Corrupt, "a row lock's key cells are cut short");
  std::uint64_t v = 0;
  for (int b = 0; b < 8; ++b) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[at + b])) << (8 * b);
  at += 8;
  return v;
}

}  // namespace

std::string encode_cells(const std::vector<Cell>& cells) {
  std::string out;
  for (const auto& c : cells) {
    out.push_back(static_cast<char>(c.type));
    switch (c.type) {
      case Cell::Type::Null: break;
      case Cell::Type::Int: put_u64(out, static_cast<std::uint64_t>(c.i)); break;
      case Cell::Type::Real: {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &c.d, sizeof bits);
        put_u64(out, bits);
        break;
      }
      case Cell::Type::Text:
      case Cell::Type::Blob:
        put_u64(out, c.s.size());
        out += c.s;
        break;
    }
  }
  return out;
}

std::vector<Cell> decode_cells(const std::string& in) {
  std::vector<Cell> out;
  std::size_t at = 0;
  while (at < in.size()) {
    Cell c;
    c.type = static_cast<Cell::Type>(in[at++]);
    switch (c.type) {
      case Cell::Type::Null: break;
      case Cell::Type::Int: c.i = static_cast<std::int64_t>(get_u64(in, at)); break;
      case Cell::Type::Real: {
        const std::uint64_t bits = get_u64(in, at);
        std::memcpy(&c.d, &bits, sizeof bits);
        break;
      }
      case Cell::Type::Text:
      case Cell::Type::Blob: {
        const auto n = static_cast<std::size_t>(get_u64(in, at));
        if (at + n > in.size()) throw Error(ErrorKind::Corrupt, "a row lock's key cells are cut short");
        c.s = in.substr(at, n);
        at += n;
        break;
      }
      default: throw Error(ErrorKind::Corrupt, "a row lock's key cells hold an unknown type");
    }
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

// SQLite's order of stored values, the order the source tables' keys sort in: NULL, numbers,
// text, blobs.
int rank(const Cell& c) {
  switch (c.type) {
    case Cell::Type::Null: return 0;
    case Cell::Type::Int:
    case Cell::Type::Real: return 1;
    case Cell::Type::Text: return 2;
    case Cell::Type::Blob: return 3;
  }
  return 4;
}

}  // namespace

int compare_cells(const Cell& a, const Cell& b, const Collation* collation) {
  if (rank(a) != rank(b)) return rank(a) < rank(b) ? -1 : 1;
  switch (a.type) {
    case Cell::Type::Null: return 0;
    case Cell::Type::Int:
    case Cell::Type::Real: {
      if (a.type == Cell::Type::Int && b.type == Cell::Type::Int) return a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
      const double x = a.type == Cell::Type::Int ? static_cast<double>(a.i) : a.d;
      const double y = b.type == Cell::Type::Int ? static_cast<double>(b.i) : b.d;
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    case Cell::Type::Text:
      if (collation != nullptr) return collation->compare(a.s, b.s);
      [[fallthrough]];
    case Cell::Type::Blob: {
      const int r = a.s.compare(b.s);
      return r < 0 ? -1 : (r > 0 ? 1 : 0);
    }
  }
  return 0;
}

namespace {

// The key against a bound, on the bound's leading columns.
int compare_prefix(const std::vector<Cell>& key, const std::vector<Cell>& bound) {
  const std::size_t n = std::min(key.size(), bound.size());
  for (std::size_t i = 0; i < n; ++i) {
    const int r = compare_cells(key[i], bound[i]);
    if (r != 0) return r;
  }
  return 0;
}

bool in_range(const std::vector<Cell>& key, const LockRange& range) {
  if (range.whole || key.empty()) return true;  // a heap's row holds its whole table
  if (range.lo) {
    const int r = compare_prefix(key, *range.lo);
    if (r < 0 || (r == 0 && !range.lo_inclusive)) return false;
  }
  if (range.hi) {
    const int r = compare_prefix(key, *range.hi);
    if (r > 0 || (r == 0 && !range.hi_inclusive)) return false;
  }
  return true;
}

bool has_lock_table(Db& db) {
  auto st = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'emu_row_locks'");
  return st.step();
}

// The owners of rows of `table_id` in `range`, read in the transaction open on `db`.
std::set<std::int64_t> holders(Db& db, std::int64_t table_id, const LockRange& range) {
  std::set<std::int64_t> out;
  if (!has_lock_table(db)) return out;
  auto st = db.prepare("SELECT owner, cells FROM emu_row_locks WHERE table_id = ?");
  st.bind(1, table_id);
  while (st.step()) {
    const std::int64_t owner = st.i64(0);
    if (out.count(owner) == 0 && in_range(decode_cells(st.blob(1)), range)) out.insert(owner);
  }
  return out;
}

}  // namespace

bool lock_owner_alive(const std::filesystem::path& path, std::int64_t owner) {
  return !SchemaLock::try_take(path, kOwnerBase + owner, SchemaLock::Mode::Shared).has_value();
}

OwnerLock::OwnerLock(const std::filesystem::path& database, std::int64_t owner)
    : lock_(database, kOwnerBase + owner, SchemaLock::Mode::Exclusive, 0), owner_(owner) {}

std::int64_t new_lock_owner(Db& db, const std::filesystem::path& database) {
  db.exec(kTable);
  std::vector<std::int64_t> dead;
  {
    auto st = db.prepare("SELECT DISTINCT owner FROM emu_row_locks");
    while (st.step()) {
      if (!lock_owner_alive(database, st.i64(0))) dead.push_back(st.i64(0));
    }
  }
  for (const std::int64_t owner : dead) drop_row_locks(db, owner);
  const auto next = meta_get(db, "next_lock_owner");
  const std::int64_t owner = next && !next->empty() ? std::stoll(*next) : 1;
  meta_set(db, "next_lock_owner", std::to_string(owner + 1));
  return owner;
}

void record_row_locks(Db& db, std::int64_t owner, const LockedKeys& keys) {
  drop_row_locks(db, owner);
  for (const auto& [id, cells] : keys) {
    db.prepare("INSERT INTO emu_row_locks (owner, table_id, key, cells) VALUES (?, ?, ?, ?)")
        .bind(1, owner)
        .bind(2, id.first)
        .bind_blob(3, id.second)
        .bind_blob(4, encode_cells(cells))
        .run();
  }
}

void drop_row_locks(Db& db, std::int64_t owner) {
  drop_pending_rows(db, owner);
  if (!has_lock_table(db)) return;
  db.prepare("DELETE FROM emu_row_locks WHERE owner = ?").bind(1, owner).run();
}

void before_source_read(Db& db, const std::filesystem::path& path, Isolation level, std::int64_t table_id,
                        const std::string& table, const LockRange& range, std::int64_t timeout_ms,
                        const std::string& database, bool in_txn, std::optional<std::int64_t> own_owner) {
  if (level == Isolation::ReadUncommitted) return;
  if (level == Isolation::Snapshot) {
    const bool allowed = [&]() {
      if (in_txn) return get_setting(db, "allow_snapshot_isolation") == "true";
      ReadTxn r(db);
      const bool on = get_setting(db, "allow_snapshot_isolation") == "true";
      r.end();
      return on;
    }();
    if (!allowed) {
      throw Error(ErrorKind::EmuArgument,
                  "Snapshot isolation transaction failed accessing database '" + database +
                      "' because snapshot isolation is not allowed in this database. Use ALTER DATABASE to allow "
                      "snapshot isolation.",
                  3952);
    }
    return;  // the read transaction sees the last committed rows and waits for no row lock
  }
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    std::set<std::int64_t> owners;
    if (in_txn) {
      owners = holders(db, table_id, range);
    } else {
      ReadTxn r(db);
      owners = holders(db, table_id, range);
      r.end();
    }
    std::int64_t blocker = 0;
    for (const std::int64_t owner : owners) {
      if (owner != own_owner && lock_owner_alive(path, owner)) {
        blocker = owner;
        break;
      }
    }
    if (blocker == 0) return;
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    if (timeout_ms >= 0 && waited >= timeout_ms) {
      throw Error(ErrorKind::EmuBusy,
                  "Lock request time out period exceeded. (error 1222): a READ COMMITTED read of " + table +
                      " met rows an open transaction holds (lock owner " + std::to_string(blocker) + ") and waited " +
                      std::to_string(timeout_ms) +
                      " ms; commit or roll that transaction back, raise the lock timeout, or read at SNAPSHOT "
                      "isolation",
                  1222);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

}  // namespace mssqlcdc::emu
