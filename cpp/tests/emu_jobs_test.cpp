// The scheduled capture and cleanup jobs of the realistic profile (decision 1240), on explicit
// times: each expected time below is worked out by hand from the schedule, not by the engine.
#include <gtest/gtest.h>

#include "emu_test_util.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {
namespace {

struct MappingEntry {
  Micros end_utc;
  bool idle;
};

std::vector<MappingEntry> mapping(Engine& e) {
  std::vector<MappingEntry> out;
  ReadTxn r(e.db());
  auto st = e.db().prepare("SELECT tran_end_utc, tran_id FROM \"cdc.lsn_time_mapping\" ORDER BY start_lsn");
  while (st.step()) out.push_back({st.i64(0), st.blob(1) == std::string(10, '\0')});
  return out;
}

std::int64_t change_rows(Engine& e) {
  ReadTxn r(e.db());
  auto st = e.db().prepare("SELECT count(*) FROM \"cdc.dbo_orders_CT\"");
  st.step();
  return st.i64(0);
}

std::vector<Change> order(int id) { return {insert("dbo.orders", {{"order_id", I(id)}, {"status", S("new")}})}; }

// Manual capture with a job every 5 s, as the realistic profile sets it.
std::unique_ptr<Engine> job_file(const std::filesystem::path& p) {
  auto e = orders_file(p, "manual");
  e->configure("polling_interval_seconds", "5");
  return e;
}

TEST(EmuJobs, ACommitStaysInvisibleUntilTheFirstCaptureCycleAfterIt) {
  TempFile f;
  auto e = job_file(f.path());
  // The job started with the clock at kStart, so its cycles run at kStart + 5 s, + 10 s, ...
  const Lsn lsn = e->commit(order(1), kStart + 1 * kSecond);
  e->advance(kStart + 4 * kSecond);
  EXPECT_EQ(e->max_lsn(), std::nullopt);
  EXPECT_EQ(e->pending_capture(), 1);
  e->advance(kStart + 5 * kSecond);
  EXPECT_EQ(e->max_lsn(), lsn);
  EXPECT_EQ(e->pending_capture(), 0);
}

TEST(EmuJobs, ABurstLargerThanMaxtransTimesMaxscansLagsOverSeveralCycles) {
  TempFile f;
  auto e = job_file(f.path());
  e->configure("maxtrans", "2");
  e->configure("maxscans", "3");
  std::vector<std::vector<Change>> burst;
  for (int i = 1; i <= 14; ++i) burst.push_back(order(i));
  const auto lsns = e->commit_many(burst, {kStart + 1 * kSecond});
  // 2 x 3 = 6 transactions a cycle: 6 at +5 s, 6 more at +10 s, the last 2 at +15 s.
  e->advance(kStart + 5 * kSecond);
  EXPECT_EQ(e->max_lsn(), lsns[5]);
  e->advance(kStart + 10 * kSecond);
  EXPECT_EQ(e->max_lsn(), lsns[11]);
  EXPECT_EQ(e->pending_capture(), 2);
  e->advance(kStart + 15 * kSecond);
  EXPECT_EQ(e->max_lsn(), lsns[13]);
  EXPECT_EQ(change_rows(*e), 14);
}

TEST(EmuJobs, ALaterCommitRunsTheCyclesDueBeforeItWithoutAnAdvance) {
  TempFile f;
  auto e = job_file(f.path());
  const Lsn first = e->commit(order(1), kStart + 1 * kSecond);
  const Lsn second = e->commit(order(2), kStart + 7 * kSecond);  // the +5 s cycle ran before it
  EXPECT_EQ(e->max_lsn(), first);
  e->advance(kStart + 10 * kSecond);
  EXPECT_EQ(e->max_lsn(), second);
}

TEST(EmuJobs, ACommitAfterAnEmptyCycleIsCapturedByTheNextCycleNotAtTheNextIdleEntry) {
  TempFile f;
  auto e = job_file(f.path());
  e->configure("idle_interval_seconds", "300");
  e->commit(order(1), kStart + 1 * kSecond);
  e->advance(kStart + 15 * kSecond);  // cycles at +5 s (captures), +10 s and +15 s (empty)
  const Lsn late = e->commit(order(2), kStart + 20 * kSecond);
  e->advance(kStart + 24 * kSecond);
  EXPECT_EQ(e->pending_capture(), 1);
  e->advance(kStart + 25 * kSecond);  // the grid's next cycle, not the idle entry's +305 s
  EXPECT_EQ(e->max_lsn(), late);
  EXPECT_EQ(mapping(*e).size(), 2u);
}

TEST(EmuJobs, AnIdleJobWritesAnIdleEntryEveryIntervalOfIdleTimeOnTheCycleGrid) {
  TempFile f;
  auto e = job_file(f.path());
  e->configure("idle_interval_seconds", "300");
  e->commit(order(1), kStart + 1 * kSecond);
  e->advance(kStart + 1000 * kSecond);
  // The commit's entry at +1 s; then the first cycle at least 300 s after the newest entry:
  // +305 s, +605 s, +905 s (the next, +1205 s, is past the advance).
  const auto m = mapping(*e);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_FALSE(m[0].idle);
  EXPECT_EQ(m[0].end_utc, kStart + 1 * kSecond);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_TRUE(m[static_cast<std::size_t>(i)].idle);
    EXPECT_EQ(m[static_cast<std::size_t>(i)].end_utc, kStart + (5 + 300 * i) * kSecond);
  }
  EXPECT_EQ(e->last_time(), kStart + 1000 * kSecond);
}

TEST(EmuJobs, NoIdleEntryIsWrittenBeforeTheFirstEntry) {
  TempFile f;
  auto e = job_file(f.path());
  e->configure("idle_interval_seconds", "300");
  e->advance(kStart + 3600 * kSecond);
  EXPECT_EQ(e->max_lsn(), std::nullopt);
}

TEST(EmuJobs, TheCleanupJobRunsDailyAtItsTimeAndPurgesByRetention) {
  TempFile f;
  auto e = orders_file(f.path());  // immediate capture: the cleanup job runs in both modes
  e->configure("retention_minutes", "60");
  e->configure("cleanup_job_time", "02:00");
  // kStart is 2026-09-21 14:13:20 UTC; the job's next run is 2026-09-22 02:00:00 = kStart + 42400 s.
  e->commit(order(1), kStart + 1 * kSecond);
  const Lsn b = e->commit(order(2), kStart + 2 * kSecond);
  e->commit(order(3), kStart + 40'600 * kSecond);  // 01:30; retention keeps what is after 00:30
  e->advance(kStart + 42'399 * kSecond);
  EXPECT_EQ(change_rows(*e), 3);
  e->advance(kStart + 42'400 * kSecond);
  // The mark moves to the newest entry at or before 00:30, the second commit's; the first goes.
  EXPECT_EQ(change_rows(*e), 2);
  ReadTxn r(e->db());
  EXPECT_EQ(load_instance(e->db(), "dbo_orders").start_lsn, b);
}

TEST(EmuJobs, TheDefaultProfileRunsNoJob) {
  TempFile f;
  auto e = orders_file(f.path(), "manual");  // no polling interval: capture waits for capture()
  e->configure("idle_interval_seconds", "300");
  e->commit(order(1), kStart + 1 * kSecond);
  e->advance(kStart + 86'400 * kSecond);
  EXPECT_EQ(e->pending_capture(), 1);
  EXPECT_EQ(e->max_lsn(), std::nullopt);
  EXPECT_EQ(e->setting("polling_interval_seconds"), "null");
  EXPECT_EQ(e->setting("maxscans"), "10");
  EXPECT_EQ(e->setting("cleanup_job_time"), "null");
}

TEST(EmuJobs, AdvanceMovesTheClockAndRefusesAnEarlierTime) {
  TempFile f;
  auto e = job_file(f.path());
  EXPECT_EQ(e->advance(kStart + 60 * kSecond), kStart + 60 * kSecond);
  EXPECT_THROW(e->commit(order(1), kStart + 30 * kSecond), Error);
  EXPECT_THROW(e->advance(kStart + 30 * kSecond), Error);
}

TEST(EmuJobs, BadJobSettingsAreRefused) {
  TempFile f;
  auto e = job_file(f.path());
  EXPECT_THROW(e->configure("polling_interval_seconds", "0"), Error);
  EXPECT_THROW(e->configure("polling_interval_seconds", "86400"), Error);
  EXPECT_THROW(e->configure("maxscans", "0"), Error);
  EXPECT_THROW(e->configure("cleanup_job_time", "2:00"), Error);
  EXPECT_THROW(e->configure("cleanup_job_time", "24:00"), Error);
  EXPECT_NO_THROW(e->configure("cleanup_job_time", "23:59"));
}

}  // namespace
}  // namespace mssqlcdc::emu::test
