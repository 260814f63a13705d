// zones.hpp: SQL Server names time zones by their Windows names (CURRENT_TIMEZONE_ID(),
// sys.time_zone_info, AT TIME ZONE); the emulator's time_zone setting is an IANA name. This is
// the table between them, for the zones the front end serves (one IANA zone per Windows zone).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace mssqlcdc::tds {

struct ZoneName {
  std::string_view windows;  // "W. Europe Standard Time"
  std::string_view iana;     // "Europe/Berlin"
};

[[nodiscard]] std::span<const ZoneName> known_zones();  // by Windows name
// The Windows name of an IANA zone ("UTC" and "Etc/UTC" are "UTC"); nullopt for one not listed.
[[nodiscard]] std::optional<std::string> windows_zone(std::string_view iana);
// The IANA zone of a Windows name, compared case-insensitively; nullopt for one not listed.
[[nodiscard]] std::optional<std::string> iana_zone(std::string_view windows);

}  // namespace mssqlcdc::tds
