// zone.hpp: the emulator's server time zone. SQL Server stores CDC catalog
// times as naive local times of the server's zone; the emulator keeps its clock in UTC and turns
// each catalog time into local time when it writes it. The rules come from the system's IANA
// database (TZif files under $TZDIR, else /usr/share/zoneinfo), read here because libstdc++ 12
// has no std::chrono tz database: the transitions of the file, then its POSIX TZ footer for
// instants past the last one. Only UTC -> local is needed: readers compare and return the stored
// local times, never convert them back (that is the library's job, and a repeated hour makes it
// ambiguous, as on SQL Server).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mssqlcdc::emu {

// A POSIX TZ rule ("EST5EDT,M3.2.0,M11.1.0"): standard offset, and optionally a daylight offset
// with the local times it starts and ends. Offsets are seconds east of UTC.
struct PosixRule {
  struct Date {
    enum class Kind : std::uint8_t { Julian1, Julian0, MonthWeekDay };  // Jn, n, Mm.w.d
    Kind kind = Kind::MonthWeekDay;
    int day = 0;               // Jn: 1..365; n: 0..365; M: weekday 0 (Sunday)..6
    int month = 0;             // M only
    int week = 0;              // M only, 1..5 (5 = last)
    std::int64_t time = 7200;  // seconds after local midnight (may be negative or over 24 h)
  };
  std::int64_t std_offset = 0;
  bool has_dst = false;
  std::int64_t dst_offset = 0;
  Date start;
  Date end;

  static PosixRule parse(std::string_view text);  // throws InvalidArgument naming the text
  // Seconds east of UTC the rule gives at a UTC instant.
  [[nodiscard]] std::int64_t offset_at(std::int64_t utc_seconds) const;
};

// One time zone's rules, loaded once; immutable after, so it may be shared between threads.
class TimeZone {
 public:
  // "UTC" or an IANA name (America/New_York); an unknown or malformed name throws
  // InvalidArgument naming it and the folder searched.
  static TimeZone load(std::string_view name);
  static TimeZone utc() { return load("UTC"); }

  // The name it was loaded by.
  [[nodiscard]] const std::string& name() const { return name_; }
  // Seconds east of UTC in force at a UTC instant.
  [[nodiscard]] std::int64_t offset_at(std::int64_t utc_seconds) const;
  // The naive local time, in microseconds since 1970, of a UTC instant.
  [[nodiscard]] std::int64_t to_local(std::int64_t utc_micros) const;

 private:
  std::string name_;
  std::vector<std::int64_t> transitions_;  // UTC seconds, ascending
  std::vector<std::uint8_t> type_of_;      // local time type from each transition on
  std::vector<std::int64_t> offsets_;      // per local time type
  bool has_rule_ = false;
  PosixRule rule_;  // past the last transition
};

}  // namespace mssqlcdc::emu
