// Open transactions' uncommitted rows as reads see them (decisions 1446, 1447). The oracle is
// Microsoft's documentation and plain expectations written here, never the emulator's output:
// - a transaction's own statements see its own changes before it commits (BEGIN TRANSACTION,
//   https://learn.microsoft.com/en-us/sql/t-sql/language-elements/begin-transaction-transact-sql);
// - READ UNCOMMITTED "specifies that statements can read rows that have been modified by other
//   transactions but not yet committed", and is not blocked by their exclusive locks; NOLOCK is
//   the same for one table
//   (https://learn.microsoft.com/en-us/sql/t-sql/statements/set-transaction-isolation-level-transact-sql,
//   https://learn.microsoft.com/en-us/sql/t-sql/queries/hints-transact-sql-table).
// - a rolled-back transaction's changes are gone
//   (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/rollback-transaction-transact-sql).
#include <gtest/gtest.h>

#include "emu/src/pending_rows.hpp"
#include "emu_test_util.hpp"
#include "mssqlcdc/emu/reader.hpp"

namespace mssqlcdc::emu::test {
namespace {

// Orders 1..5 ('new'), committed.
struct FiveOrders {
  TempFile f;
  std::unique_ptr<Engine> e;
  FiveOrders() : e(orders_file(f.path())) {
    std::vector<Change> rows;
    for (int i = 1; i <= 5; ++i) rows.push_back(insert("dbo.orders", {{"order_id", I(i)}, {"status", S("new")}}));
    e->commit(rows, kStart + kSecond);
  }
  // The transaction every test leaves open: inserts 0 (first in key order) and 9, updates 2 to
  // 'paid', deletes 4.
  std::int64_t open_one() {
    const auto txn = e->begin(kStart + 2 * kSecond);
    e->execute(txn, {insert("dbo.orders", {{"order_id", I(9)}, {"status", S("late")}}),
                     insert("dbo.orders", {{"order_id", I(0)}, {"status", S("early")}})});
    e->execute(txn, {update("dbo.orders", {{"order_id", I(2)}, {"status", S("paid")}}),
                     del("dbo.orders", {{"order_id", I(4)}})});
    return txn;
  }
};

// "id:status" of every row a table_rows read returns, in the order it returns them.
std::vector<std::string> rows_of(Reader& r, bool dirty = false) {
  auto cursor = r.table_rows("dbo.orders", CellRange{}, false, dirty);
  std::vector<std::string> out;
  for (std::vector<Cell> row; cursor->next(row);) out.push_back(std::to_string(row[0].i) + ":" + row[1].s);
  return out;
}

const std::vector<std::string> kCommitted{"1:new", "2:new", "3:new", "4:new", "5:new"};
const std::vector<std::string> kAsLeft{"0:early", "1:new", "2:paid", "3:new", "5:new", "9:late"};

TEST(EmuPendingRows, TheSessionsOwnReadSeesItsInsertsUpdatesAndDeletesInKeyOrder) {
  FiveOrders t;
  const auto txn = t.open_one();
  Reader own(t.f.path());
  own.set_own_lock_owner(t.e->lock_owner(txn));
  own.set_lock_timeout(0);  // its own locks never make it wait
  EXPECT_EQ(rows_of(own), kAsLeft);
}

TEST(EmuPendingRows, ADirtyReadSeesAnotherOpenTransactionsRowsWithoutWaiting) {
  FiveOrders t;
  (void)t.open_one();
  Reader other(t.f.path());
  other.set_lock_timeout(0);  // a read that waited would fail at once with 1222
  EXPECT_EQ(rows_of(other, true), kAsLeft);
}

TEST(EmuPendingRows, AReadThatIsNeitherDirtyNorTheWritersSeesTheCommittedRows) {
  FiveOrders t;
  (void)t.open_one();
  Reader other(t.f.path());
  other.set_isolation(Isolation::ReadUncommitted);  // waits for no lock; not asked to be dirty
  EXPECT_EQ(rows_of(other), kCommitted);
  Reader stranger(t.f.path());
  stranger.set_own_lock_owner(std::int64_t{999});  // no such transaction: sees nothing pending
  stranger.set_isolation(Isolation::ReadUncommitted);
  EXPECT_EQ(rows_of(stranger), kCommitted);
}

TEST(EmuPendingRows, AfterRollbackNoReadSeesTheRowsAndAfterCommitEveryReadSeesThem) {
  FiveOrders t;
  const auto rolled = t.open_one();
  const auto owner = t.e->lock_owner(rolled);
  t.e->rollback(rolled);
  Reader own(t.f.path());
  own.set_own_lock_owner(owner);
  EXPECT_EQ(rows_of(own), kCommitted);
  Reader dirty(t.f.path());
  EXPECT_EQ(rows_of(dirty, true), kCommitted);

  const auto kept = t.open_one();
  (void)t.e->commit_open(kept, kStart + 3 * kSecond);
  Reader after(t.f.path());
  EXPECT_EQ(rows_of(after), kAsLeft);
  EXPECT_EQ(rows_of(after, true), kAsLeft);  // once, not twice: the pending rows went with the commit
}

TEST(EmuPendingRows, AKeyUpdateShowsTheRowUnderItsNewKeyOnly) {
  FiveOrders t;
  const auto txn = t.e->begin(kStart + 2 * kSecond);
  t.e->execute(txn, {key_update("dbo.orders", {{"order_id", I(7)}}, {{"order_id", I(1)}})});
  Reader dirty(t.f.path());
  EXPECT_EQ(rows_of(dirty, true), (std::vector<std::string>{"2:new", "3:new", "4:new", "5:new", "7:new"}));
}

TEST(EmuPendingRows, ARowRecordedBeforeAnotherConnectionAddedAColumnShowsCommitted) {
  FiveOrders t;
  const auto txn = t.e->begin(kStart + 2 * kSecond);
  t.e->execute(txn, {update("dbo.orders", {{"order_id", I(2)}, {"status", S("paid")}})});
  Engine other(t.f.path());
  (void)other.add_column("dbo.orders", "note", "nvarchar(10)", kStart + 3 * kSecond);
  Reader dirty(t.f.path());
  auto cursor = dirty.table_rows("dbo.orders", CellRange{}, false, true);
  std::vector<std::string> seen;
  for (std::vector<Cell> row; cursor->next(row);) {
    EXPECT_EQ(row.size(), 4U);  // order_id, status, amount, note: never the old three
    seen.push_back(std::to_string(row[0].i) + ":" + row[1].s);
  }
  EXPECT_EQ(seen, kCommitted);
}

TEST(EmuPendingRows, KeysACaseInsensitiveCollationCallsEqualAreOnePendingKey) {
  TempFile f;
  auto e = empty_file(f.path());
  e->create_table("dbo.codes", {{"code", "nvarchar(10)"}, {"label", "nvarchar(10)"}}, {"code"});
  const Table t = [&] {
    Reader r(f.path());
    return r.objects().tables.at(0);
  }();
  EXPECT_EQ(pending_key(t, {Cell::text("abc")}), pending_key(t, {Cell::text("ABC ")}));
  EXPECT_NE(pending_key(t, {Cell::text("abc")}), pending_key(t, {Cell::text("abd")}));
}

}  // namespace
}  // namespace mssqlcdc::emu::test
