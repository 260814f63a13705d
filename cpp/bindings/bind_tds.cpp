// bind_tds.cpp: the `_native.tds` submodule: the TDS server over an emulator file. The server's
// threads never call Python; stop() waits for them with the GIL released.
#include <nanobind/nanobind.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "mssqlcdc/tds/server.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace mssqlcdc::py {

void bind_tds(nb::module_& m) {
  nb::module_ t = m.def_submodule("tds", "The emulator's TDS front end (issue 15)");
  nb::class_<tds::Server>(t, "Server")
      .def(
          "__init__",
          [](tds::Server* self, const std::string& path, const std::string& host, std::uint16_t port,
             const std::string& database, std::size_t max_connections, bool tls) {
            // nanobind constructs in place into the storage it allocated: its custom __init__ form.
            new (self) tds::Server(tds::ServerOptions{path, host, port, database, max_connections, tls});
          },
          "path"_a, "host"_a, "port"_a, "database"_a, "max_connections"_a, "tls"_a = false)
      .def_prop_ro("host", &tds::Server::host)
      .def_prop_ro("port", &tds::Server::port)
      .def_prop_ro("database", &tds::Server::database)
      .def_prop_ro("certificate_pem", &tds::Server::certificate_pem)
      .def("live_connections", &tds::Server::live_connections, nb::call_guard<nb::gil_scoped_release>())
      .def("stop", &tds::Server::stop, nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace mssqlcdc::py
