#include "bindings.hpp"

NB_MODULE(_native, m) {
  m.doc() = "mssql-cdc native core: LSNs, checkpoint state, recovery decisions, the CDC emulator and its TDS front end";
  mssqlcdc::py::bind_errors(m);
  mssqlcdc::py::bind_lsn(m);
  mssqlcdc::py::bind_checkpoint(m);
  mssqlcdc::py::bind_recovery(m);
  mssqlcdc::py::bind_emulator(m);
  mssqlcdc::py::bind_tds(m);
}
