#include "mssqlcdc/tds/faults.hpp"

#include <utility>

#include "mssqlcdc/error.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {

FaultScript::FaultScript(std::vector<Fault> faults) : faults_(std::move(faults)), fired_(faults_.size(), 0) {
  for (Fault& f : faults_) {
    if (f.action == FaultAction::Error) (void)fault_message(f.number, "", 0);  // an unknown number fails now
    f.match = lower(f.match);
  }
}

FaultPlan FaultScript::claim(FaultWhen when, const std::string& statement) {
  FaultPlan plan;
  if (faults_.empty()) return plan;
  const std::string text = lower(statement);
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < faults_.size(); ++i) {
    const Fault& f = faults_[i];
    if (f.when != when || (f.times != 0 && fired_[i] >= f.times)) continue;
    if (when == FaultWhen::Statement && text.find(f.match) == std::string::npos) continue;
    ++fired_[i];
    switch (f.action) {
      case FaultAction::Error: plan.error = f.number; break;
      case FaultAction::Stall: plan.stall = f.stall; break;
      case FaultAction::Drop: plan.drop_after = f.after_rows; break;
      case FaultAction::Rows: plan.rows = f.rows; break;
    }
  }
  return plan;
}

ServerMessage fault_message(std::int32_t number, const std::string& database, std::uint16_t spid) {
  // Severity and state as SQL Server and Azure SQL Database send them (sys.messages; the Azure
  // SQL "transient errors" table for the 40xxx and 49xxx numbers).
  const auto m = [number](std::uint8_t severity, std::uint8_t state, std::string text) {
    return ServerMessage{number, state, severity, std::move(text), "", "", 1};
  };
  const std::string db = database.empty() ? "master" : database;
  switch (number) {
    case 1205:
      return m(13, 51,
               "Transaction (Process ID " + std::to_string(spid) +
                   ") was deadlocked on lock resources with another process and has been chosen as the deadlock "
                   "victim. Rerun the transaction.");
    case 1222: return m(16, 56, "Lock request time out period exceeded.");
    case 4060: return m(11, 1, "Cannot open database \"" + db + "\" requested by the login. The login failed.");
    case 18456: return m(14, 1, "Login failed for user 'sa'.");
    case 40197:
      return m(17, 1,
               "The service has encountered an error processing your request. Please try again. Error code 4815.");
    case 40501:
      return m(20, 1,
               "The service is currently busy. Retry the request after 10 seconds. Incident ID: "
               "00000000-0000-0000-0000-000000000000. Code: 4.");
    case 40613:
      return m(17, 1,
               "Database '" + db +
                   "' on server 'mssql-cdc-emulator' is not currently available. Please retry the connection later. "
                   "If the problem persists, contact customer support, and provide them the session tracing ID of "
                   "'00000000-0000-0000-0000-000000000000'.");
    case 49918: return m(16, 1, "Cannot process request. Not enough resources to process request.");
    default:
      throw Error(ErrorKind::InvalidArgument,
                  "fault error " + std::to_string(number) +
                      " is not one the emulator can send; use 1205, 1222, 4060, 18456, 40197, 40501, 40613 or 49918");
  }
}

}  // namespace mssqlcdc::tds
