// error.hpp: the one exception type the core throws. The binding maps `kind` to a class in
// mssql_cdc.errors, so a C++ message reaches Python unchanged and with the right type.
#pragma once

#include <stdexcept>
#include <string>

namespace mssqlcdc {

// What went wrong, coarsely: the binding picks the Python exception class from it, and callers
// branch on it instead of on message text.
enum class ErrorKind {
  InvalidArgument,  // bad text or value from the caller: Python ValueError
  OutOfRange,       // arithmetic past the LSN domain: Python OverflowError
  Io,               // a file could not be read or written: Python OSError
  NotFound,         // a named object does not exist: Python LookupError-like errors
  Corrupt,          // stored state is not what this version can read
  State,            // the operation is not allowed now
  DataLoss,         // changes were purged before they were read
  Sql,              // an emulated SQL Server error with a number
  // The CDC emulator's errors, one per Python class of mssql_cdc.emulator.
  EmuUnknownObject,  // UnknownObjectError: table, column (207), instance (208)
  EmuSchema,         // SchemaError: bad type or name, duplicates, key column DDL
  EmuInstanceLimit,  // CaptureInstanceLimitError: a third capture instance
  EmuConstraint,     // ConstraintError: 2627, 515, 2628, 8115, 273, 7139, missing key
  EmuClock,          // ClockError: a time before the emulator's last time
  EmuInvalidRange,   // InvalidRangeError: reader range checks (313)
  EmuCapture,        // CaptureError: a capture cycle cannot apply a record
  EmuFileFormat,     // FileFormatError: not an emulator file
  EmuFormatVersion,  // FormatVersionError: a newer format
  EmuBusy,           // BusyError: a lock wait past the busy timeout
  EmuHook,           // HookError: a fault hook failed when it fired
  EmuArgument,       // ArgumentError: an argument SQL Server refuses by number (22964)
  EmuPermission,     // PermissionDeniedError: a user may not read an instance (229)
  FileExists,        // Python FileExistsError
  FileNotFound,      // Python FileNotFoundError
  Type,              // Python TypeError
};

// Every failure the libraries report, in core, the emulator and its TDS front end alike. what()
// is a complete sentence for the user; kind() says which Python class it becomes. Code that
// throws something else (std::bad_alloc, std::bad_variant_access for a misused accessor) has a
// bug or ran out of memory. Immutable once thrown, so safe to read from any thread.
class Error : public std::runtime_error {
 public:
  // `number` is SQL Server's error number when `kind` stands for a server error, else 0.
  Error(ErrorKind kind, const std::string& message, int number = 0)
      : std::runtime_error(message), kind_(kind), number_(number) {}

  // Which kind of failure this is.
  [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }
  // SQL Server's error number for emulated server errors (515, 2627, ...); 0 otherwise.
  [[nodiscard]] int number() const noexcept { return number_; }

 private:
  ErrorKind kind_;
  int number_;
};

}  // namespace mssqlcdc
