// Read committed change reads and the schema locks of disable_cdc (decision 1160).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {
namespace {

// The order_id values of the next batch of a change stream, or nothing at its end.
std::optional<std::vector<std::int32_t>> next_ids(ArrowArrayStream* s) {
  ArrowArray batch{};
  EXPECT_EQ(s->get_next(s, &batch), 0);
  if (batch.release == nullptr) return std::nullopt;
  std::vector<std::int32_t> ids;
  const auto* values = static_cast<const std::int32_t*>(batch.children[5]->buffers[1]);  // order_id
  for (std::int64_t r = 0; r < batch.length; ++r) ids.push_back(values[r]);
  batch.release(&batch);
  return ids;
}

// disable_cdc on dbo_orders fails as SQL Server's lock timeout does.
void expect_lock_timeout(Engine& e) {
  try {
    e.disable_cdc("dbo_orders");
    FAIL() << "disable_cdc did not wait for the open read";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::EmuBusy);
    EXPECT_EQ(err.number(), 1222);
    EXPECT_TRUE(std::string(err.what()).starts_with("Lock request time out period exceeded.")) << err.what();
  }
}

struct SixCommits {
  TempFile f;
  std::unique_ptr<Engine> e;
  std::vector<Lsn> commits;
  SixCommits() : e(orders_file(f.path())) {
    for (int i = 0; i < 6; ++i)
      commits.push_back(e->commit({insert("dbo.orders", {{"order_id", I(i)}})}, kStart + (i + 1) * kSecond));
  }
  // A read of two-row batches whose first batch is consumed, with the lock timeout given.
  ArrowArrayStream started(Reader& r, const std::string& lock_timeout_ms) {
    e->configure("lock_timeout_ms", lock_timeout_ms);
    ArrowArrayStream s = read(r, 2);
    EXPECT_EQ(next_ids(&s), (std::vector<std::int32_t>{0, 1}));
    return s;
  }
  ArrowArrayStream read(Reader& r, std::int64_t batch_rows) {
    ChangeReadOptions o;
    o.batch_rows = batch_rows;
    ArrowArrayStream s{};
    r.read_changes("dbo_orders", commits.front(), commits.back(), o, &s);
    return s;
  }
};

TEST(EmuConcurrency, ACleanupCommittedBetweenTwoBatchesRemovesTheRowsTheReadHasNotReached) {
  SixCommits w;
  Reader r(w.f.path());
  ArrowArrayStream s = w.read(r, 2);
  EXPECT_EQ(next_ids(&s), (std::vector<std::int32_t>{0, 1}));
  Engine other(w.f.path());
  other.cleanup("dbo_orders", w.commits[4]);  // deletes the changes of commits 0..3
  EXPECT_EQ(next_ids(&s), (std::vector<std::int32_t>{4, 5}));
  EXPECT_EQ(next_ids(&s), std::nullopt);
  s.release(&s);
}

TEST(EmuConcurrency, DisableWaitsForAnOpenReadAndTimesOutWithError1222) {
  SixCommits w;
  Reader r(w.f.path());
  ArrowArrayStream s = w.started(r, "30");
  expect_lock_timeout(*w.e);
  // The instance is untouched: the read goes on to its end, and then disable_cdc succeeds.
  EXPECT_EQ(next_ids(&s), (std::vector<std::int32_t>{2, 3}));
  EXPECT_EQ(next_ids(&s), (std::vector<std::int32_t>{4, 5}));
  EXPECT_EQ(next_ids(&s), std::nullopt);
  w.e->disable_cdc("dbo_orders");
  s.release(&s);
  EXPECT_TRUE(r.capture_instances("dbo.orders").empty());
}

TEST(EmuConcurrency, AWaitingDisableProceedsOnceTheReadIsReleased) {
  SixCommits w;
  Reader r(w.f.path());
  ArrowArrayStream s = w.started(r, "-1");
  std::string failure;
  std::thread disabler([&]() {
    try {
      Engine other(w.f.path());
      other.disable_cdc("dbo_orders");
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  // Whatever the thread has reached, the read sees every row: the lock keeps the change table.
  EXPECT_EQ(next_ids(&s), (std::vector<std::int32_t>{2, 3}));
  s.release(&s);  // released early: the lock goes with it
  disabler.join();
  EXPECT_EQ(failure, "");
  EXPECT_TRUE(r.capture_instances("dbo.orders").empty());
}

TEST(EmuConcurrency, ARowCursorOfAChangeTableHoldsItsInstanceUntilItEnds) {
  SixCommits w;
  w.e->configure("lock_timeout_ms", "0");
  Reader r(w.f.path());
  auto cursor = r.change_table_rows("dbo_orders", CellRange{});
  std::vector<Cell> row;
  ASSERT_TRUE(cursor->next(row));
  expect_lock_timeout(*w.e);
  while (cursor->next(row)) {}
  w.e->disable_cdc("dbo_orders");
}

TEST(EmuConcurrency, LockTimeoutTakesMinusOneToTheIntMaximum) {
  SixCommits w;
  EXPECT_EQ(w.e->setting("lock_timeout_ms"), "10000");
  EXPECT_THROW(w.e->configure("lock_timeout_ms", "-2"), Error);
  EXPECT_THROW(w.e->configure("lock_timeout_ms", "2147483648"), Error);
  w.e->configure("lock_timeout_ms", "2147483647");
}

}  // namespace
}  // namespace mssqlcdc::emu::test
