#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include "bindings.hpp"
#include "mssqlcdc/lsn.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace mssqlcdc::py {

// LSNs cross the boundary as canonical text: Python code never sees the C++ object.
void bind_lsn(nb::module_& m) {
  nb::module_ lsn = m.def_submodule("lsn", "Exact 80-bit LSN arithmetic on canonical text");
  lsn.def(
      "normalize", [](std::string_view text) { return Lsn::parse(text).to_string(); }, "text"_a);
  lsn.def(
      "increment", [](std::string_view text) { return Lsn::parse(text).increment().to_string(); }, "text"_a);
  lsn.def(
      "decrement", [](std::string_view text) { return Lsn::parse(text).decrement().to_string(); }, "text"_a);
  lsn.def(
      "compare",
      [](std::string_view a, std::string_view b) {
        const auto order = Lsn::parse(a) <=> Lsn::parse(b);
        return order < 0 ? -1 : (order > 0 ? 1 : 0);
      },
      "a"_a, "b"_a);
  lsn.def("zero", [] { return Lsn::zero().to_string(); });
  lsn.def("max", [] { return Lsn::max().to_string(); });
  lsn.def(
      "fields",
      [](std::string_view text) {
        const Lsn l = Lsn::parse(text);
        return nb::make_tuple(l.vlf(), l.block(), l.slot());
      },
      "text"_a);
  lsn.def(
      "from_fields",
      [](std::uint32_t vlf, std::uint32_t block, std::uint16_t slot) { return Lsn(vlf, block, slot).to_string(); },
      "vlf"_a, "block"_a, "slot"_a);
}

}  // namespace mssqlcdc::py
