// lsn.hpp: SQL Server's log sequence number, an exact 80-bit value made of three big-endian
// fields (vlf: u32, block: u32, slot: u16). Its text is "0x" + 20 upper-case hex digits, so
// text order is LSN order. A NULL LSN is std::optional<Lsn>, never a magic value.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace mssqlcdc {

// An LSN value: immutable, ordered like SQL Server orders LSNs, cheap to copy; a value type,
// safe to share between threads.
class Lsn {
 public:
  static constexpr std::size_t kBytes = 10;  // its size on the wire and in change tables

  constexpr Lsn() = default;  // the zero LSN
  // The LSN of these fields; every combination is valid.
  Lsn(std::uint32_t vlf, std::uint32_t block, std::uint16_t slot);
  // The LSN of SQL Server's binary(10) form (big-endian); every value is valid.
  static Lsn from_bytes(const std::array<std::uint8_t, kBytes>& bytes) { return Lsn(bytes); }

  // Accepts "0x" + 1..20 hex digits (left-padded with zeros) or exactly 20 hex digits without
  // the prefix, in either case. Anything else throws Error(InvalidArgument) naming the text.
  static Lsn parse(std::string_view text);
  // The smallest and the largest LSN: 0x00000000000000000000 and 0xFFFFFFFFFFFFFFFFFFFF.
  static Lsn zero() { return Lsn(); }
  static Lsn max();

  [[nodiscard]] std::string to_string() const;  // "0x" + 20 upper-case hex digits
  [[nodiscard]] Lsn increment() const;          // +1; throws Error(OutOfRange) at max()
  [[nodiscard]] Lsn decrement() const;          // -1; throws Error(OutOfRange) at zero()

  // The three fields, and the binary(10) form from_bytes() reads.
  [[nodiscard]] std::uint32_t vlf() const;
  [[nodiscard]] std::uint32_t block() const;
  [[nodiscard]] std::uint16_t slot() const;
  [[nodiscard]] const std::array<std::uint8_t, kBytes>& bytes() const { return bytes_; }
  // Whether this is zero(), which SQL Server returns where no LSN exists yet.
  [[nodiscard]] bool is_zero() const { return *this == Lsn(); }

  // LSN order, which is also the order of the texts and of the bytes.
  auto operator<=>(const Lsn&) const = default;

 private:
  explicit Lsn(const std::array<std::uint8_t, kBytes>& bytes) : bytes_(bytes) {}
  std::array<std::uint8_t, kBytes> bytes_{};  // big-endian, so <=> is LSN order
};

}  // namespace mssqlcdc
