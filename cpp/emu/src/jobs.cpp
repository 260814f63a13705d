// jobs.cpp: the capture and cleanup jobs of a real server, run on the emulator's clock
// (decision 1240). Nothing runs in the background: before each timed event, and on advance(),
// the cycles, idle entries and cleanup runs that fell due up to that time run first, in time
// order, so the outcome depends only on the times of the calls.
#include <algorithm>
#include <string>

#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

constexpr Micros kSecond = 1'000'000;
constexpr Micros kDay = 86'400 * kSecond;

std::optional<Micros> stored_time(Db& db, const std::string& key) {
  const auto v = meta_get(db, key);
  if (!v || v->empty()) return std::nullopt;
  return std::stoll(*v);
}

// The first instant after `after` whose time of day in the server zone is `hh_mm`.
Micros next_daily(const TimeZone& zone, Micros after, const std::string& hh_mm) {
  const Micros of_day = (std::stoll(hh_mm.substr(0, 2)) * 3600 + std::stoll(hh_mm.substr(3, 2)) * 60) * kSecond;
  const Micros local_after = zone.to_local(after);
  Micros day = local_after - ((local_after % kDay) + kDay) % kDay;
  for (;;) {
    const Micros local = day + of_day;
    // Twice, so a date whose offset differs from the guess's lands on its own offset.
    Micros utc = local - zone.offset_at(local / kSecond) * kSecond;
    utc = local - zone.offset_at(utc / kSecond) * kSecond;
    if (utc > after) return utc;
    day += kDay;
  }
}

}  // namespace

bool Engine::jobs_on() {
  return cached_setting("cleanup_job_time") != "null" ||
         (cached_setting("polling_interval_seconds") != "null" && manual());
}

void Engine::before_event(std::optional<Micros> at) {
  Micros last = 0;
  {
    ReadTxn r(*db_);
    sync_cache();
    if (!jobs_on()) return;
    last = WriteState::load(*db_).last_time;
  }
  run_jobs(next_event_time(at, last));
}

Micros Engine::advance(std::optional<Micros> at) {
  const Micros t = next_event_time(at, last_time());
  run_jobs(t);
  Txn txn(*this);
  WriteState s = load_state();
  s.last_time = std::max(s.last_time, t);
  store_state(s);
  txn.commit();
  return s.last_time;
}

void Engine::run_jobs(Micros until) {
  for (;;) {
    Txn txn(*this);
    WriteState s = load_state();
    const std::string poll_text = cached_setting("polling_interval_seconds");
    const std::string clean_text = cached_setting("cleanup_job_time");
    std::optional<Micros> cycle;
    std::optional<Micros> clean;
    Micros poll = 0;
    if (poll_text != "null" && manual()) {
      poll = std::stoll(poll_text) * kSecond;
      cycle = stored_time(*db_, "jobs.next_cycle");
      // A job (re)started by configure runs its first cycle one interval after the clock.
      if (!cycle) cycle = s.last_time + poll;
    }
    if (clean_text != "null") {
      clean = stored_time(*db_, "jobs.next_cleanup");
      if (!clean) clean = next_daily(zone(), s.last_time, clean_text);
    }
    const bool cycle_due = cycle && *cycle <= until && (!clean || *cycle <= *clean);
    const bool clean_due = !cycle_due && clean && *clean <= until;
    if (cycle) meta_set(*db_, "jobs.next_cycle", std::to_string(*cycle));
    if (clean) meta_set(*db_, "jobs.next_cleanup", std::to_string(*clean));
    if (!cycle_due && !clean_due) {
      txn.commit();
      return;
    }
    if (clean_due) {
      meta_set(*db_, "jobs.next_cleanup", std::to_string(next_daily(zone(), *clean, clean_text)));
      txn.commit();
      cleanup_job(*db_, std::nullopt);  // its own transactions: a mark first, then batches
      continue;
    }
    // One cycle: up to maxscans scans of maxtrans transactions each, atomic like a manual
    // capture(); then the job waits polling_interval_seconds (continuous mode).
    const std::int64_t limit = std::stoll(cached_setting("maxtrans")) * std::stoll(cached_setting("maxscans"));
    const std::int64_t captured = capture_pending(limit);
    Micros next = *cycle + poll;
    if (captured == 0) {
      const std::string interval_text = cached_setting("idle_interval_seconds");
      std::optional<Micros> newest = newest_entry_utc();
      // Idle entries mark progress after the first entry only, so max_lsn stays None on a
      // file that never had an entry, as on SQL Server.
      std::optional<Micros> idle_due;
      if (interval_text != "null" && newest) {
        const Micros interval = std::stoll(interval_text) * kSecond;
        if (*cycle - *newest >= interval) {
          const Micros t = std::max(ceil_to_tick(*cycle), s.last_time);
          write_idle_entry(s, t);
          store_state(s);
          newest = t;
        }
        idle_due = *newest + interval;
      }
      // Nothing is pending before `until` (the next timed event runs the jobs before it):
      // skip the empty cycles up to the next idle entry or past `until`, whichever is first,
      // keeping the cycle grid, so a commit at `until` waits one interval at most.
      const Micros target = idle_due ? std::min(*idle_due, until + 1) : until + 1;
      if (target > next) next += (target - next + poll - 1) / poll * poll;
    }
    meta_set(*db_, "jobs.next_cycle", std::to_string(next));
    txn.commit();
  }
}

}  // namespace mssqlcdc::emu
