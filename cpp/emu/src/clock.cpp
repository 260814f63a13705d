#include "mssqlcdc/emu/clock.hpp"

#include <chrono>
#include <cstdio>

#include "mssqlcdc/emu/types.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

Micros wall_clock_micros() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::microseconds>(now).count();
}

std::string format_time(Micros t) {
  using namespace std::chrono;
  const sys_time<microseconds> tp{microseconds{t}};
  const auto day = floor<days>(tp);
  const year_month_day ymd{day};
  const hh_mm_ss<microseconds> hms{tp - day};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02ld:%02ld:%02ld", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<long>(hms.hours().count()), static_cast<long>(hms.minutes().count()),
                static_cast<long>(hms.seconds().count()));
  std::string out = buf;
  const auto frac = hms.subseconds().count();
  if (frac != 0) {
    std::snprintf(buf, sizeof buf, ".%06ld", static_cast<long>(frac));
    std::string f = buf;
    while (f.size() > 4 && f.back() == '0') f.pop_back();
    out += f;
  }
  return out;
}

Micros next_event_time(std::optional<Micros> at, Micros last_time) {
  if (at) {
    const Micros t = round_to_tick(*at);
    if (t < last_time) {
      throw Error(ErrorKind::EmuClock, "at " + format_time(t) + " is before the emulator's last time " +
                                           format_time(last_time) + "; pass a later at, or none");
    }
    return t;
  }
  const Micros wall = wall_clock_micros();
  return ceil_to_tick(wall > last_time + 1000 ? wall : last_time + 1000);
}

}  // namespace mssqlcdc::emu
