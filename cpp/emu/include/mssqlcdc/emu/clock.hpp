// clock.hpp: the emulator's simulated clock. Times are UTC microseconds
// since 1970; CDC catalog times are rounded to SQL Server's 1/300 s datetime ticks. Timed
// events never go backwards: a given time before last_time is a ClockError.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mssqlcdc::emu {

// Microseconds since 1970-01-01T00:00:00, UTC unless a name says local.
using Micros = std::int64_t;

// The system clock now, in UTC microseconds.
Micros wall_clock_micros();

// "2026-09-28 13:51:00" or "2026-09-28 13:51:00.003" for messages: `t` as written, no zone.
std::string format_time(Micros t);

// The time of the next timed event: a given `at` rounded to a tick (not before last_time, else
// EmuClock), or the later of the wall clock and last_time + 1 ms rounded up to a tick.
Micros next_event_time(std::optional<Micros> at, Micros last_time);

}  // namespace mssqlcdc::emu
