// The rules under decide(): the loss test, where a stream starts, the mode lock, the estimate.
#include <gtest/gtest.h>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/recovery.hpp"

namespace mssqlcdc::recovery {
namespace {

Lsn L(unsigned n) { return Lsn(0, n, 0); }
Offset at(unsigned n, std::string ts = "") { return Offset{L(n), std::move(ts)}; }

Observation source(std::optional<unsigned> max, std::vector<Instance> instances) {
  Observation o;
  if (max) o.max_lsn = L(*max);
  o.instances = std::move(instances);
  return o;
}

Instance instance(std::string name, unsigned start, std::optional<unsigned> min, std::string min_ts = "") {
  return Instance{std::move(name), L(start), min ? std::optional<Lsn>(L(*min)) : std::nullopt, std::move(min_ts)};
}

TEST(Lost, NothingIsLostWhenNothingWasCapturedAfterTheStart) {
  EXPECT_FALSE(lost(L(5), source(std::nullopt, {})));
  EXPECT_FALSE(lost(L(5), source(5, {})));  // max_lsn == x: no range, no instance needed
  EXPECT_FALSE(lost(L(5), source(4, {instance("dbo_t", 1, 9)})));
}

TEST(Lost, NothingIsLostWhileTheInstanceHasNoEstablishedMinLsn) {
  EXPECT_FALSE(lost(L(5), source(9, {instance("dbo_t", 1, std::nullopt)})));
  EXPECT_FALSE(lost(L(5), source(9, {Instance{"dbo_t", L(1), Lsn::zero(), ""}})));
}

TEST(Lost, ARangeStartingBelowMinLsnIsLostAndReportsWhereTheInstanceBegins) {
  const auto loss = lost(L(5), source(20, {instance("dbo_t", 1, 8, "2026-10-01T02:00:00.000")}));
  ASSERT_TRUE(loss);
  EXPECT_EQ(loss->low, L(8));
  EXPECT_EQ(loss->low_commit_ts, "2026-10-01T02:00:00.000");
  EXPECT_EQ(loss->instance, "dbo_t");
}

TEST(Lost, TheNextLsnEqualToMinLsnIsNotLost) {
  const Lsn x = L(8).decrement();
  EXPECT_FALSE(lost(x, source(20, {instance("dbo_t", 1, 8)})));
  EXPECT_TRUE(lost(x.decrement(), source(20, {instance("dbo_t", 1, 8)})));
}

TEST(Lost, ChecksTheNewestInstanceTheStreamHasReachedElseTheOldest) {
  const auto both = [](std::optional<unsigned> old_min, std::optional<unsigned> new_min) {
    return source(100, {instance("dbo_t_v1", 1, old_min), instance("dbo_t_v2", 50, new_min)});
  };
  // Before the newer instance's start, the older one is read.
  EXPECT_TRUE(lost(L(10), both(30, std::nullopt)));
  EXPECT_FALSE(lost(L(10), both(5, 90)));
  // Past it, the newer one is.
  EXPECT_EQ(lost(L(60), both(5, 90))->instance, "dbo_t_v2");
  EXPECT_FALSE(lost(L(60), both(99, 40)));
  // An older instance dropped before the stream read it is not listed: the newer is checked.
  EXPECT_EQ(lost(L(10), source(100, {instance("dbo_t_v2", 50, 55)}))->low, L(55));
}

TEST(Lost, RefusesToTestARangeWithoutAnyInstance) {
  try {
    (void)lost(L(5), source(9, {}));
    FAIL() << "tested without instances";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("capture instance"), std::string::npos);
  }
}

TEST(HasRange, IsTrueOnlyWhenMaxLsnIsAboveTheStart) {
  EXPECT_TRUE(has_range(at(5), L(6)));
  EXPECT_FALSE(has_range(at(5), L(5)));
  EXPECT_FALSE(has_range(at(5), L(4)));
  EXPECT_FALSE(has_range(at(5), std::nullopt));
}

StartInputs everything() {
  StartInputs in;
  in.state.generation = 2;
  in.state.snapshot = at(40, "2026-11-02T08:15:04.250");
  in.state.at = "2026-11-09T06:00:12+00:00";
  in.state.recovering = at(50);
  in.last_committed = at(60);
  in.has_metadata = true;
  in.live_batches_in_facts = true;
  in.bootstrap = true;
  in.starting_lsn = L(70);
  in.newest_known = at(80);
  in.live_checkpoint = "/c/_generations/2";
  return in;
}

TEST(ResolveStart, AnOpenRecoveryResumesFromItsRecordedStartFirst) {
  const auto r = resolve_start(everything());
  EXPECT_EQ(r.source, StartSource::Recovering);
  EXPECT_EQ(r.start, at(50));
}

TEST(ResolveStart, OtherwiseTheLastCommittedOffsetOfTheLiveCheckpoint) {
  auto in = everything();
  in.state.recovering.reset();
  const auto r = resolve_start(in);
  EXPECT_EQ(r.source, StartSource::Checkpoint);
  EXPECT_EQ(r.start, at(60));
}

TEST(ResolveStart, RefusesWhenFactsShowBatchesThatPythonCannotSeeInTheCheckpoint) {
  auto in = everything();
  in.state.recovering.reset();
  in.last_committed.reset();
  in.has_metadata = false;
  try {
    (void)resolve_start(in);
    FAIL() << "a healthy stream would have been treated as new";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(std::string(e.what()),
              "Python cannot see Spark's commits in /c/_generations/2: Python and Spark resolve the checkpoint to "
              "different directories, or it was deleted (a new checkpoint needs a new app_id)");
  }
}

TEST(ResolveStart, AGenerationAboveZeroWithoutCommitsStartsAtItsSnapshot) {
  auto in = everything();
  in.state.recovering.reset();
  in.last_committed.reset();  // metadata present: Spark started but committed nothing yet
  const auto r = resolve_start(in);
  EXPECT_EQ(r.source, StartSource::StateSnapshot);
  EXPECT_EQ(r.start, at(40, "2026-11-02T08:15:04.250"));
}

TEST(ResolveStart, GenerationZeroWithBootstrapStartsAtTheNewestKnownSnapshot) {
  StartInputs in;
  in.bootstrap = true;
  in.newest_known = at(80, "2026-09-28T14:03:12.117");
  const auto r = resolve_start(in);
  EXPECT_EQ(r.source, StartSource::Bootstrap);
  EXPECT_EQ(r.start, at(80, "2026-09-28T14:03:12.117"));
}

TEST(ResolveStart, GenerationZeroWithAnExplicitStartingLsnHasAnUnknownCommitTime) {
  StartInputs in;
  in.starting_lsn = L(70);
  const auto r = resolve_start(in);
  EXPECT_EQ(r.source, StartSource::StartingLsn);
  EXPECT_EQ(r.start, at(70, ""));
}

TEST(ResolveStart, OtherwiseThereIsNoStartToTest) {
  StartInputs in;
  in.bootstrap = true;  // a bootstrap about to be taken has nothing before it to lose
  const auto r = resolve_start(in);
  EXPECT_EQ(r.source, StartSource::None);
  EXPECT_FALSE(r.start);
  in.has_metadata = true;
  in.live_batches_in_facts = true;  // Spark started on it: no path mix-up
  EXPECT_EQ(resolve_start(in).source, StartSource::None);
}

OpenRow open_row(int g, Mode mode, unsigned s) { return OpenRow{g, mode, g == 0 ? "bootstrap" : "resnapshot", at(s)}; }

TEST(LockViolation, AnIncompleteChunkedOpenBlocksAFullRunWithBackfillAdvice) {
  const auto m =
      lock_violation(Mode::Full, {open_row(0, Mode::Chunked, 10)}, {}, source(5, {}), "bronze.orders", "orders-v1");
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, "bronze.orders: a chunked snapshot open at " + L(10).to_string() +
                    " (generation 0) has not completed; this run cannot use snapshot='full'. Call "
                    "backfill(bronze.orders, app_id=orders-v1, ...) until it returns 'done', and run to_delta "
                    "with snapshot='chunked' meanwhile.");
  EXPECT_FALSE(lock_violation(Mode::Chunked, {open_row(0, Mode::Chunked, 10)}, {}, source(5, {}), "t", "a"));
}

TEST(LockViolation, ACompletionAtOrAboveTheOpenReleasesIt) {
  EXPECT_FALSE(lock_violation(Mode::Full, {open_row(0, Mode::Chunked, 10)}, {CompletionRow{0, at(10)}}, source(5, {}),
                              "t", "a"));
  EXPECT_FALSE(lock_violation(Mode::Full, {open_row(0, Mode::Chunked, 10)}, {CompletionRow{3, at(12)}}, source(5, {}),
                              "t", "a"));
  EXPECT_TRUE(
      lock_violation(Mode::Full, {open_row(0, Mode::Chunked, 10)}, {CompletionRow{0, at(9)}}, source(5, {}), "t", "a"));
}

TEST(LockViolation, AFullOpenBlocksAChunkedRunUntilCleanupPassesIt) {
  const std::vector<OpenRow> opens = {open_row(1, Mode::Full, 10)};
  const auto m = lock_violation(Mode::Chunked, opens, {}, source(20, {instance("ci", 1, 5)}), "t", "a");
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, "t: a full snapshot open at " + L(10).to_string() +
                    " (generation 1) has not completed: it is being read, or the run reading it crashed. Rerun "
                    "with snapshot='full' to complete it, or wait until CDC cleanup passes " +
                    L(10).to_string() + "; then snapshot='chunked' may take its generation over.");
  EXPECT_FALSE(lock_violation(Mode::Chunked, opens, {}, source(20, {instance("ci", 1, 15)}), "t", "a"));
  EXPECT_FALSE(lock_violation(Mode::Full, opens, {}, source(20, {instance("ci", 1, 5)}), "t", "a"));
}

TEST(LockViolation, AFullOpenTakenOverByAChunkedOpenOfItsGenerationNoLongerBlocks) {
  const std::vector<OpenRow> opens = {open_row(1, Mode::Full, 10), open_row(1, Mode::Chunked, 12)};
  EXPECT_FALSE(lock_violation(Mode::Chunked, opens, {}, source(20, {instance("ci", 1, 5)}), "t", "a"));
}

TEST(LockViolation, NamesTheNewestBlockingOpen) {
  const std::vector<OpenRow> opens = {open_row(0, Mode::Chunked, 10), open_row(2, Mode::Chunked, 30),
                                      open_row(1, Mode::Chunked, 20)};
  const auto m = lock_violation(Mode::Full, opens, {}, source(5, {}), "t", "a");
  ASSERT_TRUE(m);
  EXPECT_NE(m->find(L(30).to_string() + " (generation 2)"), std::string::npos) << *m;
}

TEST(EstimateSnapshot, TakesTheMedianRateOfTheNewestFiveUsableSnapshots) {
  const std::vector<SnapshotTiming> timings = {{1000, 10'000}, {0, 5},         {2000, 10'000}, {100, 0},
                                               {3000, 10'000}, {4000, 10'000}, {5000, 10'000}, {9'000'000, 1}};
  const Estimate e = estimate_snapshot(1'000'000, timings, 1.0);
  ASSERT_TRUE(e.rows_per_second);
  EXPECT_DOUBLE_EQ(*e.rows_per_second, 300.0);  // rates 100..500 rows/s; the eighth is not among the five
  EXPECT_DOUBLE_EQ(*e.seconds, 1'000'000 / 300.0);
  EXPECT_EQ(e.fits, false);
  const Estimate even = estimate_snapshot(600, {{1000, 10'000}, {2000, 10'000}}, 1.0);
  EXPECT_DOUBLE_EQ(*even.rows_per_second, 150.0);
  EXPECT_DOUBLE_EQ(*even.seconds, 4.0);
  EXPECT_EQ(even.fits, true);
}

TEST(EstimateSnapshot, LeavesWhatItCannotKnowUnknown) {
  const Estimate e = estimate_snapshot(std::nullopt, {}, std::nullopt);
  EXPECT_EQ(e, Estimate{});
  const Estimate no_retention = estimate_snapshot(1000, {{1000, 1000}}, std::nullopt);
  EXPECT_DOUBLE_EQ(*no_retention.seconds, 1.0);
  EXPECT_FALSE(no_retention.fits);
}

TEST(EstimateSnapshot, DoesNotScaleFromSnapshotsOfFewerThanAThousandRows) {
  // The case: a one-row bootstrap read in 28 s, then a table of five rows.
  const Estimate tiny = estimate_snapshot(5, {{1, 28'000}, {999, 1000}}, 1.0);
  EXPECT_EQ(tiny.rows, 5);
  EXPECT_FALSE(tiny.rows_per_second);
  EXPECT_FALSE(tiny.seconds);
  EXPECT_FALSE(tiny.fits);
  const Estimate enough = estimate_snapshot(5000, {{1, 28'000}, {1000, 2000}}, 1.0);
  EXPECT_DOUBLE_EQ(*enough.rows_per_second, 500.0);  // only the thousand-row snapshot counts
}

}  // namespace
}  // namespace mssqlcdc::recovery
