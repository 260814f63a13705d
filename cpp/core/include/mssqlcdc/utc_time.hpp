// utc_time.hpp: the two UTC time texts the state file and offsets hold, checked and turned into
// milliseconds since the Unix epoch so the anti-loop guard can subtract them.
//   commit times:  "YYYY-MM-DDTHH:MM:SS.mmm" (fraction optional, 1-9 digits), no zone: SQL
//                  Server's commit time of an LSN, always UTC in this library;
//   instants:      the same followed by "+00:00" or "Z": when a state was written ("at",
//                  "failed_at"), and the clock ("now") handed to the pure decision.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mssqlcdc::utc {

// Whether a text must end in a zone: Forbidden for commit times, Required for instants.
enum class Zone { Forbidden, Required };

// Milliseconds since 1970-01-01T00:00:00Z, or std::nullopt when `text` is not in the form
// `zone` asks for or names no real calendar date and time (month 13, February 30, hour 24).
[[nodiscard]] std::optional<std::int64_t> parse_millis(std::string_view text, Zone zone);

// The instant as the state file writes it: "YYYY-MM-DDTHH:MM:SS+00:00" (seconds, floored, also
// before 1970). Never throws.
[[nodiscard]] std::string format_seconds(std::int64_t millis);

}  // namespace mssqlcdc::utc
