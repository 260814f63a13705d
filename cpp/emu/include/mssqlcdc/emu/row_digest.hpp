// row_digest.hpp: the row digest reconcile compares (decision 1432), computed where the
// emulator's rows are. A row's text is given in UTF-8; its digest is the first 8 bytes of
// SHA-256 (FIPS 180-4) over the text's UTF-16LE bytes, read as an unsigned big-endian integer.
// A tile's digest is the sum of its rows' digests modulo 2**64, which is what unsigned 64-bit
// addition gives, so it does not depend on the order rows are read in.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "mssqlcdc/emu/arrow.hpp"

namespace mssqlcdc::emu {

// The 32-byte SHA-256 digest of `bytes` (FIPS 180-4).
[[nodiscard]] std::array<std::uint8_t, 32> sha256(std::span<const std::uint8_t> bytes);

// The UTF-16LE bytes of UTF-8 `text`, a code point above U+FFFF as its surrogate pair.
// Throws mssqlcdc::Error (InvalidArgument) on bytes that are not UTF-8.
[[nodiscard]] std::vector<std::uint8_t> utf16le(std::string_view text);

// The row digest of one row's text, given in UTF-8 (the header comment).
[[nodiscard]] std::uint64_t row_digest(std::string_view text);

// The row digests of an Arrow utf8 ("u") or large_utf8 ("U") array's values, in order.
// Throws mssqlcdc::Error (Type) for another format and (InvalidArgument) for a NULL.
[[nodiscard]] std::vector<std::uint64_t> row_digests(const ArrowSchema& schema, const ArrowArray& array);

// A tile's count and digest: its rows, and their digests summed modulo 2**64.
struct TileSum {
  std::int64_t rows = 0;     // the rows summed
  std::uint64_t digest = 0;  // their digests' sum modulo 2**64
  bool operator==(const TileSum&) const = default;
};

// The count and summed digest of an Arrow utf8 or large_utf8 array's values (row_digests).
[[nodiscard]] TileSum tile_sum(const ArrowSchema& schema, const ArrowArray& array);

// The count and summed digest of a batch's rows, given as an Arrow struct array ("+s", as a
// record batch exports): each row's text is its fields' canonical texts, in column order,
// joined by U+001F, a NULL field being U+0001 and a value U+0002 followed by its text. A
// field's text by Arrow format: integers ("c" "s" "i" "l" "C" "S" "I" "L") their decimal
// digits, booleans ("b") 1 or 0, text ("u" "U") itself, decimal128 ("d:p,s") plain notation
// with exactly s decimals, date32 ("tdD") yyyy-mm-dd, and timestamps in microseconds without a
// time zone ("tsu:") yyyy-mm-dd hh:mm:ss.ffffff. Throws mssqlcdc::Error (Type) naming a column
// of another format, which the caller gives as text instead.
[[nodiscard]] TileSum batch_tile(const ArrowSchema& schema, const ArrowArray& array);

// The row digest of each row of a batch given as batch_tile takes it, in order.
[[nodiscard]] std::vector<std::uint64_t> batch_digests(const ArrowSchema& schema, const ArrowArray& array);

}  // namespace mssqlcdc::emu
