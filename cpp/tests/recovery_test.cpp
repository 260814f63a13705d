// decide() and conclude() over every branch (the mode lock, the loss test, the generation walk
// and its reuse rules, the guards) and the state each crash leaves behind. LSNs are L(n); the
// source's cleanup is at `min`.
#include <gtest/gtest.h>

#include <cmath>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/recovery.hpp"

namespace mssqlcdc::recovery {
namespace {

Lsn L(unsigned n) { return Lsn(0, n, 0); }
std::string S(unsigned n) { return L(n).to_string(); }
Offset at(unsigned n, std::string ts = "") { return Offset{L(n), std::move(ts)}; }

constexpr const char* kNow = "2026-11-20T12:00:00+00:00";

// A stream of generation 0 that last read L(10) (committed at T10); since then capture went on
// to L(100) and cleanup moved the instance's start to L(50) (committed at T50).
DecideInputs purged_stream() {
  DecideInputs in;
  in.target = "bronze.orders";
  in.app_id = "orders-v1";
  in.start = at(10, "2026-11-01T10:00:00.000");
  in.observation.max_lsn = L(100);
  in.observation.instances = {Instance{"dbo_orders", L(1), L(50), "2026-11-05T00:00:00.000"}};
  in.now = kNow;
  return in;
}

// purged_stream() after a run that crashed while recovering from the stream's start.
DecideInputs crashed_recovery() {
  auto in = purged_stream();
  in.state.recovering = at(10, "2026-11-01T10:00:00.000");
  return in;
}

// crashed_recovery() after the crashed run opened its full snapshot of generation 1 at L(90).
DecideInputs crashed_full_open() {
  auto in = crashed_recovery();
  in.opens = {OpenRow{1, Mode::Full, "resnapshot", at(90)}};
  return in;
}

// A chunked run of purged_stream() that finds the `mode` snapshot of generation 1 opened at L(n).
DecideInputs chunked_meeting_open(Mode mode, unsigned n) {
  auto in = purged_stream();
  in.mode = Mode::Chunked;
  in.opens = {OpenRow{1, mode, "resnapshot", at(n)}};
  return in;
}

State generation(int g, unsigned snapshot, std::string made_at) {
  State s;
  s.generation = g;
  s.snapshot = at(snapshot, "2026-11-02T08:15:04.250");
  s.at = std::move(made_at);
  return s;
}

TEST(Decide, ANewPurgeInFullModeTakesASnapshotIntoTheNextGeneration) {
  const Decision d = decide(purged_stream());
  EXPECT_EQ(d.action, Action::Resnapshot);
  EXPECT_EQ(d.generation, 0);
  EXPECT_EQ(d.next_generation, 1);
  EXPECT_EQ(d.start, at(10, "2026-11-01T10:00:00.000"));
  ASSERT_TRUE(d.low);
  EXPECT_EQ(d.low->low, L(50));
  EXPECT_EQ(d.lost_from_ts, "2026-11-01T10:00:00.000");
  EXPECT_EQ(d.lost_to_ts, "2026-11-05T00:00:00.000");
  EXPECT_EQ(d.reuse.kind, ReuseKind::None);
  EXPECT_EQ(d.steps, (std::vector<Step>{Step::WriteFullOpen, Step::TakeSnapshot, Step::WriteEvent}));
  EXPECT_TRUE(d.interval_ok);
  EXPECT_EQ(d.error_kind, DecisionError::None);
  EXPECT_EQ(d.warning, "bronze.orders: CDC cleanup purged the changes after " + S(10) +
                           " (last read 2026-11-01T10:00:00.000); capture instance dbo_orders now begins at " + S(50) +
                           " (2026-11-05T00:00:00.000). Recovering into generation 1, sink app_id orders-v1.g1: "
                           "taking a full snapshot.");
}

TEST(Decide, ANewPurgeInChunkedModeOpensAChunkedSnapshotAndWritesNoEvent) {
  auto in = purged_stream();
  in.mode = Mode::Chunked;
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::Resnapshot);
  EXPECT_EQ(d.steps, std::vector<Step>{Step::OpenChunked});
  EXPECT_NE(d.warning.find("sink app_id orders-v1.g1: opening a chunked snapshot."), std::string::npos) << d.warning;
}

TEST(Decide, AStartWithAnUnknownCommitTimeLeavesTheGapsStartUnknown) {
  auto in = purged_stream();
  in.start = at(10);
  const Decision d = decide(in);
  EXPECT_FALSE(d.lost_from_ts);
  EXPECT_NE(d.warning.find("(last read unknown)"), std::string::npos);
}

TEST(Decide, NoStartMeansNothingToCheck) {
  auto in = purged_stream();
  in.start.reset();
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::None);
  EXPECT_EQ(d.next_generation, 0);
  EXPECT_FALSE(d.low);
}

TEST(Decide, AnUnpurgedStartNeedsNothing) {
  auto in = purged_stream();
  in.start = Offset{L(50).decrement(), ""};  // its next LSN is min_lsn itself
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::None);
  EXPECT_TRUE(d.steps.empty());
}

TEST(Decide, NothingCapturedAfterTheStartIsNeverAPurgeEvenWithoutInstances) {
  auto in = purged_stream();
  in.observation = Observation{L(10), {}};
  EXPECT_EQ(decide(in).action, Action::None);
}

TEST(Decide, AStaleRecoveringIsClearedWhenTheStartIsNotPurged) {
  auto in = purged_stream();
  in.state.recovering = at(60);
  in.start = at(60);
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::None);
  EXPECT_EQ(d.steps, std::vector<Step>{Step::ClearRecovering});
}

TEST(Decide, ThePurgeOfAGenerationAboveZeroOpensTheOneAfterIt) {
  auto in = purged_stream();
  in.state = generation(3, 5, "2026-11-01T00:00:00+00:00");
  const Decision d = decide(in);
  EXPECT_EQ(d.generation, 3);
  EXPECT_EQ(d.next_generation, 4);
  EXPECT_NE(d.warning.find("generation 4, sink app_id orders-v1.g4"), std::string::npos);
}

TEST(Decide, TheAntiLoopGuardRefusesASecondPurgeWithinTheIntervalOfTheLastResnapshot) {
  auto in = purged_stream();
  in.state = generation(1, 5, "2026-11-15T12:00:00+00:00");  // five days before now
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::Blocked);
  EXPECT_FALSE(d.interval_ok);
  EXPECT_EQ(d.error_kind, DecisionError::DataLoss);
  EXPECT_EQ(d.next_generation, 2);
  EXPECT_TRUE(d.steps.empty());
  EXPECT_EQ(d.error_message,
            "bronze.orders: the changes after " + S(10) +
                " were purged again within resnapshot_interval_days=7 of the previous re-snapshot at "
                "2026-11-15T12:00:00+00:00. The stream does not keep up with the CDC retention, stops for longer "
                "than it again and again, or cannot read the table within it. Fix the cause, then rerun with "
                "resnapshot_interval_days=0 to re-snapshot now.");
}

TEST(Decide, TheAntiLoopGuardLetsAPurgePassOnceTheIntervalHasElapsed) {
  auto in = purged_stream();
  in.state = generation(1, 5, "2026-11-13T12:00:00+00:00");  // exactly seven days
  EXPECT_EQ(decide(in).action, Action::Resnapshot);
  in.interval_days = 7.5;
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::Blocked);
  EXPECT_NE(d.error_message.find("resnapshot_interval_days=7.5 of"), std::string::npos) << d.error_message;
}

TEST(Decide, AnIntervalOfZeroReSnapshotsNow) {
  auto in = purged_stream();
  in.state = generation(1, 5, "2026-11-20T11:59:59+00:00");
  in.state.failed_at = "2026-11-20T11:59:59+00:00";
  in.interval_days = 0;
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::Resnapshot);
  EXPECT_TRUE(d.interval_ok);
}

TEST(Decide, AFailedAttemptInGenerationZeroCountsForTheAntiLoopGuard) {
  auto in = crashed_recovery();
  in.state.failed_at = "2026-11-19T00:00:00+00:00";
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::Blocked);
  EXPECT_NE(d.error_message.find("of a failed re-snapshot at 2026-11-19T00:00:00+00:00."), std::string::npos)
      << d.error_message;
}

TEST(Decide, TheLaterOfAFailedAttemptAndTheLastResnapshotIsNamed) {
  auto in = purged_stream();
  in.state = generation(2, 5, "2026-11-19T00:00:00+00:00");
  in.state.failed_at = "2026-11-10T00:00:00+00:00";
  EXPECT_NE(decide(in).error_message.find("of the previous re-snapshot at 2026-11-19"), std::string::npos);
  in.state.failed_at = "2026-11-19T06:00:00+00:00";
  EXPECT_NE(decide(in).error_message.find("of a failed re-snapshot at 2026-11-19T06"), std::string::npos);
}

TEST(Decide, ReusesTheTargetsNewestWholeSnapshotAboveTheStartWithoutTheGuard) {
  auto in = purged_stream();
  in.state = generation(1, 5, "2026-11-19T00:00:00+00:00");  // the guard would refuse a new one
  in.newest_whole = at(70, "2026-11-19T01:00:00.000");
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::Resnapshot);
  EXPECT_FALSE(d.interval_ok);
  EXPECT_EQ(d.reuse, (Reuse{ReuseKind::Target, at(70, "2026-11-19T01:00:00.000"), 2}));
  EXPECT_EQ(d.steps, std::vector<Step>{Step::WriteEvent});
  EXPECT_NE(d.warning.find(": reusing the snapshot at " + S(70) + "."), std::string::npos) << d.warning;
}

TEST(Decide, NeverReusesATargetSnapshotThatIsPurgedOrNotAboveTheStart) {
  auto in = purged_stream();
  in.newest_whole = at(30);  // above the start, but cleanup passed it: a failed attempt's image
  EXPECT_EQ(decide(in).reuse.kind, ReuseKind::None);
  in.newest_whole = at(10);
  EXPECT_EQ(decide(in).reuse.kind, ReuseKind::None);
  in.newest_whole = at(3);
  EXPECT_EQ(decide(in).reuse.kind, ReuseKind::None);
  EXPECT_TRUE(decide(in).has(Step::TakeSnapshot));
}

TEST(Decide, ReusesTheCompletionOfTheNextGenerationAfterACrashBeforeTheState) {
  auto in = purged_stream();
  in.state.failed_at = "2026-11-19T00:00:00+00:00";  // the guard would refuse a new snapshot
  in.completions = {CompletionRow{0, at(8)}, CompletionRow{1, at(70, "2026-11-19T01:00:00.000")}};
  in.newest_whole = at(80);
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::Resnapshot);
  EXPECT_EQ(d.next_generation, 1);
  EXPECT_EQ(d.reuse, (Reuse{ReuseKind::Completion, at(70, "2026-11-19T01:00:00.000"), 1}));
  EXPECT_TRUE(d.steps.empty());
}

TEST(Decide, WalksPastAGenerationWhoseCompletionIsPurgedOrBelowTheStart) {
  auto in = purged_stream();
  in.completions = {CompletionRow{1, at(30)}, CompletionRow{2, at(9)}};
  const Decision d = decide(in);
  EXPECT_EQ(d.next_generation, 3);
  EXPECT_EQ(d.reuse.kind, ReuseKind::None);
  EXPECT_TRUE(d.has(Step::TakeSnapshot));
}

TEST(Decide, ReusesTheChunkedOpenOfTheNextGenerationAfterACrashBeforeTheState) {
  const Decision d = decide(chunked_meeting_open(Mode::Chunked, 60));
  EXPECT_EQ(d.action, Action::Resnapshot);
  EXPECT_EQ(d.reuse, (Reuse{ReuseKind::Open, at(60), 1}));
  EXPECT_TRUE(d.steps.empty());
  EXPECT_NE(d.warning.find(": reusing the chunked snapshot opened at " + S(60) + "."), std::string::npos);
}

TEST(Decide, OpensTheGenerationAfterAChunkedOpenThatCleanupPassed) {
  const Decision d = decide(chunked_meeting_open(Mode::Chunked, 40));
  EXPECT_EQ(d.next_generation, 2);
  EXPECT_EQ(d.steps, std::vector<Step>{Step::OpenChunked});
}

TEST(Decide, AChunkedRunMeetingAFullOpenStillBeingReadIsRefused) {
  const Decision d = decide(chunked_meeting_open(Mode::Full, 90));
  EXPECT_EQ(d.action, Action::Blocked);
  EXPECT_EQ(d.error_kind, DecisionError::InvalidArgument);
  EXPECT_NE(d.error_message.find("a full snapshot open at " + S(90) + " (generation 1) has not completed"),
            std::string::npos);
}

TEST(Decide, AChunkedRunTakesOverTheGenerationOfAPurgedFullAttempt) {
  auto in = purged_stream();
  in.mode = Mode::Chunked;
  in.interval_days = 0;
  in.state.recovering = at(10, "2026-11-01T10:00:00.000");
  in.state.failed_at = "2026-11-20T00:00:00+00:00";
  in.opens = {OpenRow{1, Mode::Full, "resnapshot", at(30)}};
  in.newest_whole = at(30);  // its rows stay in the target, never reused
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::Resnapshot);
  EXPECT_EQ(d.next_generation, 1);
  EXPECT_EQ(d.steps, std::vector<Step>{Step::OpenChunked});
  EXPECT_EQ(d.reuse.kind, ReuseKind::None);
}

TEST(Decide, AChunkedRunStartsFromACompletedFullSnapshotOfTheNextGeneration) {
  auto in = chunked_meeting_open(Mode::Full, 90);
  in.completions = {CompletionRow{1, at(90)}};  // an emptied table's: only the row exists
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::Resnapshot);
  EXPECT_EQ(d.reuse, (Reuse{ReuseKind::Completion, at(90), 1}));
}

TEST(Decide, TheModeLockRefusesAFullRunWhileAChunkedSnapshotIsOpenEvenWithoutAPurge) {
  auto in = purged_stream();
  in.start = at(60);
  in.opens = {OpenRow{0, Mode::Chunked, "bootstrap", at(5)}};
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::Blocked);
  EXPECT_EQ(d.error_kind, DecisionError::InvalidArgument);
  EXPECT_NE(d.error_message.find("a chunked snapshot open at " + S(5) + " (generation 0)"), std::string::npos);
  EXPECT_NE(d.error_message.find("backfill(bronze.orders, app_id=orders-v1, ...)"), std::string::npos);
}

TEST(Decide, TheDurationGuardRefusesAFullReadThatWouldNotFitWhenAskedTo) {
  auto in = purged_stream();
  in.estimate = estimate_snapshot(1'000'000, {{1000, 10'000}}, 1.0);
  in.duration_guard = DurationGuard::Refuse;
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::Blocked);
  EXPECT_EQ(d.error_kind, DecisionError::DataLoss);
  EXPECT_EQ(d.error_message,
            "bronze.orders: a full re-snapshot of 1000000 rows would take about 2.8 h at 100 rows/s, more than half "
            "the observed CDC retention of 1.0 h; rerun with snapshot='chunked', which has no such limit, or "
            "lengthen the CDC retention (snapshotDurationGuard='refuse' stopped this run; nothing was written).");
}

TEST(Decide, TheDurationGuardOnlyWarnsByDefaultAndIsSilentWhenOff) {
  auto in = purged_stream();
  in.estimate = estimate_snapshot(1'000'000, {{1000, 10'000}}, 1.0);
  const Decision warned = decide(in);
  EXPECT_EQ(warned.action, Action::Resnapshot);
  EXPECT_NE(warned.warning.find("taking a full snapshot; the read would take about 2.8 h at 100 rows/s, more "
                                "than half the observed CDC retention of 1.0 h, consider snapshot='chunked'."),
            std::string::npos)
      << warned.warning;
  in.duration_guard = DurationGuard::Off;
  EXPECT_EQ(decide(in).warning.find("consider"), std::string::npos);
  in.duration_guard = DurationGuard::Refuse;
  in.mode = Mode::Chunked;
  EXPECT_EQ(decide(in).action, Action::Resnapshot);  // a chunked snapshot has no such limit
  in.mode = Mode::Full;
  in.newest_whole = at(70);
  EXPECT_EQ(decide(in).action, Action::Resnapshot);  // a reuse reads nothing
}

TEST(Decide, RefusesAnIntervalOrClockThatMakesNoSense) {
  auto in = purged_stream();
  for (const double bad : {-1.0, std::nan(""), HUGE_VAL}) {
    in.interval_days = bad;
    EXPECT_THROW((void)decide(in), Error);
  }
  in.interval_days = 7;
  in.now = "2026-11-20 12:00";
  EXPECT_THROW((void)decide(in), Error);
}

// Crashes: the state each crash leaves behind, and what the next run decides.
// A stream that read L(10) and lost nothing: cleanup is at L(5).
DecideInputs requested_stream() {
  auto in = purged_stream();
  in.observation.instances = {Instance{"dbo_orders", L(1), L(5), "2026-10-30T00:00:00.000"}};
  in.requested = true;
  return in;
}

TEST(Requested, AReSnapshotWithoutALossTakesTheSameStepsWithoutAGap) {
  const Decision d = decide(requested_stream());
  EXPECT_EQ(d.action, Action::Resnapshot);
  EXPECT_EQ(d.next_generation, 1);
  EXPECT_FALSE(d.low);
  EXPECT_FALSE(d.lost_from_ts);
  EXPECT_FALSE(d.lost_to_ts);
  EXPECT_EQ(d.steps, (std::vector<Step>{Step::WriteFullOpen, Step::TakeSnapshot, Step::WriteEvent}));
  EXPECT_EQ(d.warning, "bronze.orders: a re-snapshot was requested (last read " + S(10) +
                           ", 2026-11-01T10:00:00.000). Moving to generation 1, sink app_id orders-v1.g1: taking a "
                           "full snapshot.");
  auto chunked = requested_stream();
  chunked.mode = Mode::Chunked;
  EXPECT_EQ(decide(chunked).steps, std::vector<Step>{Step::OpenChunked});
}

TEST(Requested, TheAntiLoopGuardRefusesItWithinTheIntervalUnlessItIsZero) {
  auto in = requested_stream();
  in.state = generation(1, 8, "2026-11-19T12:00:00+00:00");
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::Blocked);
  EXPECT_EQ(d.error_kind, DecisionError::InvalidArgument);
  EXPECT_NE(d.error_message.find("a re-snapshot was requested within resnapshot_interval_days=7 of the previous "
                                 "re-snapshot at 2026-11-19T12:00:00+00:00; nothing was written. Pass "
                                 "resnapshot_interval_days=0"),
            std::string::npos)
      << d.error_message;
  in.interval_days = 0;
  EXPECT_EQ(decide(in).action, Action::Resnapshot);
  EXPECT_EQ(decide(in).next_generation, 2);
}

TEST(Requested, AStreamThatNeverStartedIsRefused) {
  auto in = requested_stream();
  in.start.reset();
  const Decision d = decide(in);
  EXPECT_EQ(d.action, Action::Blocked);
  EXPECT_NE(d.error_message.find("nothing to re-snapshot"), std::string::npos);
}

TEST(Requested, ReadsTheTableAgainRatherThanReuseASnapshotItDidNotTake) {
  auto in = requested_stream();
  in.newest_whole = at(60);  // say, a manual snapshot(): not this request's
  const Decision d = decide(in);
  EXPECT_EQ(d.reuse.kind, ReuseKind::None);
  EXPECT_EQ(d.steps, (std::vector<Step>{Step::WriteFullOpen, Step::TakeSnapshot, Step::WriteEvent}));
}

TEST(Requested, ARerunAfterACrashReusesTheSnapshotItTookEvenAtTheStart) {
  for (unsigned s : {10u, 60u}) {  // at the start when nothing changed since the last batch
    auto in = requested_stream();
    in.state.recovering = at(10, "2026-11-01T10:00:00.000");
    in.newest_whole = at(s);
    in.opens = {OpenRow{1, Mode::Full, "resnapshot", at(s)}};
    const Decision d = decide(in);
    EXPECT_EQ(d.action, Action::Resnapshot);
    EXPECT_EQ(d.next_generation, 1);
    EXPECT_EQ(d.reuse.kind, ReuseKind::Target);
    EXPECT_EQ(d.steps, std::vector<Step>{Step::WriteEvent});
    in.completions = {CompletionRow{1, at(s)}};
    EXPECT_EQ(decide(in).reuse.kind, ReuseKind::Completion);
    EXPECT_EQ(decide(in).next_generation, 1);
    EXPECT_TRUE(decide(in).steps.empty());
  }
}

TEST(Requested, ALossStillNeverReusesASnapshotAtTheStart) {
  auto in = purged_stream();
  in.completions = {CompletionRow{1, at(10)}};
  EXPECT_EQ(decide(in).next_generation, 2);
}

TEST(Requested, AnActualLossIsStillReportedAsALoss) {
  auto in = purged_stream();
  in.requested = true;
  const Decision d = decide(in);
  ASSERT_TRUE(d.low);
  EXPECT_EQ(d.lost_to_ts, "2026-11-05T00:00:00.000");
  EXPECT_NE(d.warning.find("CDC cleanup purged"), std::string::npos);
}

TEST(CrashMatrix, AfterRecoveringTheNextRunRecoversFromTheRecordedStart) {
  auto in = crashed_recovery();
  in.start = resolve_start(StartInputs{in.state, at(12), true, true, false, {}, {}, "/c"}).start;
  const Decision d = decide(in);
  EXPECT_EQ(d.start, at(10, "2026-11-01T10:00:00.000"));
  EXPECT_EQ(d.lost_from_ts, "2026-11-01T10:00:00.000");
  EXPECT_TRUE(d.has(Step::TakeSnapshot));
}

TEST(CrashMatrix, BeforeAppendTheNextFullRunTakesANewSnapshotOfTheSameGeneration) {
  const Decision d = decide(crashed_full_open());
  EXPECT_EQ(d.next_generation, 1);
  EXPECT_EQ(d.steps, (std::vector<Step>{Step::WriteFullOpen, Step::TakeSnapshot, Step::WriteEvent}));
}

TEST(CrashMatrix, AfterAppendTheNextRunReusesTheTargetSnapshotAndWritesTheEvent) {
  auto in = crashed_full_open();
  in.newest_whole = at(90);
  const Decision d = decide(in);
  EXPECT_EQ(d.reuse, (Reuse{ReuseKind::Target, at(90), 1}));
  EXPECT_EQ(d.steps, std::vector<Step>{Step::WriteEvent});
}

TEST(CrashMatrix, AfterEventTheNextRunReusesTheCompletionAndWritesNoSecondEvent) {
  auto in = crashed_full_open();
  in.completions = {CompletionRow{1, at(90)}};
  in.newest_whole = at(90);
  const Decision d = decide(in);
  EXPECT_EQ(d.reuse.kind, ReuseKind::Completion);
  EXPECT_TRUE(d.steps.empty());
}

TEST(CrashMatrix, AfterStateTheNewGenerationIsLiveAndNothingIsLost) {
  auto in = purged_stream();
  in.state = generation(1, 90, "2026-11-20T11:00:00+00:00");
  in.start = resolve_start(StartInputs{in.state, {}, false, false, true, {}, {}, "/c/_generations/1"}).start;
  EXPECT_EQ(in.start, at(90, "2026-11-02T08:15:04.250"));
  EXPECT_EQ(decide(in).action, Action::None);
}

TEST(Conclude, AnUnpurgedSnapshotMakesTheNextGenerationLive) {
  const Decision d = decide(purged_stream());
  const Conclusion c = conclude(d, at(95, "2026-11-20T11:30:00.000"), purged_stream().observation, State{},
                                "2026-11-20T12:00:07.900+00:00", 3, 2500);
  EXPECT_TRUE(c.ok);
  State expected = generation(1, 95, "2026-11-20T12:00:07+00:00");
  expected.snapshot->commit_ts = "2026-11-20T11:30:00.000";
  EXPECT_EQ(c.state_to_write, expected);
  EXPECT_EQ(c.message, "bronze.orders: generation 1 starts at " + S(95) + "; snapshot of 3 rows in 2.5 s.");
}

TEST(Conclude, APurgedOwnSnapshotRecordsAFailedAttemptAndKeepsTheGeneration) {
  auto in = crashed_recovery();
  const Decision d = decide(in);
  Observation fresh = in.observation;
  fresh.max_lsn = L(200);
  fresh.instances[0].min_lsn = L(120);
  const Conclusion c = conclude(d, at(95), fresh, in.state, kNow, 3, 2500);
  EXPECT_FALSE(c.ok);
  State expected = in.state;
  expected.failed_at = kNow;
  EXPECT_EQ(c.state_to_write, expected);
  EXPECT_EQ(c.message, "bronze.orders: the full re-snapshot at " + S(95) +
                           " took longer than the CDC retention: cleanup has already purged the changes after it "
                           "(dbo_orders begins at " +
                           S(120) +
                           "). Generation 0 stays live and this attempt counts for the anti-loop guard. Lengthen the "
                           "retention, read faster (more numPartitions), or rerun with snapshot='chunked', which has "
                           "no such limit, together with resnapshot_interval_days=0.");
}

TEST(Conclude, SaysWhichSnapshotWasReusedOrOpened) {
  auto in = purged_stream();
  in.newest_whole = at(70);
  EXPECT_EQ(conclude(decide(in), at(70), in.observation, State{}, kNow).message,
            "bronze.orders: generation 1 starts at " + S(70) + "; reused the snapshot at " + S(70) + ".");
  in.newest_whole.reset();
  in.mode = Mode::Chunked;
  EXPECT_EQ(conclude(decide(in), at(100), in.observation, State{}, kNow).message,
            "bronze.orders: generation 1 starts at " + S(100) + "; chunked snapshot open at " + S(100) +
                "; call backfill() to read it.");
}

TEST(Conclude, RefusesADecisionThatIsNotAResnapshot) {
  auto in = purged_stream();
  in.start.reset();
  EXPECT_THROW((void)conclude(decide(in), at(70), in.observation, State{}, kNow), Error);
}

}  // namespace
}  // namespace mssqlcdc::recovery
