// decide() and conclude(): the recovery's choices and the texts it logs and raises.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/recovery.hpp"
#include "mssqlcdc/utc_time.hpp"

namespace mssqlcdc::recovery {
namespace {

std::string number_text(double value, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::int64_t instant_millis(const std::string& text, const char* what) {
  const auto ms = utc::parse_millis(text, utc::Zone::Required);
  if (!ms) {
    throw Error(ErrorKind::InvalidArgument,
                std::string(what) + " '" + text + "' is not a UTC time; pass YYYY-MM-DDTHH:MM:SS+00:00");
  }
  return *ms;
}

std::optional<std::string> known(const std::string& commit_ts) {
  return commit_ts.empty() ? std::nullopt : std::optional<std::string>(commit_ts);
}

template <typename Row, typename Key>
const Row* highest_of_generation(const std::vector<Row>& rows, int generation, Key key) {
  const Row* best = nullptr;
  for (const Row& row : rows) {
    if (row.generation == generation && (best == nullptr || key(row) > key(*best))) best = &row;
  }
  return best;
}

Decision blocked(Decision d, DecisionError error_kind, std::string message, std::string reason) {
  d.action = Action::Blocked;
  d.error_kind = error_kind;
  d.error_message = std::move(message);
  d.reason = std::move(reason);
  d.steps.clear();
  d.warning.clear();
  return d;
}

// A usable snapshot to start generation g from: above the start and not purged itself (a purged
// one is the fuzzy image of a read that outlasted the retention).
bool usable(const Lsn& lsn, const Offset& start, const Observation& observation) {
  return lsn > start.lsn && !lost(lsn, observation);
}

std::string estimate_clause(const Estimate& e) {
  return "would take about " + number_text(*e.seconds / 3600.0, "%.1f") + " h at " +
         number_text(*e.rows_per_second, "%.0f") + " rows/s, more than half the observed CDC retention of " +
         number_text(*e.retention_hours, "%.1f") + " h";
}

}  // namespace

bool Decision::has(Step step) const { return std::find(steps.begin(), steps.end(), step) != steps.end(); }

Estimate estimate_snapshot(std::optional<std::int64_t> table_rows, const std::vector<SnapshotTiming>& newest_first,
                           std::optional<double> retention_hours) {
  Estimate e;
  e.rows = table_rows;
  e.retention_hours = retention_hours;
  std::vector<double> rates;
  for (const SnapshotTiming& t : newest_first) {
    // A small snapshot's time is mostly Spark's fixed cost, so its rate would scale into
    // nonsense (one row in 28 s made "139 s to read 5 rows"); decision 0922.
    if (t.rows < kMinSampleRows || t.duration_ms < 1) continue;
    rates.push_back(static_cast<double>(t.rows) / (static_cast<double>(t.duration_ms) / 1000.0));
    if (rates.size() == 5) break;
  }
  if (!rates.empty()) {
    std::sort(rates.begin(), rates.end());
    const std::size_t mid = rates.size() / 2;
    e.rows_per_second = rates.size() % 2 == 1 ? rates[mid] : (rates[mid - 1] + rates[mid]) / 2.0;
  }
  if (e.rows && e.rows_per_second) e.seconds = static_cast<double>(*e.rows) / *e.rows_per_second;
  if (e.seconds && e.retention_hours) e.fits = *e.seconds <= 0.5 * *e.retention_hours * 3600.0;
  return e;
}

Decision decide(const DecideInputs& in) {
  if (!std::isfinite(in.interval_days) || in.interval_days < 0) {
    throw Error(ErrorKind::InvalidArgument, "resnapshot_interval_days is " + number_text(in.interval_days, "%g") +
                                                "; pass a finite number of days >= 0 (0 re-snapshots now)");
  }
  const std::int64_t now = instant_millis(in.now, "now");
  checkpoint::validate_state(in.state);

  Decision d;
  d.target = in.target;
  d.app_id = in.app_id;
  d.mode = in.mode;
  d.generation = d.next_generation = in.state.generation;
  d.start = in.start;

  // The anti-loop guard's clock: the later of a failed attempt (any generation) and the moment
  // the live generation > 0 was made.
  std::optional<std::int64_t> last_ms;
  std::string last_text, last_what;
  if (in.state.failed_at) {
    last_ms = instant_millis(*in.state.failed_at, "failed_at");
    last_text = *in.state.failed_at;
    last_what = "a failed re-snapshot";
  }
  if (in.state.generation > 0 && in.state.at) {
    const std::int64_t at = instant_millis(*in.state.at, "at");
    if (!last_ms || at > *last_ms) {
      last_ms = at;
      last_text = *in.state.at;
      last_what = "the previous re-snapshot";
    }
  }
  d.interval_ok =
      in.interval_days == 0 || !last_ms || static_cast<double>(now - *last_ms) >= in.interval_days * 86'400'000.0;

  if (auto lock = lock_violation(in.mode, in.opens, in.completions, in.observation, in.target, in.app_id)) {
    return blocked(d, DecisionError::InvalidArgument, *lock, "the mode lock: a snapshot of the other mode is open");
  }
  if (!in.start) {
    if (in.requested) {
      return blocked(d, DecisionError::InvalidArgument,
                     in.target +
                         ": there is nothing to re-snapshot: the stream has not processed a batch "
                         "and has no snapshot to start from. Start it with to_delta(..., bootstrap=True) "
                         "instead.",
                     "a requested re-snapshot needs a stream that has started");
    }
    d.reason = "no start to test: the stream begins at earliest or latest, which cannot be purged";
    return d;
  }
  const Offset& start = *in.start;
  const auto loss = lost(start.lsn, in.observation);
  if (!loss && !in.requested) {
    if (in.state.recovering) d.steps = {Step::ClearRecovering};
    d.reason = "the changes after " + start.lsn.to_string() + " are not purged";
    return d;
  }
  d.low = loss;
  if (loss) {
    d.lost_from_ts = known(start.commit_ts);
    d.lost_to_ts = known(loss->low_commit_ts);
  }

  // Rows of generation g can only be an attempt to open g; a requested re-snapshot of a
  // stream that has read everything stamps its snapshot at its start, so its own attempt's
  // rows are usable at the start too.
  const auto fit = [&](const Lsn& lsn) {
    return in.requested ? lsn >= start.lsn && !lost(lsn, in.observation) : usable(lsn, start, in.observation);
  };
  int g = in.state.generation + 1;
  for (;;) {
    if (const CompletionRow* c =
            highest_of_generation(in.completions, g, [](const CompletionRow& r) { return r.lsn.lsn; })) {
      if (fit(c->lsn.lsn)) {
        d.reuse = Reuse{ReuseKind::Completion, c->lsn, g};
        break;
      }
      ++g;
      continue;
    }
    const auto chunked_of_g = [g](const OpenRow& r) { return r.mode == Mode::Chunked && r.generation == g; };
    const OpenRow* open = nullptr;
    for (const OpenRow& r : in.opens) {
      if (chunked_of_g(r) && (open == nullptr || r.s.lsn > open->s.lsn)) open = &r;
    }
    if (open != nullptr) {
      if (fit(open->s.lsn)) {
        d.reuse = Reuse{ReuseKind::Open, open->s, g};
        break;
      }
      ++g;
      continue;
    }
    // A full open of g still being read would stop a chunked run here, but
    // lock_violation() above has refused that run already with the same text; a purged full
    // open is dead and a chunked run opens g over it, while a full run simply takes g again.
    break;
  }
  d.next_generation = g;
  if (d.reuse.kind == ReuseKind::None && in.newest_whole) {
    // A requested re-snapshot reads the table again unless the target's newest snapshot is its
    // own crashed attempt's: the one a full open of generation g names.
    const bool own = std::any_of(in.opens.begin(), in.opens.end(), [&](const OpenRow& r) {
      return r.mode == Mode::Full && r.generation == g && r.s.lsn == in.newest_whole->lsn;
    });
    if (in.requested ? own && fit(in.newest_whole->lsn) : usable(in.newest_whole->lsn, start, in.observation)) {
      d.reuse = Reuse{ReuseKind::Target, *in.newest_whole, g};
    }
  }

  const std::string sink = in.app_id + ".g" + std::to_string(g);
  const std::string purged = in.target + ": CDC cleanup purged the changes after " + start.lsn.to_string();
  std::string how;
  if (d.reuse.kind == ReuseKind::None) {
    if (!d.interval_ok && !loss) {
      return blocked(d, DecisionError::InvalidArgument,
                     in.target + ": a re-snapshot was requested within resnapshot_interval_days=" +
                         number_text(in.interval_days, "%.15g") + " of " + last_what + " at " + last_text +
                         "; nothing was written. Pass resnapshot_interval_days=0 to re-snapshot now.",
                     "the anti-loop guard: " + last_what + " at " + last_text + " is within the interval");
    }
    if (!d.interval_ok) {
      return blocked(d, DecisionError::DataLoss,
                     in.target + ": the changes after " + start.lsn.to_string() +
                         " were purged again within resnapshot_interval_days=" +
                         number_text(in.interval_days, "%.15g") + " of " + last_what + " at " + last_text +
                         ". The stream does not keep up with the CDC retention, stops for longer than it again and "
                         "again, or cannot read the table within it. Fix the cause, then rerun with "
                         "resnapshot_interval_days=0 to re-snapshot now.",
                     "the anti-loop guard: " + last_what + " at " + last_text + " is within the interval");
    }
    const bool too_slow = in.mode == Mode::Full && in.duration_guard != DurationGuard::Off &&
                          in.estimate.fits == std::optional<bool>(false);
    if (too_slow && in.duration_guard == DurationGuard::Refuse) {
      return blocked(d, DecisionError::DataLoss,
                     in.target + ": a full re-snapshot of " + std::to_string(*in.estimate.rows) + " rows " +
                         estimate_clause(in.estimate) +
                         "; rerun with snapshot='chunked', which has no such limit, or lengthen the CDC "
                         "retention (snapshotDurationGuard='refuse' stopped this run; nothing was written).",
                     "the snapshot-duration guard: a full read would not fit in the retention");
    }
    if (in.mode == Mode::Full) {
      d.steps = {Step::WriteFullOpen, Step::TakeSnapshot, Step::WriteEvent};
      how = "taking a full snapshot";
      if (too_slow) how += "; the read " + estimate_clause(in.estimate) + ", consider snapshot='chunked'";
    } else {
      d.steps = {Step::OpenChunked};
      how = "opening a chunked snapshot";
    }
  } else if (d.reuse.kind == ReuseKind::Open) {
    how = "reusing the chunked snapshot opened at " + d.reuse.offset->lsn.to_string();
  } else {
    if (d.reuse.kind == ReuseKind::Target) d.steps = {Step::WriteEvent};  // a completion has its row already
    how = "reusing the snapshot at " + d.reuse.offset->lsn.to_string();
  }
  d.action = Action::Resnapshot;
  if (!loss) {
    d.reason = "a re-snapshot was requested after " + start.lsn.to_string();
    d.warning = in.target + ": a re-snapshot was requested (last read " + start.lsn.to_string() + ", " +
                (start.commit_ts.empty() ? "commit time unknown" : start.commit_ts) + "). Moving to generation " +
                std::to_string(g) + ", sink app_id " + sink + ": " + how + ".";
    return d;
  }
  d.reason = "the changes after " + start.lsn.to_string() + " were purged (" + loss->instance + " begins at " +
             loss->low.to_string() + ")";
  d.warning = purged + " (last read " + (start.commit_ts.empty() ? "unknown" : start.commit_ts) +
              "); capture instance " + loss->instance + " now begins at " + loss->low.to_string() + " (" +
              (loss->low_commit_ts.empty() ? "unknown" : loss->low_commit_ts) + "). Recovering into generation " +
              std::to_string(g) + ", sink app_id " + sink + ": " + how + ".";
  return d;
}

Conclusion conclude(const Decision& decision, const Offset& snapshot, const Observation& fresh, const State& state,
                    const std::string& now, std::optional<std::int64_t> rows, std::optional<std::int64_t> duration_ms) {
  if (decision.action != Action::Resnapshot || !decision.start) {
    throw Error(ErrorKind::InvalidArgument, "conclude() needs a decision to re-snapshot; this one is not");
  }
  (void)instant_millis(now, "now");
  Conclusion c;
  if (const auto loss = lost(snapshot.lsn, fresh)) {
    c.state_to_write = state;
    c.state_to_write.recovering = decision.start;
    c.state_to_write.failed_at = utc::format_seconds(instant_millis(now, "now"));
    c.message = decision.target + ": the full re-snapshot at " + snapshot.lsn.to_string() +
                " took longer than the CDC retention: cleanup has already purged the changes after it (" +
                loss->instance + " begins at " + loss->low.to_string() + "). Generation " +
                std::to_string(state.generation) +
                " stays live and this attempt counts for the anti-loop guard. Lengthen the retention, read faster "
                "(more numPartitions), or rerun with snapshot='chunked', which has no such limit, together with "
                "resnapshot_interval_days=0.";
    return c;
  }
  c.ok = true;
  c.state_to_write.generation = decision.next_generation;
  c.state_to_write.snapshot = snapshot;
  c.state_to_write.at = utc::format_seconds(instant_millis(now, "now"));
  std::string what;
  if (decision.has(Step::OpenChunked) || decision.reuse.kind == ReuseKind::Open) {
    what = "chunked snapshot open at " + snapshot.lsn.to_string() + "; call backfill() to read it";
  } else if (decision.reuse.kind != ReuseKind::None) {
    what = "reused the snapshot at " + snapshot.lsn.to_string();
  } else {
    what = "snapshot of " + (rows ? std::to_string(*rows) : std::string("an unknown number of")) + " rows in " +
           (duration_ms ? number_text(static_cast<double>(*duration_ms) / 1000.0, "%.1f") : std::string("?")) + " s";
  }
  c.message = decision.target + ": generation " + std::to_string(decision.next_generation) + " starts at " +
              snapshot.lsn.to_string() + "; " + what + ".";
  return c;
}

}  // namespace mssqlcdc::recovery
