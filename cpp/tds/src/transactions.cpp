// transactions.cpp: a connection's transaction over the emulator engine's open transactions
// (docs/emulator.md). SQL Server's rules, from the BEGIN/COMMIT/ROLLBACK/SAVE TRANSACTION pages:
// nested BEGINs only count, the outermost COMMIT commits, ROLLBACK undoes everything and sets
// @@TRANCOUNT to 0, ROLLBACK to a savepoint undoes the writes after it and leaves @@TRANCOUNT.
// The engine begins its transaction at the first write, so a transaction that writes nothing
// takes no LSN and writes nothing at its commit.
#include <algorithm>
#include <atomic>

#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "procedures.hpp"

namespace mssqlcdc::tds {
namespace {

[[noreturn]] void sql_error(int number, const std::string& text) { throw Error(ErrorKind::Sql, text, number); }

// Descriptors are unique within the server process, as a client only compares them.
std::uint64_t next_descriptor() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1);
}

}  // namespace

void Storage::write(const std::vector<emu::Change>& changes) {
  if (trancount_ == 0) {
    (void)writer().commit(changes, std::nullopt);
    return;
  }
  execute_open(changes);
  written_.push_back(changes);
}

void Storage::execute_open(const std::vector<emu::Change>& changes) {
  emu::Engine& engine = writer();
  if (!txn_) {
    txn_ = engine.begin(std::nullopt);
    reader_.set_own_lock_owner(engine.lock_owner(*txn_));  // its own locks do not block its reads
  }
  engine.execute(*txn_, changes);
}

void Storage::begin_transaction(const std::string& name) {
  if (trancount_ == 0) {
    descriptor_ = next_descriptor();
    name_ = name;
  }
  ++trancount_;
}

void Storage::end_transaction() {
  if (txn_) writer().rollback(*txn_);
  txn_.reset();
  reader_.set_own_lock_owner(std::nullopt);
  written_.clear();
  savepoints_.clear();
  trancount_ = 0;
  descriptor_ = 0;
  name_.clear();
}

void Storage::commit_transaction() {
  if (trancount_ == 0) sql_error(3902, "The COMMIT TRANSACTION request has no corresponding BEGIN TRANSACTION.");
  if (--trancount_ > 0) return;
  if (txn_) {
    const std::int64_t id = *txn_;
    txn_.reset();  // commit_open ends the engine's transaction whether it commits or throws
    try {
      (void)writer().commit_open(id, std::nullopt);
    } catch (...) {
      end_transaction();
      throw;
    }
  }
  end_transaction();
}

void Storage::rollback_transaction(const std::string& savepoint) {
  if (trancount_ == 0) sql_error(3903, "The ROLLBACK TRANSACTION request has no corresponding BEGIN TRANSACTION.");
  if (savepoint.empty() || savepoint == name_) {
    end_transaction();
    return;
  }
  const auto it =
      std::find_if(savepoints_.rbegin(), savepoints_.rend(), [&](const auto& s) { return s.first == savepoint; });
  if (it == savepoints_.rend()) {
    sql_error(6401, "Cannot roll back " + savepoint + ". No transaction or savepoint of that name was found.");
  }
  // The engine cannot undo part of its transaction: it is rolled back and the writes made
  // before the savepoint executed again in a new one.
  const std::size_t keep = it->second;
  savepoints_.erase(it.base(), savepoints_.end());
  std::vector<std::vector<emu::Change>> kept(written_.begin(), written_.begin() + static_cast<std::ptrdiff_t>(keep));
  if (txn_) writer().rollback(*txn_);
  txn_.reset();
  reader_.set_own_lock_owner(std::nullopt);
  written_.clear();
  for (const auto& changes : kept) {
    execute_open(changes);
    written_.push_back(changes);
  }
}

void Storage::save_transaction(const std::string& name) {
  if (trancount_ == 0) {
    sql_error(628, "Cannot issue SAVE TRANSACTION when there is no active transaction.");
  }
  savepoints_.emplace_back(name, written_.size());
}

}  // namespace mssqlcdc::tds
