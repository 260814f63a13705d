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

using Bytes = std::vector<std::uint8_t>;

// UTF-8 <-> UTF-16LE. Invalid UTF-8 and unpaired surrogates become U+FFFD, as SQL Server's
// conversions never fail on text either.
void append_utf16le(Bytes& out, std::string_view utf8);
[[nodiscard]] std::string utf16le_to_utf8(std::span<const std::uint8_t> bytes);
[[nodiscard]] std::size_t utf16_units(std::string_view utf8);

class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(v); }
  void u16le(std::uint16_t v);
  void u16be(std::uint16_t v);
  void u32le(std::uint32_t v);
  void u32be(std::uint32_t v);
  void u64le(std::uint64_t v);
  void uint_le(std::uint64_t v, std::size_t bytes);  // the low `bytes` bytes of v
  void bytes(std::span<const std::uint8_t> data) { out_.insert(out_.end(), data.begin(), data.end()); }
  void utf16(std::string_view utf8) { append_utf16le(out_, utf8); }
  void b_varchar(std::string_view utf8);   // length in characters, at most 255
  void us_varchar(std::string_view utf8);  // length in characters, at most 65535
  void patch_u16le(std::size_t at, std::uint16_t v);

  [[nodiscard]] std::size_t size() const { return out_.size(); }
  [[nodiscard]] const Bytes& data() const { return out_; }
  [[nodiscard]] Bytes take() { return std::move(out_); }

 private:
  Bytes out_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> data) : data_(data) {}

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

  [[nodiscard]] std::size_t position() const { return pos_; }
  [[nodiscard]] std::size_t remaining() const { return data_.size() - pos_; }
  [[nodiscard]] bool at_end() const { return pos_ == data_.size(); }

 private:
  std::span<const std::uint8_t> data_;
  std::size_t pos_ = 0;
};

}  // namespace mssqlcdc::tds
