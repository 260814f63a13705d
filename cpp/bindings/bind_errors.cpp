#include <Python.h>

#include <string>

#include "bindings.hpp"
#include "mssqlcdc/error.hpp"

namespace nb = nanobind;

namespace mssqlcdc::py {
namespace {

const char* kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return "InvalidArgument";
    case ErrorKind::OutOfRange: return "OutOfRange";
    case ErrorKind::Io: return "Io";
    case ErrorKind::NotFound: return "NotFound";
    case ErrorKind::Corrupt: return "Corrupt";
    case ErrorKind::State: return "State";
    case ErrorKind::DataLoss: return "DataLoss";
    case ErrorKind::Sql: return "Sql";
    case ErrorKind::EmuUnknownObject: return "EmuUnknownObject";
    case ErrorKind::EmuSchema: return "EmuSchema";
    case ErrorKind::EmuInstanceLimit: return "EmuInstanceLimit";
    case ErrorKind::EmuConstraint: return "EmuConstraint";
    case ErrorKind::EmuClock: return "EmuClock";
    case ErrorKind::EmuInvalidRange: return "EmuInvalidRange";
    case ErrorKind::EmuCapture: return "EmuCapture";
    case ErrorKind::EmuFileFormat: return "EmuFileFormat";
    case ErrorKind::EmuFormatVersion: return "EmuFormatVersion";
    case ErrorKind::EmuBusy: return "EmuBusy";
    case ErrorKind::EmuHook: return "EmuHook";
    case ErrorKind::EmuArgument: return "EmuArgument";
    case ErrorKind::EmuPermission: return "EmuPermission";
    case ErrorKind::FileExists: return "FileExists";
    case ErrorKind::FileNotFound: return "FileNotFound";
    case ErrorKind::Type: return "Type";
  }
  return "State";
}

// mssql_cdc.errors.from_native(kind, message, number) builds the Python error, so the
// exception classes are defined once, in Python, where callers catch them.
void raise_python(const Error& e) {
  nb::object factory = nb::module_::import_("mssql_cdc.errors").attr("from_native");
  nb::object exc = factory(kind_name(e.kind()), e.what(), e.number());
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Error& e) {
    try {
      raise_python(e);
    } catch (nb::python_error& pe) {
      pe.restore();  // the error module itself failed to import: surface that instead
    }
  }
}

}  // namespace

void bind_errors(nb::module_& m) {
  nb::register_exception_translator(&translate);
  (void)m;
}

}  // namespace mssqlcdc::py
