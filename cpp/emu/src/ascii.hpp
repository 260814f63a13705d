// ascii.hpp: the ASCII case folding and white-space trimming the type strings and names of the
// emulator use. Bytes above 0x7F pass through unchanged.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace mssqlcdc::emu {

inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// `s` without the white space at either end.
inline std::string ascii_trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace mssqlcdc::emu
