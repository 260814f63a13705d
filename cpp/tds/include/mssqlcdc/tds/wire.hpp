// wire.hpp: the byte order and string forms of TDS (MS-TDS 2.2.5.1). Integers are little-endian
// except the packet header and a few login fields; text is UTF-16LE, counted in characters
// (B_VARCHAR: one length byte, US_VARCHAR: two). A Reader that runs past its end throws, so a
// truncated or lying message becomes one Error instead of a read out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mssqlcdc::tds {

// A message or a part of one, as bytes.
using Bytes = std::vector<std::uint8_t>;

// UTF-8 <-> UTF-16LE. Invalid UTF-8 and unpaired surrogates become U+FFFD, as SQL Server's
// conversions never fail on text either; none of these throws. utf16le_to_utf8 ignores a
// trailing odd byte. utf16_units is the length append_utf16le writes, in 2-byte units (the
// "characters" TDS lengths count).
void append_utf16le(Bytes& out, std::string_view utf8);
[[nodiscard]] std::string utf16le_to_utf8(std::span<const std::uint8_t> bytes);
[[nodiscard]] std::size_t utf16_units(std::string_view utf8);

// Builds a message by appending to a growing buffer. Not thread-safe; cheap to make.
class Writer {
 public:
  // Append one value: an unsigned integer of the named size and byte order.
  void u8(std::uint8_t v) { out_.push_back(v); }
  void u16le(std::uint16_t v);
  void u16be(std::uint16_t v);
  void u32le(std::uint32_t v);
  void u32be(std::uint32_t v);
  void u64le(std::uint64_t v);
  void uint_le(std::uint64_t v, std::size_t bytes);  // the low `bytes` bytes of v
  // Raw bytes, and text as UTF-16LE without a length.
  void bytes(std::span<const std::uint8_t> data) { out_.insert(out_.end(), data.begin(), data.end()); }
  void utf16(std::string_view utf8) { append_utf16le(out_, utf8); }
  // Text with its length in characters first; a longer text throws Error(InvalidArgument).
  void b_varchar(std::string_view utf8);   // length in characters, at most 255
  void us_varchar(std::string_view utf8);  // length in characters, at most 65535
  // Overwrites the two bytes at offset `at` (a length written before its body); `at + 2` must
  // be at most size(), else std::out_of_range.
  void patch_u16le(std::size_t at, std::uint16_t v);

  // The bytes written so far; take() moves them out and leaves the Writer empty.
  [[nodiscard]] std::size_t size() const { return out_.size(); }
  [[nodiscard]] const Bytes& data() const { return out_; }
  [[nodiscard]] Bytes take() { return std::move(out_); }

 private:
  Bytes out_;
};

// Reads a message front to back. Every read past the end throws Error(InvalidArgument) ("TDS
// message truncated") and consumes nothing. Not thread-safe.
class Reader {
 public:
  // Reads `data`, which must outlive the Reader (spans from bytes() point into it).
  explicit Reader(std::span<const std::uint8_t> data) : data_(data) {}

  // Reads one value: an unsigned integer of the named size and byte order, `n` raw bytes, text
  // of `chars` UTF-16 units, or text with its length first; skip() drops `n` bytes.
  std::uint8_t u8();
  std::uint16_t u16le();
  std::uint16_t u16be();
  std::uint32_t u32le();
  std::uint32_t u32be();
  std::uint64_t u64le();
  std::uint64_t uint_le(std::size_t bytes);
  std::span<const std::uint8_t> bytes(std::size_t n);
  std::string utf16(std::size_t chars) { return utf16le_to_utf8(bytes(chars * 2)); }
  std::string b_varchar() { return utf16(u8()); }
  std::string us_varchar() { return utf16(u16le()); }
  void skip(std::size_t n) { (void)bytes(n); }

  // Bytes read so far, bytes left, and whether none are.
  [[nodiscard]] std::size_t position() const { return pos_; }
  [[nodiscard]] std::size_t remaining() const { return data_.size() - pos_; }
  [[nodiscard]] bool at_end() const { return pos_ == data_.size(); }

 private:
  std::span<const std::uint8_t> data_;
  std::size_t pos_ = 0;
};

}  // namespace mssqlcdc::tds
