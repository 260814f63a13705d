// catalog_zones.cpp: Windows time zone names for IANA zones (Unicode CLDR's windowsZones
// mapping, the territory "001" zone of each).
#include <array>

#include "mssqlcdc/emu/catalog.hpp"
#include "zones.hpp"

namespace mssqlcdc::tds {
namespace {

constexpr std::array<ZoneName, 33> kZones{{
    {"AUS Eastern Standard Time", "Australia/Sydney"},
    {"Alaskan Standard Time", "America/Anchorage"},
    {"Arabian Standard Time", "Asia/Dubai"},
    {"Atlantic Standard Time", "America/Halifax"},
    {"Cen. Australia Standard Time", "Australia/Adelaide"},
    {"Central Europe Standard Time", "Europe/Budapest"},
    {"Central European Standard Time", "Europe/Warsaw"},
    {"Central Standard Time", "America/Chicago"},
    {"China Standard Time", "Asia/Shanghai"},
    {"E. South America Standard Time", "America/Sao_Paulo"},
    {"Eastern Standard Time", "America/New_York"},
    {"FLE Standard Time", "Europe/Kiev"},
    {"GMT Standard Time", "Europe/London"},
    {"GTB Standard Time", "Europe/Bucharest"},
    {"Hawaiian Standard Time", "Pacific/Honolulu"},
    {"India Standard Time", "Asia/Calcutta"},
    {"Korea Standard Time", "Asia/Seoul"},
    {"Lord Howe Standard Time", "Australia/Lord_Howe"},
    {"Mountain Standard Time", "America/Denver"},
    {"New Zealand Standard Time", "Pacific/Auckland"},
    {"Newfoundland Standard Time", "America/St_Johns"},
    {"Pacific Standard Time", "America/Los_Angeles"},
    {"Romance Standard Time", "Europe/Paris"},
    {"Russian Standard Time", "Europe/Moscow"},
    {"SE Asia Standard Time", "Asia/Bangkok"},
    {"Singapore Standard Time", "Asia/Singapore"},
    {"South Africa Standard Time", "Africa/Johannesburg"},
    {"Tokyo Standard Time", "Asia/Tokyo"},
    {"Turkey Standard Time", "Europe/Istanbul"},
    {"US Mountain Standard Time", "America/Phoenix"},
    {"UTC", "UTC"},
    {"W. Australia Standard Time", "Australia/Perth"},
    {"W. Europe Standard Time", "Europe/Berlin"},
}};

}  // namespace

std::span<const ZoneName> known_zones() { return kZones; }

std::optional<std::string> windows_zone(std::string_view iana) {
  if (iana == "Etc/UTC" || iana == "Etc/GMT" || iana == "GMT") return "UTC";
  if (iana == "Asia/Kolkata") return "India Standard Time";  // the current name of Asia/Calcutta
  if (iana == "Europe/Kyiv") return "FLE Standard Time";
  for (const auto& z : kZones) {
    if (z.iana == iana) return std::string(z.windows);
  }
  return std::nullopt;
}

std::optional<std::string> iana_zone(std::string_view windows) {
  for (const auto& z : kZones) {
    if (emu::iequals(z.windows, windows)) return std::string(z.iana);
  }
  return std::nullopt;
}

}  // namespace mssqlcdc::tds
