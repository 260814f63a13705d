// bind_tds.cpp: the `_native.tds` submodule: the TDS server over an emulator file. The server's
// threads never call Python; stop() waits for them with the GIL released.
#include <nanobind/nanobind.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "bindings.hpp"
#include "mssqlcdc/tds/server.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace mssqlcdc::py {
namespace {

// (when, match, action, number, stall_ms, after_rows, rows, times), from mssql_cdc.testing.
using FaultTuple = std::tuple<std::string, std::string, std::string, std::int32_t, std::int64_t, std::uint64_t,
                              std::uint64_t, std::uint32_t>;

std::vector<tds::Fault> to_faults(const std::vector<FaultTuple>& items) {
  std::vector<tds::Fault> faults;
  for (const auto& [when, match, action, number, stall_ms, after_rows, rows, times] : items) {
    tds::Fault f;
    f.when = when == "login" ? tds::FaultWhen::Login : tds::FaultWhen::Statement;
    f.match = match;
    if (action == "error") f.action = tds::FaultAction::Error;
    else if (action == "stall") f.action = tds::FaultAction::Stall;
    else if (action == "drop") f.action = tds::FaultAction::Drop;
    else if (action == "rows") f.action = tds::FaultAction::Rows;
    else throw std::invalid_argument("fault action '" + action + "' is none of error, stall, drop, rows");
    f.number = number;
    f.stall = std::chrono::milliseconds(stall_ms);
    f.after_rows = after_rows;
    f.rows = rows;
    f.times = times;
    faults.push_back(std::move(f));
  }
  return faults;
}

}  // namespace

void bind_tds(nb::module_& m) {
  nb::module_ t = m.def_submodule("tds", "The emulator's TDS front end (issue 15)");
  nb::class_<tds::Server>(t, "Server")
      .def(
          "__init__",
          [](tds::Server* self, const std::string& path, const std::string& host, std::uint16_t port,
             const std::string& database, std::size_t max_connections, const std::vector<FaultTuple>& faults, bool tls,
             const std::optional<std::tuple<std::string, nb::bytes, nb::bytes, std::uint32_t>>& login,
             const std::optional<std::tuple<nb::bytes, std::optional<std::int64_t>>>& access_token,
             const std::string& log_statements) {
            std::optional<tds::SqlLogin> sql_login;
            if (login) {
              const auto& [name, salt, hash, iterations] = *login;
              sql_login = tds::SqlLogin{name, std::string(salt.c_str(), salt.size()),
                                        std::string(hash.c_str(), hash.size()), iterations};
            }
            std::optional<tds::AccessTokenCheck> token;
            if (access_token) {
              const auto& [hash, expires_at] = *access_token;
              token = tds::AccessTokenCheck{std::string(hash.c_str(), hash.size()), expires_at};
            }
            // nanobind constructs in place into the storage it allocated: its custom __init__ form.
            tds::ServerOptions options;
            options.file = path;
            options.host = host;
            options.port = port;
            options.database = database;
            options.max_connections = max_connections;
            options.faults = to_faults(faults);
            options.tls = tls;
            options.login = std::move(sql_login);
            options.access_token = std::move(token);
            options.log_statements = log_statements;
            new (self) tds::Server(std::move(options));
          },
          "path"_a, "host"_a, "port"_a, "database"_a, "max_connections"_a, "faults"_a = std::vector<FaultTuple>{},
          "tls"_a = false, "login"_a = nb::none(), "access_token"_a = nb::none(), "log_statements"_a = "")
      .def_prop_ro("host", &tds::Server::host)
      .def_prop_ro("port", &tds::Server::port)
      .def_prop_ro("database", &tds::Server::database)
      .def_prop_ro("certificate_pem", &tds::Server::certificate_pem)
      .def("live_connections", &tds::Server::live_connections, nb::call_guard<nb::gil_scoped_release>())
      .def("stop", &tds::Server::stop, nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace mssqlcdc::py
