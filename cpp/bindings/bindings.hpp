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

// A Python list of to_py(x) for every x of `items`, in order.
template <typename Items, typename ToPy>
nanobind::list list_of(const Items& items, ToPy to_py) {
  nanobind::list out;
  for (const auto& x : items) out.append(to_py(x));
  return out;
}

}  // namespace mssqlcdc::py
