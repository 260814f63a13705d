// The loss test, the start of a stream and the mode lock: the rules decide() is built on.
#include <algorithm>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/recovery.hpp"

namespace mssqlcdc::recovery {
namespace {

bool complete(const Lsn& s, const std::vector<CompletionRow>& completions) {
  return std::any_of(completions.begin(), completions.end(), [&s](const CompletionRow& c) { return c.lsn.lsn >= s; });
}

}  // namespace

std::optional<Loss> lost(const Lsn& x, const Observation& observation) {
  if (!observation.max_lsn || *observation.max_lsn <= x) return std::nullopt;
  if (observation.instances.empty()) {
    throw Error(ErrorKind::InvalidArgument, "the observation lists no capture instance although max_lsn " +
                                                observation.max_lsn->to_string() + " is above " + x.to_string() +
                                                "; read the table's capture instances before testing for a purge");
  }
  const Lsn next = x.increment();  // cannot overflow: x < max_lsn
  const Instance* checked = &observation.instances.front();
  for (const Instance& instance : observation.instances) {
    if (instance.start_lsn <= next) checked = &instance;
  }
  if (!checked->min_lsn || checked->min_lsn->is_zero()) return std::nullopt;
  if (next < *checked->min_lsn) return Loss{*checked->min_lsn, checked->min_commit_ts, checked->name};
  return std::nullopt;
}

bool has_range(const Offset& start, const std::optional<Lsn>& max_lsn) {
  return max_lsn.has_value() && *max_lsn > start.lsn;
}

StartResult resolve_start(const StartInputs& in) {
  if (in.state.recovering) return {in.state.recovering, StartSource::Recovering};
  if (in.last_committed) return {in.last_committed, StartSource::Checkpoint};
  if (!in.has_metadata && in.live_batches_in_facts) {
    throw Error(ErrorKind::InvalidArgument,
                "Python cannot see Spark's commits in " + in.live_checkpoint +
                    ": Python and Spark resolve the checkpoint to different directories, or it was "
                    "deleted (a new checkpoint needs a new app_id)");
  }
  if (in.state.generation > 0) {
    if (!in.state.snapshot) {
      throw Error(ErrorKind::InvalidArgument,
                  "a state of generation " + std::to_string(in.state.generation) + " has no snapshot to start from");
    }
    return {in.state.snapshot, StartSource::StateSnapshot};
  }
  if (in.bootstrap && in.newest_known) return {in.newest_known, StartSource::Bootstrap};
  if (in.starting_lsn) return {Offset{*in.starting_lsn, ""}, StartSource::StartingLsn};
  return {std::nullopt, StartSource::None};
}

std::optional<std::string> lock_violation(Mode requested, const std::vector<OpenRow>& opens,
                                          const std::vector<CompletionRow>& completions, const Observation& observation,
                                          const std::string& target, const std::string& app_id) {
  const OpenRow* newest = nullptr;
  for (const OpenRow& open : opens) {
    if (open.mode == requested || complete(open.s.lsn, completions)) continue;
    if (open.mode == Mode::Full) {
      const bool taken_over = std::any_of(opens.begin(), opens.end(), [&open](const OpenRow& o) {
        return o.mode == Mode::Chunked && o.generation == open.generation;
      });
      // The purge test last: it is the one input the caller may have to read from the source.
      if (taken_over || lost(open.s.lsn, observation)) continue;
    }
    if (newest == nullptr || open.s.lsn > newest->s.lsn) newest = &open;
  }
  if (newest == nullptr) return std::nullopt;
  const std::string s = newest->s.lsn.to_string();
  const std::string g = std::to_string(newest->generation);
  if (newest->mode == Mode::Chunked) {
    return target + ": a chunked snapshot open at " + s + " (generation " + g +
           ") has not completed; this run cannot use snapshot='full'. Call backfill(" + target + ", app_id=" + app_id +
           ", ...) until it returns 'done', and run to_delta with snapshot='chunked' meanwhile.";
  }
  return target + ": a full snapshot open at " + s + " (generation " + g +
         ") has not completed: it is being read, or the run reading it crashed. Rerun with snapshot='full' "
         "to complete it, or wait until CDC cleanup passes " +
         s + "; then snapshot='chunked' may take its generation over.";
}

}  // namespace mssqlcdc::recovery
