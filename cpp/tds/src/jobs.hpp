// jobs.hpp: CDC's job procedures over TDS (decision 1363): sys.sp_cdc_help_jobs,
// sp_cdc_change_job, sp_cdc_start_job, sp_cdc_stop_job and sp_cdc_scan, wired to the
// emulator's own job settings, so what a client changes is what the jobs then do and what the
// in-process API's settings() shows.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "statements.hpp"

namespace mssqlcdc::emu {
class Engine;
class Db;
}  // namespace mssqlcdc::emu

namespace mssqlcdc::tds {

// One call of a job procedure after binding: @job_type as given (NULL: the procedure's default,
// capture) and each numeric argument the caller passed non-NULL, by name with its '@'.
struct JobCall {
  std::optional<std::string> job_type;
  std::map<std::string, std::int64_t> values;
};

// sys.sp_cdc_help_jobs: one row per job (capture, then cleanup) with SQL Server's columns; the
// jobs are named cdc.<database>_capture and cdc.<database>_cleanup.
[[nodiscard]] std::vector<ResultSet> help_jobs(emu::Engine& engine, const std::string& database);

// sys.sp_cdc_change_job: validates as SQL Server does (22992 an unknown job type, 22994
// retention outside 1..52494800, 22850 a threshold below 1, 22996 a parameter of the other
// job type, 22999 a bad @maxtrans, @maxscans or @pollinginterval), then stores the settings.
// Throws Error(Sql, text, number); the emulator's own limits come back as InvalidArgument.
void change_job(emu::Engine& engine, const JobCall& call);

// sys.sp_cdc_start_job: the capture job resumes after a stop, and a job that is not continuous
// runs one cycle; the cleanup job runs once now. Throws 22992 for an unknown job type.
void start_job(emu::Engine& engine, const JobCall& call);

// sys.sp_cdc_stop_job: the capture job stops capturing until started (its settings kept, and
// shown by help_jobs); the cleanup job has no run in progress to stop. Throws 22992.
void stop_job(emu::Engine& engine, const JobCall& call);

// sys.sp_cdc_scan: one capture cycle of up to @maxscans (else the setting) scans of maxtrans
// transactions. Throws 50000 for @continuous = 1 (a scan that never returns) and for a
// @maxtrans other than the setting's.
void scan(emu::Engine& engine, const JobCall& call);

// One capture cycle a job procedure ran (sp_cdc_scan, sp_cdc_start_job), as
// sys.dm_cdc_log_scan_sessions shows it (decision 1439): times in UTC microseconds, LSNs as
// "0x" + 20 hex digits (empty before the first), tran_count the log entries it captured.
struct ScanSession {
  std::int64_t session_id = 0;
  std::int64_t start_utc = 0;
  std::int64_t end_utc = 0;
  std::int64_t tran_count = 0;
  std::string start_lsn;
  std::string end_lsn;
};

// The sessions kept in the file, oldest first: the last 32 cycles the job procedures ran.
[[nodiscard]] std::vector<ScanSession> scan_sessions(emu::Db& db);

// What msdb.dbo.cdc_jobs and sys.dm_cdc_log_scan_sessions show: help_jobs' rows and the
// sessions, read through the connection's engine.
struct JobViews {
  std::vector<std::vector<Value>> jobs;
  std::vector<ScanSession> sessions;
};
[[nodiscard]] JobViews job_views(emu::Engine& engine, const std::string& database);

}  // namespace mssqlcdc::tds
