#include "jobs.hpp"

#include <string>
#include <utility>

#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/emu/sqlite.hpp"
#include "mssqlcdc/error.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {
namespace {

[[noreturn]] void sql_error(int number, const std::string& text) { throw Error(ErrorKind::Sql, text, number); }

// A stopped capture job keeps its settings here, "<capture>|<polling_interval_seconds>", while
// the live settings hold it still (manual capture, no polling), so a start restores them.
constexpr const char* kStoppedKey = "tds.capture_job_stopped";

// sp_cdc_add_job's @pollinginterval default, for a job made continuous without an interval.
constexpr std::int64_t kDefaultPolling = 5;

bool is_capture(const JobCall& call) {
  const std::string type = lower(call.job_type.value_or("capture"));
  if (type == "capture") return true;
  if (type == "cleanup") return false;
  sql_error(22992, "The specified @job_type, " + *call.job_type +
                       ", is not supported. The value specified for @job_type must be N'capture' to indicate a "
                       "capture job, or N'cleanup' to indicate a cleanup job.");
}

std::optional<std::int64_t> value(const JobCall& call, const std::string& name) {
  const auto it = call.values.find(name);
  if (it == call.values.end()) return std::nullopt;
  return it->second;
}

struct Stopped {
  std::string capture;
  std::string polling;
};

std::optional<Stopped> stopped(emu::Engine& engine) {
  const auto v = emu::meta_get(engine.db(), kStoppedKey);
  if (!v || v->empty()) return std::nullopt;
  const auto bar = v->find('|');
  return Stopped{v->substr(0, bar), v->substr(bar + 1)};
}

void set_stopped(emu::Engine& engine, const std::optional<Stopped>& s) {
  emu::WriteTxn txn(engine.db());
  emu::meta_set(engine.db(), kStoppedKey, s ? s->capture + "|" + s->polling : "");
  txn.commit();
}

// The capture job's polling interval as configured: the live setting, or a stopped job's.
std::string polling(emu::Engine& engine) {
  if (const auto s = stopped(engine)) return s->polling;
  return engine.setting("polling_interval_seconds");
}

void set_polling(emu::Engine& engine, const std::string& text) {
  if (auto s = stopped(engine)) {
    if (text != "null") engine.configure("polling_interval_seconds", text);  // validates it
    engine.configure("polling_interval_seconds", "null");
    s->polling = text;
    set_stopped(engine, s);
    return;
  }
  engine.configure("polling_interval_seconds", text);
}

[[noreturn]] void other_job(const std::string& parameter, bool capture) {
  sql_error(22996, "The parameter " + parameter + " is not valid for the " + (capture ? "capture" : "cleanup") +
                       " job. Specify NULL for it, or omit it.");
}

void positive(const JobCall& call, const std::string& name) {
  if (const auto v = value(call, name); v && *v <= 0) {
    sql_error(22999, "The value specified for the parameter " + name + " must be greater than 0.");
  }
}

// One capture job cycle, as a job that is not continuous runs it: up to `scans` scans of
// maxtrans transactions, then it exits. Immediate capture has nothing left to scan.
// The cycles sys.dm_cdc_log_scan_sessions shows, one "id|start|end|count|start_lsn|end_lsn" line
// each, the last kMaxSessions of them.
constexpr const char* kSessionsKey = "tds.log_scan_sessions";
constexpr std::size_t kMaxSessions = 32;

std::string lsn_text(const auto& lsn) { return lsn ? lsn->to_string() : std::string(); }

void record_session(emu::Engine& engine, const ScanSession& s) {
  std::vector<ScanSession> all = scan_sessions(engine.db());
  all.push_back(s);
  if (all.size() > kMaxSessions) all.erase(all.begin(), all.end() - kMaxSessions);
  std::string text;
  for (const auto& x : all) {
    text += std::to_string(x.session_id) + "|" + std::to_string(x.start_utc) + "|" + std::to_string(x.end_utc) + "|" +
            std::to_string(x.tran_count) + "|" + x.start_lsn + "|" + x.end_lsn + "\n";
  }
  emu::WriteTxn txn(engine.db());
  emu::meta_set(engine.db(), kSessionsKey, text);
  txn.commit();
}

void one_cycle(emu::Engine& engine, std::int64_t scans) {
  ScanSession s;
  const auto before = scan_sessions(engine.db());
  s.session_id = before.empty() ? 1 : before.back().session_id + 1;
  s.start_utc = engine.last_time();
  s.start_lsn = lsn_text(engine.max_lsn());
  const std::int64_t pending = engine.pending_capture();
  for (std::int64_t i = 0; i < scans && engine.pending_capture() > 0; ++i) (void)engine.capture();
  s.tran_count = pending - engine.pending_capture();
  s.end_utc = engine.last_time();
  s.end_lsn = lsn_text(engine.max_lsn());
  record_session(engine, s);
}

}  // namespace

std::vector<ScanSession> scan_sessions(emu::Db& db) {
  std::vector<ScanSession> out;
  const auto text = emu::meta_get(db, kSessionsKey);
  if (!text) return out;
  std::size_t at = 0;
  while (at < text->size()) {
    const std::size_t end = text->find('\n', at);
    const std::string line = text->substr(at, end - at);
    at = end == std::string::npos ? text->size() : end + 1;
    std::vector<std::string> f(1);
    for (const char c : line) {
      if (c == '|') f.emplace_back();
      else f.back() += c;
    }
    if (f.size() != 6) continue;  // a line this version does not write
    out.push_back({std::stoll(f[0]), std::stoll(f[1]), std::stoll(f[2]), std::stoll(f[3]), f[4], f[5]});
  }
  return out;
}

JobViews job_views(emu::Engine& engine, const std::string& database) {
  return {help_jobs(engine, database).front().rows, scan_sessions(engine.db())};
}

std::vector<ResultSet> help_jobs(emu::Engine& engine, const std::string& database) {
  ResultSet rs;
  const std::pair<const char*, ColumnType> columns[] = {
      {"job_id", ColumnType{SqlKind::UniqueIdentifier, 16}},
      {"job_type", ColumnType{SqlKind::NVarChar, 20}},
      {"job_name", ColumnType{SqlKind::NVarChar, 128}},
      {"maxtrans", ColumnType{SqlKind::Int}},
      {"maxscans", ColumnType{SqlKind::Int}},
      {"continuous", ColumnType{SqlKind::Bit}},
      {"pollinginterval", ColumnType{SqlKind::BigInt}},
      {"retention", ColumnType{SqlKind::BigInt}},
      {"threshold", ColumnType{SqlKind::BigInt}},
  };
  for (const auto& [name, type] : columns) rs.columns.push_back(Column{name, type, true});
  // The emulator keeps no msdb: each job's id is fixed, its last byte telling the two apart.
  const auto job_id = [](std::uint8_t n) {
    Bytes id(16, 0);
    id[0] = 0xCD;
    id[15] = n;
    return id;
  };
  const std::string poll = polling(engine);
  const bool continuous = poll != "null";
  // As in msdb.dbo.cdc_jobs, a job's row holds 0 in the columns of the other job type.
  rs.rows.push_back({job_id(1), std::string("capture"), "cdc." + database + "_capture",
                     std::stoll(engine.setting("maxtrans")), std::stoll(engine.setting("maxscans")), continuous,
                     continuous ? std::stoll(poll) : std::int64_t{0}, std::int64_t{0}, std::int64_t{0}});
  rs.rows.push_back({job_id(2), std::string("cleanup"), "cdc." + database + "_cleanup", std::int64_t{0},
                     std::int64_t{0}, false, std::int64_t{0}, std::stoll(engine.setting("retention_minutes")),
                     std::stoll(engine.setting("cleanup_threshold"))});
  return {std::move(rs)};
}

void change_job(emu::Engine& engine, const JobCall& call) {
  const bool capture = is_capture(call);
  for (const char* name : {"@maxtrans", "@maxscans", "@continuous", "@pollinginterval"}) {
    if (!capture && value(call, name)) other_job(name, capture);
  }
  for (const char* name : {"@retention", "@threshold"}) {
    if (capture && value(call, name)) other_job(name, capture);
  }
  positive(call, "@maxtrans");
  positive(call, "@maxscans");
  if (const auto r = value(call, "@retention"); r && (*r < 1 || *r > 52'494'800)) {
    sql_error(22994,
              "The retention value specified for the Change Data Capture cleanup process must be greater than 0 and "
              "less than or equal to 52494800. When creating or modifying the cleanup job, specify a retention value "
              "(in minutes) within that range. If this error is encountered when executing the "
              "sys.sp_cdc_cleanup_change_table stored procedure, reset the retention value associated with the job "
              "to a non-negative value less than 52594800 by using the sp_cdc_change_job stored procedure.");
  }
  if (const auto t = value(call, "@threshold"); t && *t < 1) {
    sql_error(22850,
              "The threshold value specified for the Change Data Capture cleanup process must be greater than 0. When "
              "creating or modifying the cleanup job, specify a positive threshold value. If this error is encountered "
              "when executing the sys.sp_cdc_cleanup_change_table stored procedure, reset the threshold value "
              "associated with the job to a non-negative value by using the sp_cdc_change_job stored procedure.");
  }
  const auto poll = value(call, "@pollinginterval");
  if (poll && (*poll < 0 || *poll > 86'400)) {
    sql_error(22999, "The value specified for the parameter @pollinginterval must be between 0 and 86400 seconds.");
  }
  // @continuous 0 sets the interval to 0 whatever @pollinginterval says; an interval above 0
  // with @continuous NULL makes the job continuous; @continuous 1 alone keeps the interval.
  const auto cont = value(call, "@continuous");
  const bool was_continuous = polling(engine) != "null";
  std::optional<std::string> next;
  if (cont && *cont == 0) {
    next = "null";
  } else if (poll && (*poll > 0 || (cont && *cont != 0) || was_continuous)) {
    if (*poll == 0) {
      throw Error(ErrorKind::InvalidArgument,
                  "@pollinginterval = 0 (no wait between scans) is not modeled: the emulator's capture job waits at "
                  "least 1 second between cycles");
    }
    if (*poll > 86'399) {
      throw Error(ErrorKind::InvalidArgument,
                  "@pollinginterval = 86400 is over what the emulator's capture job models (1..86399 seconds)");
    }
    next = std::to_string(*poll);
  } else if (cont && !was_continuous) {
    next = std::to_string(kDefaultPolling);
  }
  for (const char* name : {"@maxtrans", "@maxscans"}) {
    if (const auto v = value(call, name); v && *v > 1'000'000) {
      throw Error(ErrorKind::InvalidArgument,
                  std::string(name) + " = " + std::to_string(*v) + " is over what the emulator models (1..1000000)");
    }
  }
  if (const auto v = value(call, "@maxtrans")) engine.configure("maxtrans", std::to_string(*v));
  if (const auto v = value(call, "@maxscans")) engine.configure("maxscans", std::to_string(*v));
  if (const auto r = value(call, "@retention")) engine.configure("retention_minutes", std::to_string(*r));
  if (const auto t = value(call, "@threshold")) engine.configure("cleanup_threshold", std::to_string(*t));
  if (next) set_polling(engine, *next);
}

void start_job(emu::Engine& engine, const JobCall& call) {
  if (!is_capture(call)) {
    engine.run_cleanup_job(std::nullopt);
    return;
  }
  if (const auto s = stopped(engine)) {
    set_stopped(engine, std::nullopt);
    if (s->capture != "manual") engine.configure("capture", s->capture);
    engine.configure("polling_interval_seconds", s->polling);
  }
  if (engine.setting("capture") == "manual" && engine.setting("polling_interval_seconds") == "null") {
    one_cycle(engine, std::stoll(engine.setting("maxscans")));
  }
}

void stop_job(emu::Engine& engine, const JobCall& call) {
  if (!is_capture(call) || stopped(engine)) return;
  const Stopped s{engine.setting("capture"), engine.setting("polling_interval_seconds")};
  if (s.capture != "manual") engine.configure("capture", "manual");
  if (s.polling != "null") engine.configure("polling_interval_seconds", "null");
  set_stopped(engine, s);
}

void scan(emu::Engine& engine, const JobCall& call) {
  if (const auto c = value(call, "@continuous"); c && *c != 0) {
    sql_error(50000,
              "sp_cdc_scan with @continuous = 1 scans until stopped, which this emulator does not model; start the "
              "capture job with sys.sp_cdc_start_job instead");
  }
  positive(call, "@maxtrans");
  positive(call, "@maxscans");
  if (const auto t = value(call, "@maxtrans"); t && std::to_string(*t) != engine.setting("maxtrans")) {
    sql_error(50000, "this emulator's scans take the capture job's maxtrans (" + engine.setting("maxtrans") +
                         "); change it with sys.sp_cdc_change_job @maxtrans first");
  }
  one_cycle(engine, value(call, "@maxscans").value_or(std::stoll(engine.setting("maxscans"))));
}

}  // namespace mssqlcdc::tds
