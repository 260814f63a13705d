// bindings.hpp: one bind_* function per core module; module.cpp calls them all. The binding
// converts types and errors, nothing else: defaults and rules live in the core.
#pragma once

#include <nanobind/nanobind.h>

namespace mssqlcdc::py {

void bind_errors(nanobind::module_& m);
void bind_lsn(nanobind::module_& m);
void bind_checkpoint(nanobind::module_& m);
void bind_recovery(nanobind::module_& m);
void bind_emulator(nanobind::module_& m);
void bind_tds(nanobind::module_& m);

}  // namespace mssqlcdc::py
