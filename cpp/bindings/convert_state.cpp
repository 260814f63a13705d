#include "convert_state.hpp"

#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace mssqlcdc::py {
namespace {

nb::dict as_dict(nb::handle value, const char* what) {
  if (!nb::isinstance<nb::dict>(value)) {
    throw nb::type_error((std::string(what) + " must be a dict of its dataclass's fields").c_str());
  }
  return nb::borrow<nb::dict>(value);
}

}  // namespace

nb::handle item(const nb::dict& d, const char* key, const char* what) {
  if (!d.contains(key)) throw nb::type_error((std::string(what) + " has no field '" + key + "'").c_str());
  return d[key];
}

std::string str_item(const nb::dict& d, const char* key, const char* what) {
  const nb::handle v = item(d, key, what);
  if (!nb::isinstance<nb::str>(v)) throw nb::type_error((std::string(what) + "." + key + " must be a str").c_str());
  return nb::cast<std::string>(v);
}

std::optional<std::string> opt_str_item(const nb::dict& d, const char* key, const char* what) {
  if (item(d, key, what).is_none()) return std::nullopt;
  return str_item(d, key, what);
}

std::optional<Lsn> opt_lsn_item(const nb::dict& d, const char* key, const char* what) {
  const auto text = opt_str_item(d, key, what);
  if (!text) return std::nullopt;
  return Lsn::parse(*text);
}

nb::object offset_to_py(const std::optional<Offset>& offset) {
  if (!offset) return nb::none();
  nb::dict d;
  d["lsn"] = offset->lsn.to_string();
  d["commit_ts"] = offset->commit_ts.empty() ? nb::none() : nb::cast(offset->commit_ts);
  return d;
}

std::optional<Offset> offset_from_py(nb::handle value, const char* what) {
  if (value.is_none()) return std::nullopt;
  const nb::dict d = as_dict(value, what);
  return Offset{Lsn::parse(str_item(d, "lsn", what)), opt_str_item(d, "commit_ts", what).value_or("")};
}

nb::dict state_to_py(const State& s) {
  nb::dict d;
  d["generation"] = s.generation;
  d["snapshot"] = offset_to_py(s.snapshot);
  d["at"] = s.at ? nb::cast(*s.at) : nb::none();
  d["recovering"] = offset_to_py(s.recovering);
  d["failed_at"] = s.failed_at ? nb::cast(*s.failed_at) : nb::none();
  return d;
}

State state_from_py(nb::handle value) {
  const nb::dict d = as_dict(value, "state");
  State s;
  const nb::handle g = item(d, "generation", "state");
  if (!nb::isinstance<nb::int_>(g) || nb::isinstance<nb::bool_>(g))
    throw nb::type_error("state.generation must be an int");
  s.generation = nb::cast<int>(g);
  s.snapshot = offset_from_py(item(d, "snapshot", "state"), "state.snapshot");
  s.at = opt_str_item(d, "at", "state");
  s.recovering = offset_from_py(item(d, "recovering", "state"), "state.recovering");
  s.failed_at = opt_str_item(d, "failed_at", "state");
  return s;
}

Observation observation_from_py(nb::handle value) {
  const nb::dict d = as_dict(value, "observation");
  Observation o;
  o.max_lsn = opt_lsn_item(d, "max_lsn", "observation");
  for (nb::handle h : item(d, "instances", "observation")) {
    const nb::dict i = as_dict(h, "observation.instances[]");
    o.instances.push_back(Instance{str_item(i, "name", "instance"), Lsn::parse(str_item(i, "start_lsn", "instance")),
                                   opt_lsn_item(i, "min_lsn", "instance"),
                                   opt_str_item(i, "min_commit_ts", "instance").value_or("")});
  }
  return o;
}

}  // namespace mssqlcdc::py
