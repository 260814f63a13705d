// row_digest.cpp: SHA-256 as FIPS 180-4 defines it, UTF-8 to UTF-16LE, and the row and tile
// digests over an Arrow string array (row_digest.hpp).
#include "mssqlcdc/emu/row_digest.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <string>

#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {
namespace {

// FIPS 180-4's round constants: the first 32 bits of the fractional parts of the cube roots of the
// first 64 primes.
constexpr std::array<std::uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

// FIPS 180-4's initial hash value.
constexpr std::array<std::uint32_t, 8> kInitial = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

std::uint32_t load_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

// FIPS 180-4's compression: one 64-byte block into the hash value `h`.
void compress(std::array<std::uint32_t, 8>& h, const std::uint8_t* block) {
  std::array<std::uint32_t, 64> w{};
  for (int t = 0; t < 16; ++t) w[t] = load_be32(block + 4 * t);
  for (int t = 16; t < 64; ++t) {
    const std::uint32_t s0 = std::rotr(w[t - 15], 7) ^ std::rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const std::uint32_t s1 = std::rotr(w[t - 2], 17) ^ std::rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int t = 0; t < 64; ++t) {
    const std::uint32_t sum1 = std::rotr(e, 6) ^ std::rotr(e, 11) ^ std::rotr(e, 25);
    const std::uint32_t choose = (e & f) ^ (~e & g);
    const std::uint32_t t1 = k + sum1 + choose + kRound[t] + w[t];
    const std::uint32_t sum0 = std::rotr(a, 2) ^ std::rotr(a, 13) ^ std::rotr(a, 22);
    const std::uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
    const std::uint32_t t2 = sum0 + majority;
    k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void append_unit(std::vector<std::uint8_t>& out, std::uint32_t unit) {
  out.push_back(static_cast<std::uint8_t>(unit & 0xff));
  out.push_back(static_cast<std::uint8_t>(unit >> 8));
}

[[noreturn]] void not_utf8() {
  throw Error(ErrorKind::InvalidArgument, "row digest: the row's text is not UTF-8; pass Arrow utf8 text");
}

// Calls `each(text)` for every value of a utf8 ("u", 32-bit offsets) or large_utf8 ("U") array.
template <typename Offset, typename Each>
void each_value(const ArrowArray& array, Each each) {
  const auto* valid = static_cast<const std::uint8_t*>(array.buffers[0]);
  const auto* offsets = static_cast<const Offset*>(array.buffers[1]);
  const auto* data = static_cast<const char*>(array.buffers[2]);
  for (std::int64_t i = 0; i < array.length; ++i) {
    const std::int64_t at = array.offset + i;
    if (array.null_count != 0 && valid != nullptr && ((valid[at / 8] >> (at % 8)) & 1) == 0) {
      throw Error(ErrorKind::InvalidArgument,
                  "row digest: a row's text is NULL; give a NULL field its U+0001 text first");
    }
    const auto begin = static_cast<std::size_t>(offsets[at]);
    const auto end = static_cast<std::size_t>(offsets[at + 1]);
    each(std::string_view(data == nullptr ? "" : data + begin, end - begin));
  }
}

template <typename Each>
void each_text(const ArrowSchema& schema, const ArrowArray& array, Each each) {
  const std::string format = schema.format == nullptr ? "" : schema.format;
  if (format == "u") {
    each_value<std::int32_t>(array, each);
  } else if (format == "U") {
    each_value<std::int64_t>(array, each);
  } else {
    throw Error(ErrorKind::Type, "row digest: the rows' texts are Arrow format '" + format +
                                     "', not utf8 ('u') or large_utf8 ('U'); pass string texts");
  }
}

bool is_set(const ArrowArray& a, std::int64_t at) {
  const auto* valid = static_cast<const std::uint8_t*>(a.buffers[0]);
  return a.null_count == 0 || valid == nullptr || ((valid[at / 8] >> (at % 8)) & 1) != 0;
}

bool bit(const ArrowArray& a, std::int64_t at) {
  const auto* bits = static_cast<const std::uint8_t*>(a.buffers[1]);
  return ((bits[at / 8] >> (at % 8)) & 1) != 0;
}

template <typename T>
T fixed(const ArrowArray& a, std::int64_t at) {
  T out{};
  std::memcpy(&out, static_cast<const std::uint8_t*>(a.buffers[1]) + at * sizeof(T), sizeof(T));
  return out;
}

void append_digits(std::string& out, unsigned __int128 v, int at_least) {
  char digits[48];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + static_cast<int>(v % 10));
    v /= 10;
  } while (v != 0);
  while (n < at_least) digits[n++] = '0';
  while (n > 0) out += digits[--n];
}

void append_signed(std::string& out, __int128 v, int scale) {
  unsigned __int128 magnitude = static_cast<unsigned __int128>(v);
  if (v < 0) {
    out += '-';
    magnitude = ~magnitude + 1;
  }
  std::string digits;
  append_digits(digits, magnitude, scale + 1);
  const std::size_t whole = digits.size() - static_cast<std::size_t>(scale);
  out.append(digits, 0, whole);
  if (scale > 0) out.append(".").append(digits, whole, std::string::npos);
}

void append_date(std::string& out, std::int64_t days) {
  const std::chrono::year_month_day ymd{std::chrono::sys_days{std::chrono::days{days}}};
  append_digits(out, static_cast<unsigned>(static_cast<int>(ymd.year())), 4);
  out += '-';
  append_digits(out, static_cast<unsigned>(ymd.month()), 2);
  out += '-';
  append_digits(out, static_cast<unsigned>(ymd.day()), 2);
}

// One column of a batch and how its values become text.
struct Field {
  enum class Kind { Signed, Unsigned, Bool, Utf8, LargeUtf8, Decimal, Date, Timestamp } kind{};
  int width = 0;  // bytes of an integer
  int scale = 0;  // a decimal's
  const ArrowArray* array = nullptr;
};

Field field_of(const ArrowSchema& schema, const ArrowArray& array) {
  const std::string f = schema.format == nullptr ? "" : schema.format;
  Field out;
  out.array = &array;
  static const std::string kInts = "csil";
  static const std::string kUints = "CSIL";
  if (f.size() == 1 && kInts.find(f[0]) != std::string::npos) {
    out.kind = Field::Kind::Signed, out.width = 1 << static_cast<int>(kInts.find(f[0]));
  } else if (f.size() == 1 && kUints.find(f[0]) != std::string::npos) {
    out.kind = Field::Kind::Unsigned, out.width = 1 << static_cast<int>(kUints.find(f[0]));
  } else if (f == "b") {
    out.kind = Field::Kind::Bool;
  } else if (f == "u") {
    out.kind = Field::Kind::Utf8;
  } else if (f == "U") {
    out.kind = Field::Kind::LargeUtf8;
  } else if (f == "tdD") {
    out.kind = Field::Kind::Date;
  } else if (f == "tsu:") {
    out.kind = Field::Kind::Timestamp;
  } else if (f.starts_with("d:") && (f.find(',') != std::string::npos) &&
             (std::count(f.begin(), f.end(), ',') == 1 || f.ends_with(",128"))) {
    out.kind = Field::Kind::Decimal;
    out.scale = std::stoi(f.substr(f.find(',') + 1));
  } else {
    const std::string name = schema.name == nullptr ? "?" : schema.name;
    throw Error(ErrorKind::Type, "row digest: column " + name + " is Arrow format '" + f +
                                     "', which has no native canonical text; give it as text");
  }
  return out;
}

void append_field(std::string& out, const Field& field, std::int64_t row) {
  const ArrowArray& a = *field.array;
  const std::int64_t at = a.offset + row;
  if (!is_set(a, at)) {
    out += '\x01';
    return;
  }
  out += '\x02';
  switch (field.kind) {
    case Field::Kind::Signed: {
      std::int64_t v = 0;
      if (field.width == 1) v = fixed<std::int8_t>(a, at);
      if (field.width == 2) v = fixed<std::int16_t>(a, at);
      if (field.width == 4) v = fixed<std::int32_t>(a, at);
      if (field.width == 8) v = fixed<std::int64_t>(a, at);
      append_signed(out, v, 0);
      return;
    }
    case Field::Kind::Unsigned: {
      std::uint64_t v = 0;
      if (field.width == 1) v = fixed<std::uint8_t>(a, at);
      if (field.width == 2) v = fixed<std::uint16_t>(a, at);
      if (field.width == 4) v = fixed<std::uint32_t>(a, at);
      if (field.width == 8) v = fixed<std::uint64_t>(a, at);
      append_digits(out, v, 1);
      return;
    }
    case Field::Kind::Bool: out += bit(a, at) ? '1' : '0'; return;
    case Field::Kind::Utf8:
    case Field::Kind::LargeUtf8: {
      const auto* data = static_cast<const char*>(a.buffers[2]);
      std::int64_t begin = 0, end = 0;
      if (field.kind == Field::Kind::Utf8) {
        begin = fixed<std::int32_t>(a, at), end = fixed<std::int32_t>(a, at + 1);
      } else {
        begin = fixed<std::int64_t>(a, at), end = fixed<std::int64_t>(a, at + 1);
      }
      if (end > begin) out.append(data + begin, static_cast<std::size_t>(end - begin));
      return;
    }
    case Field::Kind::Decimal: {
      std::uint64_t halves[2];  // little-endian two's complement, low half first
      std::memcpy(halves, static_cast<const std::uint8_t*>(a.buffers[1]) + at * 16, 16);
      const auto v = static_cast<__int128>((static_cast<unsigned __int128>(halves[1]) << 64) | halves[0]);
      append_signed(out, v, field.scale);
      return;
    }
    case Field::Kind::Date: append_date(out, fixed<std::int32_t>(a, at)); return;
    case Field::Kind::Timestamp: {
      constexpr std::int64_t kPerDay = 86'400'000'000LL;
      const std::int64_t micros = fixed<std::int64_t>(a, at);
      std::int64_t days = micros / kPerDay;
      std::int64_t rest = micros % kPerDay;
      if (rest < 0) rest += kPerDay, days -= 1;
      append_date(out, days);
      const std::int64_t seconds = rest / 1'000'000;
      out += ' ';
      append_digits(out, static_cast<unsigned>(seconds / 3600), 2);
      out += ':';
      append_digits(out, static_cast<unsigned>(seconds / 60 % 60), 2);
      out += ':';
      append_digits(out, static_cast<unsigned>(seconds % 60), 2);
      out += '.';
      append_digits(out, static_cast<unsigned>(rest % 1'000'000), 6);
      return;
    }
  }
}

// Calls `each(text)` with every row's text of a batch given as a struct array.
template <typename Each>
void each_row(const ArrowSchema& schema, const ArrowArray& array, Each each) {
  const std::string format = schema.format == nullptr ? "" : schema.format;
  if (format != "+s") {
    throw Error(ErrorKind::Type,
                "row digest: the rows are Arrow format '" + format + "', not a struct ('+s'); pass a record batch");
  }
  std::vector<Field> fields;
  for (std::int64_t c = 0; c < schema.n_children; ++c) {
    fields.push_back(field_of(*schema.children[c], *array.children[c]));
  }
  std::string text;
  for (std::int64_t i = 0; i < array.length; ++i) {
    text.clear();
    for (std::size_t c = 0; c < fields.size(); ++c) {
      if (c != 0) text += '\x1f';
      append_field(text, fields[c], array.offset + i);
    }
    each(std::string_view(text));
  }
}

}  // namespace

std::array<std::uint8_t, 32> sha256(std::span<const std::uint8_t> bytes) {
  std::array<std::uint32_t, 8> h = kInitial;
  std::size_t whole = bytes.size() / 64 * 64;
  for (std::size_t i = 0; i < whole; i += 64) compress(h, bytes.data() + i);
  // FIPS 180-4's padding: a 1 bit, zeros, and the message's length in bits as 64 big-endian bits.
  std::array<std::uint8_t, 128> tail{};
  const std::size_t rest = bytes.size() - whole;
  if (rest != 0) std::memcpy(tail.data(), bytes.data() + whole, rest);
  tail[rest] = 0x80;
  const std::size_t blocks = rest + 9 <= 64 ? 1 : 2;
  const std::uint64_t bits = static_cast<std::uint64_t>(bytes.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[blocks * 64 - 1 - i] = static_cast<std::uint8_t>(bits >> (8 * i));
  for (std::size_t b = 0; b < blocks; ++b) compress(h, tail.data() + 64 * b);
  std::array<std::uint8_t, 32> out{};
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<std::uint8_t>(h[i] >> (24 - 8 * j));
  }
  return out;
}

std::vector<std::uint8_t> utf16le(std::string_view text) {
  std::vector<std::uint8_t> out;
  out.reserve(text.size() * 2);
  const auto* p = reinterpret_cast<const std::uint8_t*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const std::uint8_t lead = p[i];
    std::uint32_t cp = 0;
    std::size_t more = 0;
    if (lead < 0x80) {
      cp = lead;
    } else if ((lead & 0xe0) == 0xc0) {
      cp = lead & 0x1f, more = 1;
    } else if ((lead & 0xf0) == 0xe0) {
      cp = lead & 0x0f, more = 2;
    } else if ((lead & 0xf8) == 0xf0) {
      cp = lead & 0x07, more = 3;
    } else {
      not_utf8();
    }
    if (more > n - i - 1) not_utf8();  // the sequence runs past the text
    for (std::size_t k = 1; k <= more; ++k) {
      if ((p[i + k] & 0xc0) != 0x80) not_utf8();
      cp = (cp << 6) | (p[i + k] & 0x3f);
    }
    i += more + 1;
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) not_utf8();
    if (cp >= 0x10000) {
      append_unit(out, 0xd800 + ((cp - 0x10000) >> 10));
      append_unit(out, 0xdc00 + ((cp - 0x10000) & 0x3ff));
    } else {
      append_unit(out, cp);
    }
  }
  return out;
}

std::uint64_t row_digest(std::string_view text) {
  bool ascii = true;
  for (const char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  thread_local std::vector<std::uint8_t> wide;  // reused: one allocation per thread, not per row
  if (ascii) {
    wide.resize(text.size() * 2);
    for (std::size_t i = 0; i < text.size(); ++i) wide[2 * i] = static_cast<std::uint8_t>(text[i]), wide[2 * i + 1] = 0;
  } else {
    wide = utf16le(text);
  }
  const auto hash = sha256(wide);
  std::uint64_t out = 0;
  for (int i = 0; i < 8; ++i) out = (out << 8) | hash[i];
  return out;
}

std::vector<std::uint64_t> row_digests(const ArrowSchema& schema, const ArrowArray& array) {
  std::vector<std::uint64_t> out;
  out.reserve(static_cast<std::size_t>(array.length));
  each_text(schema, array, [&](std::string_view text) { out.push_back(row_digest(text)); });
  return out;
}

TileSum tile_sum(const ArrowSchema& schema, const ArrowArray& array) {
  TileSum out;
  each_text(schema, array, [&](std::string_view text) {
    out.rows += 1;
    out.digest += row_digest(text);  // unsigned: wraps modulo 2**64
  });
  return out;
}

}  // namespace mssqlcdc::emu

namespace mssqlcdc::emu {

TileSum batch_tile(const ArrowSchema& schema, const ArrowArray& array) {
  TileSum out;
  each_row(schema, array, [&](std::string_view text) {
    out.rows += 1;
    out.digest += row_digest(text);  // unsigned: wraps modulo 2**64
  });
  return out;
}

std::vector<std::uint64_t> batch_digests(const ArrowSchema& schema, const ArrowArray& array) {
  std::vector<std::uint64_t> out;
  out.reserve(static_cast<std::size_t>(array.length));
  each_row(schema, array, [&](std::string_view text) { out.push_back(row_digest(text)); });
  return out;
}

}  // namespace mssqlcdc::emu
