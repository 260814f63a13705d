#include "mssqlcdc/lsn.hpp"

#include "mssqlcdc/error.hpp"

namespace mssqlcdc {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

[[noreturn]] void bad_text(std::string_view text, std::string_view why) {
  std::string message;
  message.append("'").append(text).append("' is not an LSN: ").append(why);
  message.append("; write it as 0x followed by 1 to 20 hex digits, e.g. 0x0000002A000001F00004");
  throw Error(ErrorKind::InvalidArgument, message);
}

}  // namespace

Lsn::Lsn(std::uint32_t vlf, std::uint32_t block, std::uint16_t slot) {
  for (int i = 0; i < 4; ++i) {
    bytes_[i] = static_cast<std::uint8_t>(vlf >> (24 - 8 * i));
    bytes_[4 + i] = static_cast<std::uint8_t>(block >> (24 - 8 * i));
  }
  bytes_[8] = static_cast<std::uint8_t>(slot >> 8);
  bytes_[9] = static_cast<std::uint8_t>(slot);
}

Lsn Lsn::parse(std::string_view text) {
  std::string_view digits = text;
  const bool prefixed = digits.size() >= 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
  if (prefixed) {
    digits.remove_prefix(2);
    if (digits.empty()) bad_text(text, "no hex digits after 0x");
    if (digits.size() > 2 * kBytes) bad_text(text, "more than 20 hex digits");
  } else if (digits.size() != 2 * kBytes) {
    bad_text(text, "without the 0x prefix it must have exactly 20 hex digits");
  }
  std::array<std::uint8_t, kBytes> bytes{};
  const std::size_t pad = 2 * kBytes - digits.size();
  for (std::size_t i = 0; i < digits.size(); ++i) {
    const int v = hex_value(digits[i]);
    if (v < 0) {
      std::string why = "'";
      why.push_back(digits[i]);
      why.append("' is not a hex digit");
      bad_text(text, why);
    }
    const std::size_t nibble = pad + i;
    bytes[nibble / 2] = static_cast<std::uint8_t>(bytes[nibble / 2] | (nibble % 2 == 0 ? v << 4 : v));
  }
  return Lsn(bytes);
}

Lsn Lsn::max() {
  std::array<std::uint8_t, kBytes> bytes{};
  bytes.fill(0xFF);
  return Lsn(bytes);
}

std::string Lsn::to_string() const {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out = "0x";
  out.reserve(2 + 2 * kBytes);
  for (const std::uint8_t b : bytes_) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0x0F]);
  }
  return out;
}

Lsn Lsn::increment() const {
  if (*this == max()) throw Error(ErrorKind::OutOfRange, "cannot increment the maximum LSN " + to_string());
  auto bytes = bytes_;
  for (std::size_t i = kBytes; i-- > 0;) {
    if (++bytes[i] != 0) break;  // no carry into the next byte
  }
  return Lsn(bytes);
}

Lsn Lsn::decrement() const {
  if (is_zero()) throw Error(ErrorKind::OutOfRange, "cannot decrement the zero LSN " + to_string());
  auto bytes = bytes_;
  for (std::size_t i = kBytes; i-- > 0;) {
    if (bytes[i]-- != 0) break;  // no borrow from the next byte
  }
  return Lsn(bytes);
}

std::uint32_t Lsn::vlf() const {
  return (std::uint32_t{bytes_[0]} << 24) | (std::uint32_t{bytes_[1]} << 16) | (std::uint32_t{bytes_[2]} << 8) |
         bytes_[3];
}

std::uint32_t Lsn::block() const {
  return (std::uint32_t{bytes_[4]} << 24) | (std::uint32_t{bytes_[5]} << 16) | (std::uint32_t{bytes_[6]} << 8) |
         bytes_[7];
}

std::uint16_t Lsn::slot() const { return static_cast<std::uint16_t>((std::uint16_t{bytes_[8]} << 8) | bytes_[9]); }

}  // namespace mssqlcdc
