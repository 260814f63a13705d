#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <string>

#include "bindings.hpp"
#include "convert_state.hpp"
#include "mssqlcdc/error.hpp"
#include "mssqlcdc/recovery.hpp"
#include "mssqlcdc/recovery_names.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace mssqlcdc::py {
namespace {

namespace names = recovery::names;

// Enums cross as the Literal strings of mssql_cdc.core.recovery_decision, through one table each.
template <typename E, std::size_t N>
std::string name(const std::array<EnumName<E>, N>& table, E value) {
  return std::string(name_of(table, value));
}
template <typename E, std::size_t N>
E from_name(const std::array<EnumName<E>, N>& table, const std::string& text, const char* what) {
  if (const auto value = value_of(table, text)) return *value;
  std::string known;
  for (const EnumName<E>& entry : table) known += (known.empty() ? "" : ", ") + std::string(entry.name);
  throw Error(ErrorKind::InvalidArgument, std::string(what) + " '" + text + "' is not one of " + known);
}
template <typename E, std::size_t N>
nb::list names_list(const std::array<EnumName<E>, N>& table) {
  return list_of(table, [](const EnumName<E>& entry) { return std::string(entry.name); });
}

Mode mode_from(const std::string& s) { return from_name(names::kMode, s, "snapshot mode"); }

bool bool_item(const nb::dict& d, const char* key, const char* what) {
  const nb::handle v = item(d, key, what);
  if (!nb::isinstance<nb::bool_>(v)) throw nb::type_error((std::string(what) + "." + key + " must be a bool").c_str());
  return nb::cast<bool>(v);
}
int int_item(const nb::dict& d, const char* key, const char* what) {
  const nb::handle v = item(d, key, what);
  if (!nb::isinstance<nb::int_>(v) || nb::isinstance<nb::bool_>(v)) {
    throw nb::type_error((std::string(what) + "." + key + " must be an int").c_str());
  }
  return nb::cast<int>(v);
}
template <typename T>
std::optional<T> opt_item(const nb::dict& d, const char* key, const char* what) {
  const nb::handle v = item(d, key, what);
  if (v.is_none()) return std::nullopt;
  return nb::cast<T>(v);
}
nb::dict dict_of(nb::handle h, const char* what) {
  if (!nb::isinstance<nb::dict>(h)) throw nb::type_error((std::string(what) + " must be a dict").c_str());
  return nb::borrow<nb::dict>(h);
}

std::vector<OpenRow> opens_from(nb::handle list) {
  std::vector<OpenRow> out;
  for (nb::handle h : list) {
    const nb::dict d = dict_of(h, "open row");
    out.push_back(OpenRow{int_item(d, "generation", "open row"), mode_from(str_item(d, "mode", "open row")),
                          str_item(d, "kind", "open row"), *offset_from_py(item(d, "s", "open row"), "open row.s")});
  }
  return out;
}
std::vector<CompletionRow> completions_from(nb::handle list) {
  std::vector<CompletionRow> out;
  for (nb::handle h : list) {
    const nb::dict d = dict_of(h, "completion row");
    out.push_back(CompletionRow{int_item(d, "generation", "completion row"),
                                *offset_from_py(item(d, "lsn", "completion row"), "completion row.lsn")});
  }
  return out;
}

nb::object loss_to_py(const std::optional<recovery::Loss>& loss) {
  if (!loss) return nb::none();
  nb::dict d;
  d["low"] = loss->low.to_string();
  d["low_commit_ts"] = loss->low_commit_ts.empty() ? nb::none() : nb::cast(loss->low_commit_ts);
  d["instance"] = loss->instance;
  return d;
}
std::optional<recovery::Loss> loss_from_py(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  const nb::dict d = dict_of(h, "loss");
  return recovery::Loss{Lsn::parse(str_item(d, "low", "loss")), opt_str_item(d, "low_commit_ts", "loss").value_or(""),
                        str_item(d, "instance", "loss")};
}

nb::dict estimate_to_py(const recovery::Estimate& e) {
  nb::dict d;
  d["rows"] = e.rows ? nb::cast(*e.rows) : nb::none();
  d["rows_per_second"] = e.rows_per_second ? nb::cast(*e.rows_per_second) : nb::none();
  d["seconds"] = e.seconds ? nb::cast(*e.seconds) : nb::none();
  d["retention_hours"] = e.retention_hours ? nb::cast(*e.retention_hours) : nb::none();
  d["fits"] = e.fits ? nb::cast(*e.fits) : nb::none();
  return d;
}
recovery::Estimate estimate_from_py(nb::handle h) {
  const nb::dict d = dict_of(h, "estimate");
  recovery::Estimate e;
  e.rows = opt_item<std::int64_t>(d, "rows", "estimate");
  e.rows_per_second = opt_item<double>(d, "rows_per_second", "estimate");
  e.seconds = opt_item<double>(d, "seconds", "estimate");
  e.retention_hours = opt_item<double>(d, "retention_hours", "estimate");
  e.fits = opt_item<bool>(d, "fits", "estimate");
  return e;
}

nb::dict decision_to_py(const recovery::Decision& x) {
  nb::dict d;
  d["action"] = name(names::kAction, x.action);
  d["reason"] = x.reason;
  d["error_kind"] = name(names::kErrorKind, x.error_kind);
  d["error_message"] = x.error_message;
  d["target"] = x.target;
  d["app_id"] = x.app_id;
  d["generation"] = x.generation;
  d["next_generation"] = x.next_generation;
  d["start"] = offset_to_py(x.start);
  d["low"] = loss_to_py(x.low);
  d["lost_from_ts"] = x.lost_from_ts ? nb::cast(*x.lost_from_ts) : nb::none();
  d["lost_to_ts"] = x.lost_to_ts ? nb::cast(*x.lost_to_ts) : nb::none();
  nb::dict reuse;
  reuse["kind"] = name(names::kReuseKind, x.reuse.kind);
  reuse["offset"] = offset_to_py(x.reuse.offset);
  reuse["generation"] = x.reuse.generation;
  d["reuse"] = reuse;
  d["mode"] = name(names::kMode, x.mode);
  d["interval_ok"] = x.interval_ok;
  d["steps"] = list_of(x.steps, [](recovery::Step step) { return name(names::kStep, step); });
  d["warning"] = x.warning;
  return d;
}
recovery::Decision decision_from_py(nb::handle h) {
  const nb::dict d = dict_of(h, "decision");
  const char* w = "decision";
  recovery::Decision x;
  x.action = from_name(names::kAction, str_item(d, "action", w), "action");
  x.reason = str_item(d, "reason", w);
  x.error_kind = from_name(names::kErrorKind, str_item(d, "error_kind", w), "error kind");
  x.error_message = str_item(d, "error_message", w);
  x.target = str_item(d, "target", w);
  x.app_id = str_item(d, "app_id", w);
  x.generation = int_item(d, "generation", w);
  x.next_generation = int_item(d, "next_generation", w);
  x.start = offset_from_py(item(d, "start", w), "decision.start");
  x.low = loss_from_py(item(d, "low", w));
  x.lost_from_ts = opt_str_item(d, "lost_from_ts", w);
  x.lost_to_ts = opt_str_item(d, "lost_to_ts", w);
  const nb::dict r = dict_of(item(d, "reuse", w), "decision.reuse");
  x.reuse =
      recovery::Reuse{from_name(names::kReuseKind, str_item(r, "kind", "reuse"), "reuse kind"),
                      offset_from_py(item(r, "offset", "reuse"), "reuse.offset"), int_item(r, "generation", "reuse")};
  x.mode = mode_from(str_item(d, "mode", w));
  x.interval_ok = bool_item(d, "interval_ok", w);
  for (nb::handle step : item(d, "steps", w)) {
    if (!nb::isinstance<nb::str>(step)) throw nb::type_error("decision.steps must hold strings");
    x.steps.push_back(from_name(names::kStep, nb::cast<std::string>(step), "step"));
  }
  x.warning = str_item(d, "warning", w);
  return x;
}

recovery::DecideInputs decide_inputs_from_py(nb::handle h) {
  const nb::dict d = dict_of(h, "inputs");
  const char* w = "inputs";
  recovery::DecideInputs in;
  in.target = str_item(d, "target", w);
  in.app_id = str_item(d, "app_id", w);
  in.state = state_from_py(item(d, "state", w));
  in.start = offset_from_py(item(d, "start", w), "inputs.start");
  in.mode = mode_from(str_item(d, "mode", w));
  in.observation = observation_from_py(item(d, "observation", w));
  in.opens = opens_from(item(d, "opens", w));
  in.completions = completions_from(item(d, "completions", w));
  in.newest_whole = offset_from_py(item(d, "newest_whole", w), "inputs.newest_whole");
  const nb::handle interval = item(d, "interval_days", w);
  if (nb::isinstance<nb::bool_>(interval) ||
      !(nb::isinstance<nb::int_>(interval) || nb::isinstance<nb::float_>(interval))) {
    throw nb::type_error("inputs.interval_days must be a number");
  }
  in.interval_days = nb::cast<double>(interval);
  in.now = str_item(d, "now", w);
  in.estimate = estimate_from_py(item(d, "estimate", w));
  in.duration_guard = from_name(names::kDurationGuard, str_item(d, "duration_guard", w), "snapshotDurationGuard");
  in.requested = bool_item(d, "requested", w);
  return in;
}

recovery::StartInputs start_inputs_from_py(nb::handle h) {
  const nb::dict d = dict_of(h, "start inputs");
  const char* w = "start inputs";
  recovery::StartInputs in;
  in.state = state_from_py(item(d, "state", w));
  in.last_committed = offset_from_py(item(d, "last_committed", w), "start inputs.last_committed");
  in.has_metadata = bool_item(d, "has_metadata", w);
  in.live_batches_in_facts = bool_item(d, "live_batches_in_facts", w);
  in.bootstrap = bool_item(d, "bootstrap", w);
  in.starting_lsn = opt_lsn_item(d, "starting_lsn", w);
  in.newest_known = offset_from_py(item(d, "newest_known", w), "start inputs.newest_known");
  in.live_checkpoint = str_item(d, "live_checkpoint", w);
  return in;
}

}  // namespace

void bind_recovery(nb::module_& m) {
  nb::module_ rec = m.def_submodule("recovery", "The recovery decision after CDC data loss: pure functions");

  rec.def("enum_names", [] {
    nb::dict d;
    d["mode"] = names_list(names::kMode);
    d["action"] = names_list(names::kAction);
    d["reuse_kind"] = names_list(names::kReuseKind);
    d["start_source"] = names_list(names::kStartSource);
    d["duration_guard"] = names_list(names::kDurationGuard);
    d["error_kind"] = names_list(names::kErrorKind);
    d["step"] = names_list(names::kStep);
    return d;
  });
  rec.def(
      "lost",
      [](const std::string& x, nb::handle observation) {
        return loss_to_py(recovery::lost(Lsn::parse(x), observation_from_py(observation)));
      },
      "x"_a, "observation"_a);
  rec.def(
      "has_range",
      [](nb::handle start, const std::optional<std::string>& max_lsn) {
        const auto s = offset_from_py(start, "start");
        if (!s) throw nb::type_error("start must not be None");
        return recovery::has_range(*s, max_lsn ? std::optional<Lsn>(Lsn::parse(*max_lsn)) : std::nullopt);
      },
      "start"_a, "max_lsn"_a.none());
  rec.def(
      "resolve_start",
      [](nb::handle inputs) {
        const auto r = recovery::resolve_start(start_inputs_from_py(inputs));
        nb::dict d;
        d["start"] = offset_to_py(r.start);
        d["source"] = name(names::kStartSource, r.source);
        return d;
      },
      "inputs"_a);
  rec.def(
      "lock_violation",
      [](const std::string& mode, nb::handle opens, nb::handle completions, nb::handle observation,
         const std::string& target, const std::string& app_id) {
        return recovery::lock_violation(mode_from(mode), opens_from(opens), completions_from(completions),
                                        observation_from_py(observation), target, app_id);
      },
      "mode"_a, "opens"_a, "completions"_a, "observation"_a, "target"_a, "app_id"_a);
  rec.def(
      "estimate_snapshot",
      [](const std::optional<std::int64_t>& rows,
         const std::vector<std::pair<std::int64_t, std::int64_t>>& newest_first,
         const std::optional<double>& retention_hours) {
        std::vector<recovery::SnapshotTiming> timings;
        for (const auto& [r, ms] : newest_first) timings.push_back({r, ms});
        return estimate_to_py(recovery::estimate_snapshot(rows, timings, retention_hours));
      },
      "table_rows"_a.none(), "newest_first"_a, "retention_hours"_a.none());
  rec.def(
      "decide", [](nb::handle inputs) { return decision_to_py(recovery::decide(decide_inputs_from_py(inputs))); },
      "inputs"_a);
  rec.def(
      "conclude",
      [](nb::handle decision, nb::handle snapshot, nb::handle fresh, nb::handle state, const std::string& now,
         const std::optional<std::int64_t>& rows, const std::optional<std::int64_t>& duration_ms) {
        const auto s = offset_from_py(snapshot, "snapshot");
        if (!s) throw nb::type_error("snapshot must not be None");
        const auto c = recovery::conclude(decision_from_py(decision), *s, observation_from_py(fresh),
                                          state_from_py(state), now, rows, duration_ms);
        nb::dict d;
        d["ok"] = c.ok;
        d["state_to_write"] = state_to_py(c.state_to_write);
        d["message"] = c.message;
        return d;
      },
      "decision"_a, "snapshot"_a, "fresh"_a, "state"_a, "now"_a, "rows"_a.none() = nb::none(),
      "duration_ms"_a.none() = nb::none());
}

}  // namespace mssqlcdc::py
