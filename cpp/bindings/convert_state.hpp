// convert_state.hpp: offsets, generation states and observations between Python dicts and the
// core's structs. Dicts are the plain-data form of the frozen dataclasses in
// mssql_cdc.core.checkpoint and mssql_cdc.core.recovery_decision (dataclasses.asdict); LSNs and times
// travel as canonical text, an unknown commit time as None.
#pragma once

#include <nanobind/nanobind.h>

#include <optional>
#include <string>

#include "mssqlcdc/generation.hpp"
#include "mssqlcdc/recovery.hpp"

namespace mssqlcdc::py {

// The value of `key`; a missing key is a TypeError naming it and the dict's role.
nanobind::handle item(const nanobind::dict& d, const char* key, const char* what);
std::string str_item(const nanobind::dict& d, const char* key, const char* what);
std::optional<std::string> opt_str_item(const nanobind::dict& d, const char* key, const char* what);
std::optional<Lsn> opt_lsn_item(const nanobind::dict& d, const char* key, const char* what);

nanobind::object offset_to_py(const std::optional<Offset>& offset);
std::optional<Offset> offset_from_py(nanobind::handle value, const char* what);

nanobind::dict state_to_py(const State& state);
State state_from_py(nanobind::handle value);

Observation observation_from_py(nanobind::handle value);

}  // namespace mssqlcdc::py
