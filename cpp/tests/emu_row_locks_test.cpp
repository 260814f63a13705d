// Row locks of open transactions and the isolation level of source-table reads (decision 1335).
// The oracle is Microsoft's documentation:
// - SET LOCK_TIMEOUT: a statement waits for a lock up to the timeout, then error 1222; 0 does
//   not wait (https://learn.microsoft.com/en-us/sql/t-sql/statements/set-lock-timeout-transact-sql).
// - SET TRANSACTION ISOLATION LEVEL: READ COMMITTED reads are blocked by other transactions'
//   exclusive locks; SNAPSHOT reads see the data committed before the transaction started and
//   do not wait; SNAPSHOT needs ALLOW_SNAPSHOT_ISOLATION ON
//   (https://learn.microsoft.com/en-us/sql/t-sql/statements/set-transaction-isolation-level-transact-sql).
// - Error 3952's text: Database Engine events and errors 3000-3999
//   (https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/database-engine-events-and-errors-3000-to-3999).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t ms_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// Rows 1..10 of dbo.orders, committed.
struct TenOrders {
  TempFile f;
  std::unique_ptr<Engine> e;
  TenOrders() : e(orders_file(f.path())) {
    std::vector<Change> rows;
    for (int i = 1; i <= 10; ++i) rows.push_back(insert("dbo.orders", {{"order_id", I(i)}, {"status", S("new")}}));
    e->commit(rows, kStart + kSecond);
  }
  // The order ids read_table returns for [lo, hi), read by `r` at its session settings.
  std::vector<std::int64_t> ids(Reader& r, std::optional<Key> lo = std::nullopt, std::optional<Key> hi = std::nullopt) {
    ArrowArrayStream s{};
    TableReadOptions o;
    o.columns = std::vector<std::string>{"order_id", "status"};
    r.read_table("dbo.orders", KeyRange{std::move(lo), std::move(hi)}, o, &s);
    std::vector<std::int64_t> out;
    while (true) {
      ArrowArray batch{};
      EXPECT_EQ(s.get_next(&s, &batch), 0);
      if (batch.release == nullptr) break;
      const auto* v = static_cast<const std::int32_t*>(batch.children[0]->buffers[1]);
      for (std::int64_t i = 0; i < batch.length; ++i) out.push_back(v[i]);
      batch.release(&batch);
    }
    s.release(&s);
    return out;
  }
  // A reader of the file at `level` with lock timeout `ms`.
  [[nodiscard]] std::unique_ptr<Reader> reader(Isolation level, std::int64_t ms) const {
    auto r = std::make_unique<Reader>(f.path());
    r->set_isolation(level);
    r->set_lock_timeout(ms);
    return r;
  }
};

std::vector<std::int64_t> one_to(int n) {
  std::vector<std::int64_t> out;
  for (int i = 1; i <= n; ++i) out.push_back(i);
  return out;
}

TEST(EmuRowLocks, AReadCommittedReadOfARowAnOpenTransactionChangedFailsWith1222AfterTheLockTimeout) {
  TenOrders t;
  const auto txn = t.e->begin(kStart + 2 * kSecond);
  t.e->execute(txn, {update("dbo.orders", {{"order_id", I(5)}, {"status", S("paid")}})});
  auto r = t.reader(Isolation::ReadCommitted, 150);
  const auto start = Clock::now();
  const auto [number, message] = failure([&]() { t.ids(*r); });
  EXPECT_EQ(number, 1222);
  EXPECT_TRUE(message.starts_with("Lock request time out period exceeded.")) << message;
  EXPECT_GE(ms_since(start), 150);
}

TEST(EmuRowLocks, LockTimeoutZeroFailsAtOnce) {
  TenOrders t;
  const auto txn = t.e->begin(kStart + 2 * kSecond);
  t.e->execute(txn, {del("dbo.orders", {{"order_id", I(3)}})});
  auto r = t.reader(Isolation::ReadCommitted, 0);
  const auto start = Clock::now();
  EXPECT_EQ(error_number([&]() { t.ids(*r); }), 1222);
  EXPECT_LT(ms_since(start), 1000);
}

TEST(EmuRowLocks, AReadCommittedReadWaitsForTheWriterAndThenReadsItsCommittedRow) {
  TenOrders t;
  const auto txn = t.e->begin(kStart + 2 * kSecond);
  t.e->execute(txn, {del("dbo.orders", {{"order_id", I(5)}})});
  std::thread writer([&]() {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    t.e->commit_open(txn, kStart + 3 * kSecond);
  });
  auto r = t.reader(Isolation::ReadCommitted, 20'000);
  const auto start = Clock::now();
  const auto ids = t.ids(*r);
  const auto waited = ms_since(start);
  writer.join();
  EXPECT_EQ(ids, (std::vector<std::int64_t>{1, 2, 3, 4, 6, 7, 8, 9, 10}));  // row 5's delete, committed
  EXPECT_GE(waited, 250);
}

TEST(EmuRowLocks, AReadOfAKeyRangeWithoutLockedRowsDoesNotWait) {
  TenOrders t;
  const auto txn = t.e->begin(kStart + 2 * kSecond);
  t.e->execute(txn, {update("dbo.orders", {{"order_id", I(5)}, {"status", S("paid")}})});
  auto r = t.reader(Isolation::ReadCommitted, 0);
  EXPECT_EQ(t.ids(*r, std::nullopt, Key{I(5)}), one_to(4));  // [.., 5) holds no locked key
  EXPECT_EQ(t.ids(*r, Key{I(6)}, std::nullopt), (std::vector<std::int64_t>{6, 7, 8, 9, 10}));
  EXPECT_EQ(error_number([&]() { t.ids(*r, Key{I(5)}, Key{I(6)}); }), 1222);
}

TEST(EmuRowLocks, AnUncommittedInsertHoldsItsKeyAgainstReadsOfARangeHoldingIt) {
  TenOrders t;
  const auto txn = t.e->begin(kStart + 2 * kSecond);
  t.e->execute(txn, {insert("dbo.orders", {{"order_id", I(50)}, {"status", S("new")}})});
  auto r = t.reader(Isolation::ReadCommitted, 0);
  EXPECT_EQ(error_number([&]() { t.ids(*r, Key{I(20)}, Key{I(60)}); }), 1222);
  EXPECT_EQ(t.ids(*r, std::nullopt, Key{I(20)}), one_to(10));
}

TEST(EmuRowLocks, ASnapshotReadReturnsTheLastCommittedRowsWithoutWaiting) {
  TenOrders t;
  t.e->configure("allow_snapshot_isolation", "true");
  const auto txn = t.e->begin(kStart + 2 * kSecond);
  t.e->execute(txn, {del("dbo.orders", {{"order_id", I(5)}}),
                     insert("dbo.orders", {{"order_id", I(11)}, {"status", S("new")}})});
  auto r = t.reader(Isolation::Snapshot, 0);
  EXPECT_EQ(t.ids(*r), one_to(10));  // neither the delete nor the insert: they are not committed
}

TEST(EmuRowLocks, ASnapshotReadIsRefusedWith3952WhenTheDatabaseDoesNotAllowSnapshotIsolation) {
  TenOrders t;  // allow_snapshot_isolation is off, as ALLOW_SNAPSHOT_ISOLATION is by default
  auto r = t.reader(Isolation::Snapshot, -1);
  r->act_as(std::nullopt, "shop");
  const auto [number, message] = failure([&]() { t.ids(*r); });
  EXPECT_EQ(number, 3952);
  EXPECT_EQ(message,
            "Snapshot isolation transaction failed accessing database 'shop' because snapshot isolation is not "
            "allowed in this database. Use ALTER DATABASE to allow snapshot isolation.");
}

TEST(EmuRowLocks, TheKeyPlanningReadsWaitForLockedRowsToo) {
  TenOrders t;
  const auto txn = t.e->begin(kStart + 2 * kSecond);
  t.e->execute(txn, {update("dbo.orders", {{"order_id", I(7)}, {"status", S("paid")}})});
  auto r = t.reader(Isolation::ReadCommitted, 0);
  EXPECT_EQ(error_number([&]() { (void)r->key_extent("dbo.orders", std::nullopt); }), 1222);
  EXPECT_EQ(error_number([&]() { (void)r->key_tiles("dbo.orders", 3, 0, std::nullopt); }), 1222);
  EXPECT_EQ(error_number([&]() { (void)r->key_buckets("dbo.orders", 2, std::nullopt, std::nullopt, std::nullopt); }),
            1222);
  EXPECT_EQ(error_number([&]() { (void)r->next_key("dbo.orders", Key{I(6)}, std::nullopt); }), 1222);
  EXPECT_EQ(r->next_key("dbo.orders", Key{I(7)}, std::nullopt).value_or(Key{}).size(), 1u);  // above 7: free
}

TEST(EmuRowLocks, ARollbackReleasesTheRowsAtOnce) {
  TenOrders t;
  const auto txn = t.e->begin(kStart + 2 * kSecond);
  t.e->execute(txn, {update("dbo.orders", {{"order_id", I(5)}, {"status", S("paid")}})});
  t.e->rollback(txn);
  auto r = t.reader(Isolation::ReadCommitted, 0);
  EXPECT_EQ(t.ids(*r), one_to(10));
}

TEST(EmuRowLocks, AnEngineThatGoesAwayReleasesItsOpenTransactionsRows) {
  TenOrders t;
  {
    Engine other(t.f.path());
    const auto txn = other.begin(kStart + 2 * kSecond);
    other.execute(txn, {update("dbo.orders", {{"order_id", I(5)}, {"status", S("paid")}})});
    auto r = t.reader(Isolation::ReadCommitted, 0);
    EXPECT_EQ(error_number([&]() { t.ids(*r); }), 1222);  // another Engine's rows hold too
  }
  auto r = t.reader(Isolation::ReadCommitted, 0);
  EXPECT_EQ(t.ids(*r), one_to(10));
}

TEST(EmuRowLocks, ALockRowWhoseOwnerHoldsNoByteBlocksNothing) {
  TenOrders t;
  // What a crashed process leaves: a row of an owner that holds no lock byte.
  t.e->db().exec(
      "INSERT INTO emu_row_locks (owner, table_id, key, cells) SELECT 999, object_id, 'k', x'' FROM "
      "\"sys.tables\" WHERE name = 'orders'");
  auto r = t.reader(Isolation::ReadCommitted, 0);
  EXPECT_EQ(t.ids(*r), one_to(10));
}

TEST(EmuRowLocks, ReadUncommittedAndTheEmulatorsOwnLookDoNotWait) {
  TenOrders t;
  const auto txn = t.e->begin(kStart + 2 * kSecond);
  t.e->execute(txn, {update("dbo.orders", {{"order_id", I(5)}, {"status", S("paid")}})});
  auto r = t.reader(Isolation::ReadUncommitted, 0);
  EXPECT_EQ(t.ids(*r), one_to(10));
  auto c = t.reader(Isolation::ReadCommitted, 0);
  ArrowArrayStream s{};
  TableReadOptions o;
  o.inspect = true;
  o.fire_hooks = false;
  EXPECT_NO_THROW(c->read_table("dbo.orders", KeyRange{}, o, &s));
  s.release(&s);
}

TEST(EmuRowLocks, AHeapRowAnOpenTransactionChangedHoldsTheWholeHeap) {
  TempFile f;
  auto e = empty_file(f.path());
  e->create_table("dbo.log", {{"id", "int"}, {"note", "nvarchar(10)"}}, {});
  e->commit({insert("dbo.log", {{"id", I(1)}, {"note", S("a")}})}, kStart + kSecond);
  const auto txn = e->begin(kStart + 2 * kSecond);
  e->execute(txn, {insert("dbo.log", {{"id", I(2)}, {"note", S("b")}})});
  Reader r(f.path());
  r.set_lock_timeout(0);
  ArrowArrayStream s{};
  EXPECT_EQ(error_number([&]() { r.read_table("dbo.log", KeyRange{}, TableReadOptions{}, &s); }), 1222);
}

TEST(EmuRowLocks, AReaderWithoutALockTimeoutWaitsUpToTheLockTimeoutSetting) {
  TenOrders t;
  t.e->configure("lock_timeout_ms", "100");
  const auto txn = t.e->begin(kStart + 2 * kSecond);
  t.e->execute(txn, {update("dbo.orders", {{"order_id", I(5)}, {"status", S("paid")}})});
  auto r = t.reader(Isolation::ReadCommitted, -1);
  const auto start = Clock::now();
  EXPECT_EQ(error_number([&]() { t.ids(*r); }), 1222);
  EXPECT_GE(ms_since(start), 100);
}

}  // namespace
}  // namespace mssqlcdc::emu::test
