#include "mssqlcdc/tds/wire.hpp"

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/utf8.hpp"

namespace mssqlcdc::tds {
namespace {

constexpr char32_t kReplacement = 0xFFFD;

// Decodes one code point at `i` and advances `i`; a bad sequence yields U+FFFD and one byte.
char32_t next_code_point(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  char32_t cp = 0;
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  if ((b0 & 0xE0) == 0xC0) {
    n = 1;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 2;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 3;
    cp = b0 & 0x07;
  } else {
    ++i;
    return kReplacement;
  }
  if (i + n >= s.size()) {  // the sequence runs past the end
    ++i;
    return kReplacement;
  }
  for (std::size_t k = 1; k <= n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return kReplacement;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  i += n + 1;
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return kReplacement;
  return cp;
}

[[noreturn]] void truncated(std::size_t need, std::size_t have) {
  throw Error(ErrorKind::InvalidArgument,
              "TDS message truncated: needs " + std::to_string(need) + " more bytes, has " + std::to_string(have));
}

}  // namespace

void append_utf16le(Bytes& out, std::string_view utf8) {
  std::size_t i = 0;
  while (i < utf8.size()) {
    const char32_t cp = next_code_point(utf8, i);
    auto unit = [&out](std::uint32_t u) {
      out.push_back(static_cast<std::uint8_t>(u & 0xFF));
      out.push_back(static_cast<std::uint8_t>(u >> 8));
    };
    if (cp >= 0x10000) {
      const std::uint32_t v = cp - 0x10000;
      unit(0xD800 | (v >> 10));
      unit(0xDC00 | (v & 0x3FF));
    } else {
      unit(cp);
    }
  }
}

std::string utf16le_to_utf8(std::span<const std::uint8_t> bytes) {
  std::string out;
  out.reserve(bytes.size() / 2);
  for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) {
    const char32_t u = bytes[i] | (bytes[i + 1] << 8);
    if (u >= 0xD800 && u <= 0xDBFF && i + 3 < bytes.size()) {
      const char32_t lo = bytes[i + 2] | (bytes[i + 3] << 8);
      if (lo >= 0xDC00 && lo <= 0xDFFF) {
        append_utf8(out, 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00));
        i += 2;
        continue;
      }
    }
    append_utf8(out, (u >= 0xD800 && u <= 0xDFFF) ? kReplacement : u);
  }
  return out;
}

std::size_t utf16_units(std::string_view utf8) {
  std::size_t units = 0;
  std::size_t i = 0;
  while (i < utf8.size()) units += next_code_point(utf8, i) >= 0x10000 ? 2 : 1;
  return units;
}

void Writer::u16le(std::uint16_t v) { uint_le(v, 2); }
void Writer::u32le(std::uint32_t v) { uint_le(v, 4); }
void Writer::u64le(std::uint64_t v) { uint_le(v, 8); }
void Writer::u16be(std::uint16_t v) {
  u8(static_cast<std::uint8_t>(v >> 8));
  u8(static_cast<std::uint8_t>(v & 0xFF));
}
void Writer::u32be(std::uint32_t v) {
  u16be(static_cast<std::uint16_t>(v >> 16));
  u16be(static_cast<std::uint16_t>(v & 0xFFFF));
}
void Writer::uint_le(std::uint64_t v, std::size_t bytes) {
  for (std::size_t k = 0; k < bytes; ++k) u8(static_cast<std::uint8_t>((v >> (8 * k)) & 0xFF));
}

void Writer::b_varchar(std::string_view utf8) {
  const std::size_t n = utf16_units(utf8);
  if (n > 0xFF) throw Error(ErrorKind::InvalidArgument, "B_VARCHAR longer than 255 characters");
  u8(static_cast<std::uint8_t>(n));
  utf16(utf8);
}

void Writer::us_varchar(std::string_view utf8) {
  const std::size_t n = utf16_units(utf8);
  if (n > 0xFFFF) throw Error(ErrorKind::InvalidArgument, "US_VARCHAR longer than 65535 characters");
  u16le(static_cast<std::uint16_t>(n));
  utf16(utf8);
}

void Writer::patch_u16le(std::size_t at, std::uint16_t v) {
  out_.at(at) = static_cast<std::uint8_t>(v & 0xFF);
  out_.at(at + 1) = static_cast<std::uint8_t>(v >> 8);
}

std::span<const std::uint8_t> Reader::bytes(std::size_t n) {
  if (n > remaining()) truncated(n, remaining());
  const auto out = data_.subspan(pos_, n);
  pos_ += n;
  return out;
}

std::uint8_t Reader::u8() { return bytes(1)[0]; }
std::uint16_t Reader::u16le() { return static_cast<std::uint16_t>(uint_le(2)); }
std::uint32_t Reader::u32le() { return static_cast<std::uint32_t>(uint_le(4)); }
std::uint64_t Reader::u64le() { return uint_le(8); }
std::uint16_t Reader::u16be() {
  const auto b = bytes(2);
  return static_cast<std::uint16_t>((b[0] << 8) | b[1]);
}
std::uint32_t Reader::u32be() {
  const std::uint32_t hi = u16be();
  return (hi << 16) | u16be();
}
std::uint64_t Reader::uint_le(std::size_t n) {
  const auto b = bytes(n);
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < n; ++k) v |= static_cast<std::uint64_t>(b[k]) << (8 * k);
  return v;
}

}  // namespace mssqlcdc::tds
