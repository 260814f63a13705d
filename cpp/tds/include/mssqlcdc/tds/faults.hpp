// faults.hpp: a test-only fault script for the TDS server. Each Fault names a moment (a login,
// or a statement whose text contains `match`) and what the server does there instead of, or on
// top of, its normal answer: raise a SQL Server error, stall, cut the connection after some rows,
// or answer with synthesized rows (to stream a large result without a large table). Production
// servers run with an empty script. A script is shared by every connection of one server, so a
// fault with `times` fires that many times in all, whichever connection meets it first.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mssqlcdc/tds/tokens.hpp"

namespace mssqlcdc::tds {

// The moment a fault waits for: a login, or a statement.
enum class FaultWhen : std::uint8_t { Login, Statement };

enum class FaultAction : std::uint8_t {
  Error,  // answer SQL Server's error `number` (severity 20 and up also closes the connection)
  Stall,  // wait `stall` before answering; ATTENTION or stop() ends the wait
  Drop,   // send `after_rows` rows of the first result set, then close the socket mid-message
  Rows,   // answer with `rows` synthesized rows: n bigint (1, 2, ...), text nvarchar(40)
};

// One scripted fault: when it fires and what it does; fields other actions ignore stay zero.
struct Fault {
  FaultWhen when = FaultWhen::Statement;
  std::string match;  // case-insensitive substring of the statement text; empty matches all
  FaultAction action = FaultAction::Error;
  std::int32_t number = 0;             // Error: a number fault_message() knows
  std::chrono::milliseconds stall{0};  // Stall
  std::uint64_t after_rows = 0;        // Drop
  std::uint64_t rows = 0;              // Rows
  std::uint32_t times = 0;             // how many times it fires in all; 0: every time
};

// What the faults that matched one statement ask for, all at once.
struct FaultPlan {
  std::optional<std::chrono::milliseconds> stall;
  std::optional<std::int32_t> error;
  std::optional<std::uint64_t> drop_after;
  std::optional<std::uint64_t> rows;
};

// The faults of one server and how often each fired.
class FaultScript {
 public:
  // A script of `faults`, none fired yet.
  explicit FaultScript(std::vector<Fault> faults);
  // Claims the faults matching a statement (or, for Login, any login); thread-safe.
  [[nodiscard]] FaultPlan claim(FaultWhen when, const std::string& statement);
  // Whether the script has no faults at all (fired or not).
  [[nodiscard]] bool empty() const { return faults_.empty(); }

 private:
  std::mutex mutex_;
  std::vector<Fault> faults_;
  std::vector<std::uint32_t> fired_;
};

// SQL Server's own number, state, severity and text for an error a fault raises; `database`
// and `spid` fill the texts that name them. Throws Error(InvalidArgument) for a number this
// table does not know, so a script cannot send an error SQL Server never would.
[[nodiscard]] ServerMessage fault_message(std::int32_t number, const std::string& database, std::uint16_t spid);

}  // namespace mssqlcdc::tds
