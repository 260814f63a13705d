// recovery.hpp: the automatic recovery after CDC data loss, as pure functions.
//
// Python gathers what it observed (the state file, the checkpoint's last offset, the facts
// table's snapshot rows, the target's newest snapshot, the source's LSNs, the clock) and these
// functions say what to do: nothing, a re-snapshot into generation g (taking, opening or
// reusing a snapshot), or a refusal whose error text they render, so every caller agrees.
// Nothing here reads a file, a table or the clock. A refusal is data, not an exception;
// exceptions (Error(InvalidArgument)) are reserved for inputs that make no sense.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mssqlcdc/generation.hpp"
#include "mssqlcdc/lsn.hpp"

namespace mssqlcdc {

enum class Mode { Full, Chunked };
enum class Action { None, Resnapshot, Blocked };
enum class ReuseKind { None, Completion, Open, Target };

// One capture instance of the source table, as sys.fn_cdc_get_min_lsn and
// cdc.change_tables show it. min_lsn is NULL on a just-enabled instance.
struct Instance {
  std::string name;
  Lsn start_lsn;
  std::optional<Lsn> min_lsn;
  std::string min_commit_ts;  // commit time of min_lsn; "" when unknown
};

// The source, read afresh for every purge test. max_lsn is NULL while capture wrote nothing.
struct Observation {
  std::optional<Lsn> max_lsn;
  std::vector<Instance> instances;  // the table's capture instances, oldest first
};

// A 'snapshot_open' facts row of the stream's family.
struct OpenRow {
  int generation = 0;
  Mode mode = Mode::Chunked;  // a row without detail.mode is chunked
  std::string kind;           // "bootstrap" or "resnapshot"
  Offset s;                   // its snapshot LSN S (min_lsn of the row)
};

// A 'bootstrap' or 'resnapshot' facts row of the family: a snapshot that completed.
struct CompletionRow {
  int generation = 0;
  Offset lsn;  // max_lsn of the row
};

namespace recovery {

// What lost() found: the capture instance now begins at `low`.
struct Loss {
  Lsn low;
  std::string low_commit_ts;  // "" when unknown
  std::string instance;
};

// The driver guard applied to a start x: lost when inc(x) < min_lsn of the instance the stream
// would read inc(x) from (the newest whose start_lsn <= inc(x), else the oldest). Not lost
// when nothing was captured after x (max_lsn NULL or <= x) or that instance's min_lsn is not
// established (NULL or zero). Throws Error(InvalidArgument) when a test is needed but the
// observation lists no instance.
[[nodiscard]] std::optional<Loss> lost(const Lsn& x, const Observation& observation);

// The guard's precondition: a range to read after `start` exists (max_lsn > start.lsn). Only
// then must the caller read the instances and their min_lsn.
[[nodiscard]] bool has_range(const Offset& start, const std::optional<Lsn>& max_lsn);

// Which input resolve_start() took the start from.
enum class StartSource { Recovering, Checkpoint, StateSnapshot, Bootstrap, StartingLsn, None };

// What resolve_start() reads: the state file, the live checkpoint and the caller's options.
struct StartInputs {
  State state;                           // the state file, or generation 0 without one
  std::optional<Offset> last_committed;  // the live Spark checkpoint's last processed offset
  bool has_metadata = false;             // the live Spark checkpoint has its metadata file
  bool live_batches_in_facts = false;    // micro-batch facts rows of the live sink app_id
  bool bootstrap = false;                // to_delta(bootstrap=True)
  std::optional<Lsn> starting_lsn;       // an explicit startingLsn option (not earliest/latest)
  std::optional<Offset> newest_known;    // the target's newest known snapshot
  std::string live_checkpoint;           // the live Spark checkpoint, for the message
};

// resolve_start()'s answer: the offset the stream starts after, and where it came from.
struct StartResult {
  std::optional<Offset> start;  // none: the stream starts at earliest or latest, no check
  StartSource source = StartSource::None;
};

// Where the stream is, the first that applies: an open recovery's `recovering`; the last
// committed offset; (path-sanity guard) no commit and no metadata but micro-batch facts rows
// throws Error(InvalidArgument) "Python cannot see Spark's commits in <dir>..."; generation
// n > 0: the state's snapshot; generation 0 with bootstrap: the newest known snapshot; an
// explicit startingLsn (commit time unknown); otherwise no start.
[[nodiscard]] StartResult resolve_start(const StartInputs& in);

// The mode lock: the error text naming the newest open of the other
// mode that blocks a run in `requested` mode, or std::nullopt. An open is complete when a
// completion of the family has max_lsn >= its S. Chunked opens block until complete; full ones
// unless purged (lost(S)) or a chunked open of their generation exists.
[[nodiscard]] std::optional<std::string> lock_violation(Mode requested, const std::vector<OpenRow>& opens,
                                                        const std::vector<CompletionRow>& completions,
                                                        const Observation& observation, const std::string& target,
                                                        const std::string& app_id);

enum class DurationGuard { Warn, Refuse, Off };

// The snapshot-duration estimate; each figure unknown without its input.
struct Estimate {
  std::optional<std::int64_t> rows;
  std::optional<double> rows_per_second;
  std::optional<double> seconds;
  std::optional<double> retention_hours;
  std::optional<bool> fits;  // seconds <= 0.5 * retention; unknown unless both are known
  bool operator==(const Estimate&) const = default;
};

// One earlier full snapshot's completion row: its rows and read time.
struct SnapshotTiming {
  std::int64_t rows = 0;
  std::int64_t duration_ms = 0;
};

// The fewest rows an earlier snapshot must have read for its rate to be used.
inline constexpr std::int64_t kMinSampleRows = 1000;

// rows_per_second is the median rate of the first five usable timings (rows >= kMinSampleRows
// and duration_ms >= 1), given newest first; retention_hours is the smallest observed retention.
[[nodiscard]] Estimate estimate_snapshot(std::optional<std::int64_t> table_rows,
                                         const std::vector<SnapshotTiming>& newest_first,
                                         std::optional<double> retention_hours);

// Everything decide() reads, as Python observed it; decide() reads nothing else.
struct DecideInputs {
  std::string target;  // for messages
  std::string app_id;  // the caller's app_id A
  State state;
  std::optional<Offset> start;  // resolve_start's answer
  Mode mode = Mode::Full;
  Observation observation;  // instances needed whenever a purge test has a range to test
  std::vector<OpenRow> opens;
  std::vector<CompletionRow> completions;
  std::optional<Offset> newest_whole;  // the target's newest whole snapshot
  double interval_days = 7.0;          // resnapshot_interval_days, finite and >= 0
  std::string now;                     // the clock, "YYYY-MM-DDTHH:MM:SS+00:00"
  Estimate estimate;
  DurationGuard duration_guard = DurationGuard::Warn;
  // A person asked for a re-snapshot (CdcStream.resnapshot, issue 20): the same steps as after
  // a loss, without one; the anti-loop guard and the mode lock still apply.
  bool requested = false;
};

// A snapshot the decision reuses instead of taking one, when the target already has it.
struct Reuse {
  ReuseKind kind = ReuseKind::None;
  std::optional<Offset> offset;  // the snapshot the new generation starts from
  int generation = 0;            // the generation of the reused row (the one opened for target)
  bool operator==(const Reuse&) const = default;
};

// The error a blocked decision raises; Python maps it to DataLossError or ConfigError.
enum class DecisionError { None, DataLoss, InvalidArgument };

// The durable steps a decision asks for, in the order the pre-flight performs them: a full
// snapshot's 'snapshot_open' row, its read, a chunked open, the 'resnapshot' event row after the
// snapshot (taken or reused from the target), and for `none` the rewrite of a stale recovering.
enum class Step { WriteFullOpen, TakeSnapshot, OpenChunked, WriteEvent, ClearRecovering };

// decide()'s answer: the action, why, and the durable steps the pre-flight performs for it.
struct Decision {
  Action action = Action::None;
  std::string reason;                              // one sentence: why this action
  DecisionError error_kind = DecisionError::None;  // blocked only
  std::string error_message;                       // the text to raise (blocked only)
  std::string target;
  std::string app_id;
  int generation = 0;       // the live generation now
  int next_generation = 0;  // the generation to open; equal to generation unless resnapshot
  std::optional<Offset> start;
  std::optional<Loss> low;
  std::optional<std::string> lost_from_ts;  // commit time of the start; none when unknown
  std::optional<std::string> lost_to_ts;    // commit time of min_lsn when the loss was found
  Reuse reuse;
  Mode mode = Mode::Full;
  bool interval_ok = true;
  std::vector<Step> steps;  // in order; none for a refusal or a reuse that writes no row
  std::string warning;      // the WARNING line of a resnapshot

  // Whether `step` is among `steps`.
  [[nodiscard]] bool has(Step step) const;
};

// Applies the mode lock, the loss test, the generation walk with its reuse rules, the anti-loop
// guard and the duration guard. A pure function: thread-safe, no I/O. Throws
// Error(InvalidArgument) for a negative or non-finite interval, a `now` that is no UTC instant,
// or an invalid state.
[[nodiscard]] Decision decide(const DecideInputs& in);

// conclude()'s answer: whether the recovery committed, the state to write, and its message.
struct Conclusion {
  bool ok = false;
  State state_to_write;  // the commit point (generation g), or the failed attempt's state
  std::string message;   // the INFO line, or the DataLossError text when !ok
};

// Step 4 of the recovery: with a fresh observation, is the snapshot the new generation would
// start from purged already? Then the attempt failed (state with failed_at = now, error text);
// else the state of generation g (INFO text). `rows` and `duration_ms` describe a snapshot
// taken now. Throws Error(InvalidArgument) for a decision that is not a resnapshot.
[[nodiscard]] Conclusion conclude(const Decision& decision, const Offset& snapshot, const Observation& fresh,
                                  const State& state, const std::string& now,
                                  std::optional<std::int64_t> rows = std::nullopt,
                                  std::optional<std::int64_t> duration_ms = std::nullopt);

}  // namespace recovery
}  // namespace mssqlcdc
