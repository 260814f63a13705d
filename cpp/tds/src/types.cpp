#include "mssqlcdc/tds/types.hpp"

#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "mssqlcdc/error.hpp"

namespace mssqlcdc::tds {
namespace {

// TYPE_INFO ids (MS-TDS 2.2.5.4): the fixed-length forms, then the nullable and sized ones.
enum TypeId : std::uint8_t {
  kInt1 = 0x30,
  kBit = 0x32,
  kInt2 = 0x34,
  kInt4 = 0x38,
  kFlt8 = 0x3E,
  kInt8 = 0x7F,
  kFlt4 = 0x3B,
  kIntN = 0x26,
  kBitN = 0x68,
  kDecimalN = 0x6A,
  kNumericN = 0x6C,
  kFltN = 0x6D,
  kDateTime2N = 0x2A,
  kGuid = 0x24,
  kImage = 0x22,
  kText = 0x23,
  kNText = 0x63,
  kDateN = 0x28,
  kTimeN = 0x29,
  kDateTimeOffsetN = 0x2B,
  kDateTimN = 0x6F,
  kBigVarBinary = 0xA5,
  kBigVarChar = 0xA7,
  kBigBinary = 0xAD,
  kBigChar = 0xAF,
  kNVarChar = 0xE7,
  kNChar = 0xEF,
};

constexpr std::uint64_t kPlpNull = ~0ULL;
constexpr std::uint64_t kPlpUnknownLength = ~0ULL - 1;
constexpr std::uint16_t kShortNull = 0xFFFF;

[[noreturn]] void mismatch(const ColumnType& type, const char* what) {
  throw Error(ErrorKind::InvalidArgument, std::string("a ") + type_name(type) + " column cannot hold " + what);
}

int int_bytes(SqlKind kind) {
  switch (kind) {
    case SqlKind::TinyInt: return 1;
    case SqlKind::SmallInt: return 2;
    case SqlKind::Int: return 4;
    default: return 8;
  }
}

int decimal_bytes(std::uint8_t precision) {
  if (precision <= 9) return 4;
  if (precision <= 19) return 8;
  if (precision <= 28) return 12;
  return 16;
}

int time_bytes(std::uint8_t scale) { return scale <= 2 ? 3 : (scale <= 4 ? 4 : 5); }

std::int64_t pow10(int n) {
  std::int64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

bool is_text(SqlKind k) {
  return k == SqlKind::Char || k == SqlKind::VarChar || k == SqlKind::NChar || k == SqlKind::NVarChar;
}
bool is_unicode(SqlKind k) { return k == SqlKind::NChar || k == SqlKind::NVarChar; }

// Single-byte text for char/varchar under code page 1252: ASCII passes, anything else is '?',
// which is what SQL Server stores for a character its code page lacks.
Bytes to_single_byte(const std::string& utf8) {
  Bytes out;
  for (const char c : utf8) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x80) {
      out.push_back(b);
    } else if ((b & 0xC0) != 0x80) {
      out.push_back('?');
    }
  }
  return out;
}

std::string from_single_byte(std::span<const std::uint8_t> bytes) {
  std::string out;
  for (const std::uint8_t b : bytes) {
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
    } else {  // Latin-1 range of CP1252, close enough for parameter text
      out.push_back(static_cast<char>(0xC0 | (b >> 6)));
      out.push_back(static_cast<char>(0x80 | (b & 0x3F)));
    }
  }
  return out;
}

Bytes encode_payload(const ColumnType& type, const Value& value) {
  if (is_text(type.kind)) {
    const auto* s = std::get_if<std::string>(&value);
    if (s == nullptr) mismatch(type, "a non-text value");
    if (is_unicode(type.kind)) {
      Bytes out;
      append_utf16le(out, *s);
      return out;
    }
    return to_single_byte(*s);
  }
  const auto* b = std::get_if<Bytes>(&value);
  if (b == nullptr) mismatch(type, "a non-binary value");
  return *b;
}

void write_plp(Writer& w, std::span<const std::uint8_t> data) {
  w.u64le(data.size());
  if (!data.empty()) {
    w.u32le(static_cast<std::uint32_t>(data.size()));
    w.bytes(data);
  }
  w.u32le(0);  // the terminator chunk
}

}  // namespace

std::string type_name(const ColumnType& t) {
  const auto len = [&t](std::uint16_t n) { return t.length == kMax ? std::string("max") : std::to_string(n); };
  switch (t.kind) {
    case SqlKind::TinyInt: return "tinyint";
    case SqlKind::SmallInt: return "smallint";
    case SqlKind::Int: return "int";
    case SqlKind::BigInt: return "bigint";
    case SqlKind::Bit: return "bit";
    case SqlKind::Float: return "float";
    case SqlKind::Decimal: return "decimal(" + std::to_string(t.precision) + "," + std::to_string(t.scale) + ")";
    case SqlKind::Binary: return "binary(" + len(t.length) + ")";
    case SqlKind::VarBinary: return "varbinary(" + len(t.length) + ")";
    case SqlKind::Char: return "char(" + len(t.length) + ")";
    case SqlKind::VarChar: return "varchar(" + len(t.length) + ")";
    case SqlKind::NChar: return "nchar(" + len(t.length) + ")";
    case SqlKind::NVarChar: return "nvarchar(" + len(t.length) + ")";
    case SqlKind::DateTime2: return "datetime2(" + std::to_string(t.scale) + ")";
    case SqlKind::Real: return "real";
    case SqlKind::Date: return "date";
    case SqlKind::Time: return "time(" + std::to_string(t.scale) + ")";
    case SqlKind::DateTime: return "datetime";
    case SqlKind::DateTimeOffset: return "datetimeoffset(" + std::to_string(t.scale) + ")";
    case SqlKind::UniqueIdentifier: return "uniqueidentifier";
  }
  return "?";
}

void write_type_info(Writer& w, const ColumnType& t) {
  switch (t.kind) {
    case SqlKind::TinyInt:
    case SqlKind::SmallInt:
    case SqlKind::Int:
    case SqlKind::BigInt:
      w.u8(kIntN);
      w.u8(static_cast<std::uint8_t>(int_bytes(t.kind)));
      return;
    case SqlKind::Bit:
      w.u8(kBitN);
      w.u8(1);
      return;
    case SqlKind::Float:
      w.u8(kFltN);
      w.u8(8);
      return;
    case SqlKind::Decimal:
      w.u8(kDecimalN);
      w.u8(static_cast<std::uint8_t>(decimal_bytes(t.precision) + 1));
      w.u8(t.precision);
      w.u8(t.scale);
      return;
    case SqlKind::DateTime2:
      w.u8(kDateTime2N);
      w.u8(t.scale);
      return;
    case SqlKind::Real:
      w.u8(kFltN);
      w.u8(4);
      return;
    case SqlKind::Date: w.u8(kDateN); return;
    case SqlKind::Time:
      w.u8(kTimeN);
      w.u8(t.scale);
      return;
    case SqlKind::DateTime:
      w.u8(kDateTimN);
      w.u8(8);
      return;
    case SqlKind::DateTimeOffset:
      w.u8(kDateTimeOffsetN);
      w.u8(t.scale);
      return;
    case SqlKind::UniqueIdentifier:
      w.u8(kGuid);
      w.u8(16);
      return;
    case SqlKind::Binary:
    case SqlKind::VarBinary:
      w.u8(t.kind == SqlKind::Binary ? kBigBinary : kBigVarBinary);
      w.u16le(t.length);
      return;
    case SqlKind::Char:
    case SqlKind::VarChar:
    case SqlKind::NChar:
    case SqlKind::NVarChar: {
      const bool wide = is_unicode(t.kind);
      const bool fixed = t.kind == SqlKind::Char || t.kind == SqlKind::NChar;
      w.u8(wide ? (fixed ? kNChar : kNVarChar) : (fixed ? kBigChar : kBigVarChar));
      // nchar/nvarchar lengths are bytes on the wire, two per character.
      w.u16le(t.length == kMax ? kMax : static_cast<std::uint16_t>(wide ? t.length * 2 : t.length));
      w.bytes(kDefaultCollation);
      return;
    }
  }
}

void write_value(Writer& w, const ColumnType& t, const Value& value) {
  switch (t.kind) {
    case SqlKind::TinyInt:
    case SqlKind::SmallInt:
    case SqlKind::Int:
    case SqlKind::BigInt: {
      if (is_null(value)) return w.u8(0);
      const auto* v = std::get_if<std::int64_t>(&value);
      if (v == nullptr) mismatch(t, "a non-integer value");
      const int n = int_bytes(t.kind);
      const bool fits = t.kind == SqlKind::TinyInt ? (*v >= 0 && *v <= 255)
                        : n == 8                   ? true
                                                   : (*v >= -(1LL << (8 * n - 1)) && *v < (1LL << (8 * n - 1)));
      if (!fits) mismatch(t, ("the value " + std::to_string(*v)).c_str());
      w.u8(static_cast<std::uint8_t>(n));
      w.uint_le(static_cast<std::uint64_t>(*v), static_cast<std::size_t>(n));
      return;
    }
    case SqlKind::Bit: {
      if (is_null(value)) return w.u8(0);
      const auto* v = std::get_if<bool>(&value);
      if (v == nullptr) mismatch(t, "a non-boolean value");
      w.u8(1);
      w.u8(*v ? 1 : 0);
      return;
    }
    case SqlKind::Float: {
      if (is_null(value)) return w.u8(0);
      const auto* v = std::get_if<double>(&value);
      if (v == nullptr) mismatch(t, "a non-float value");
      std::uint64_t bits = 0;
      std::memcpy(&bits, v, sizeof bits);
      w.u8(8);
      w.u64le(bits);
      return;
    }
    case SqlKind::Decimal: {
      if (is_null(value)) return w.u8(0);
      const auto* v = std::get_if<Decimal>(&value);
      if (v == nullptr) mismatch(t, "a non-decimal value");
      const int n = decimal_bytes(t.precision);
      const bool negative = v->unscaled < 0;
      unsigned __int128 mag = negative ? static_cast<unsigned __int128>(-(v->unscaled + 1)) + 1
                                       : static_cast<unsigned __int128>(v->unscaled);
      if (n < 16 && (mag >> (8 * n)) != 0) mismatch(t, "a value past its precision");
      w.u8(static_cast<std::uint8_t>(n + 1));
      w.u8(negative ? 0 : 1);  // the sign byte: 1 is positive
      for (int k = 0; k < n; ++k, mag >>= 8) w.u8(static_cast<std::uint8_t>(mag & 0xFF));
      return;
    }
    case SqlKind::DateTime2: {
      if (is_null(value)) return w.u8(0);
      const auto* v = std::get_if<DateTime2>(&value);
      if (v == nullptr) mismatch(t, "a non-datetime2 value");
      const int tb = time_bytes(t.scale);
      w.u8(static_cast<std::uint8_t>(tb + 3));
      w.uint_le(static_cast<std::uint64_t>(v->ticks / pow10(7 - t.scale)), static_cast<std::size_t>(tb));
      w.uint_le(static_cast<std::uint64_t>(v->days), 3);
      return;
    }
    case SqlKind::Real: {
      if (is_null(value)) return w.u8(0);
      const auto* v = std::get_if<double>(&value);
      if (v == nullptr) mismatch(t, "a non-float value");
      const auto f = static_cast<float>(*v);
      std::uint32_t bits = 0;
      std::memcpy(&bits, &f, sizeof bits);
      w.u8(4);
      w.u32le(bits);
      return;
    }
    case SqlKind::Date: {
      if (is_null(value)) return w.u8(0);
      const auto* v = std::get_if<DateTime2>(&value);
      if (v == nullptr) mismatch(t, "a non-date value");
      w.u8(3);
      w.uint_le(static_cast<std::uint64_t>(v->days), 3);
      return;
    }
    case SqlKind::Time: {
      if (is_null(value)) return w.u8(0);
      const auto* v = std::get_if<DateTime2>(&value);
      if (v == nullptr) mismatch(t, "a non-time value");
      const int tb = time_bytes(t.scale);
      w.u8(static_cast<std::uint8_t>(tb));
      w.uint_le(static_cast<std::uint64_t>(v->ticks / pow10(7 - t.scale)), static_cast<std::size_t>(tb));
      return;
    }
    case SqlKind::DateTime: {
      if (is_null(value)) return w.u8(0);
      const auto* v = std::get_if<DateTime2>(&value);
      if (v == nullptr) mismatch(t, "a non-datetime value");
      // Days since 1900-01-01 (693595 days after 0001-01-01) and 1/300 s since midnight.
      constexpr std::int32_t kDays1900 = 693595;
      std::int64_t days = v->days - kDays1900;
      std::int64_t three_hundredths = (v->ticks * 3 + 50000) / 100000;
      if (three_hundredths >= 25920000) {
        three_hundredths -= 25920000;
        ++days;
      }
      w.u8(8);
      w.u32le(static_cast<std::uint32_t>(static_cast<std::int32_t>(days)));
      w.u32le(static_cast<std::uint32_t>(three_hundredths));
      return;
    }
    case SqlKind::DateTimeOffset: {
      if (is_null(value)) return w.u8(0);
      const auto* v = std::get_if<DateTimeOffset>(&value);
      if (v == nullptr) mismatch(t, "a non-datetimeoffset value");
      const int tb = time_bytes(t.scale);
      w.u8(static_cast<std::uint8_t>(tb + 5));
      w.uint_le(static_cast<std::uint64_t>(v->utc.ticks / pow10(7 - t.scale)), static_cast<std::size_t>(tb));
      w.uint_le(static_cast<std::uint64_t>(v->utc.days), 3);
      w.u16le(static_cast<std::uint16_t>(v->offset_minutes));
      return;
    }
    case SqlKind::UniqueIdentifier: {
      if (is_null(value)) return w.u8(0);
      const auto* v = std::get_if<Bytes>(&value);
      if (v == nullptr || v->size() != 16) mismatch(t, "a value that is not 16 bytes");
      w.u8(16);
      w.bytes(*v);
      return;
    }
    case SqlKind::Binary:
    case SqlKind::VarBinary:
    case SqlKind::Char:
    case SqlKind::VarChar:
    case SqlKind::NChar:
    case SqlKind::NVarChar: {
      if (t.length == kMax) {
        if (is_null(value)) return w.u64le(kPlpNull);
        return write_plp(w, encode_payload(t, value));
      }
      if (is_null(value)) return w.u16le(kShortNull);
      const Bytes data = encode_payload(t, value);
      const std::size_t limit = is_unicode(t.kind) ? t.length * 2U : t.length;
      if (data.size() > limit) mismatch(t, ("a value of " + std::to_string(data.size()) + " bytes").c_str());
      w.u16le(static_cast<std::uint16_t>(data.size()));
      w.bytes(data);
      return;
    }
  }
}

ColumnType read_type_info(Reader& r) {
  const std::uint8_t id = r.u8();
  ColumnType t;
  const auto sized = [&r, &t](SqlKind kind, bool wide, bool collated) {
    t.kind = kind;
    const std::uint16_t bytes = r.u16le();
    t.length = bytes == kMax ? kMax : static_cast<std::uint16_t>(wide ? bytes / 2 : bytes);
    if (collated) r.skip(5);
  };
  switch (id) {
    case kInt1:
    case kInt2:
    case kInt4:
    case kInt8:
      t.kind = id == kInt1   ? SqlKind::TinyInt
               : id == kInt2 ? SqlKind::SmallInt
               : id == kInt4 ? SqlKind::Int
                             : SqlKind::BigInt;
      t.fixed = true;
      return t;
    case kBit:
      t.kind = SqlKind::Bit;
      t.fixed = true;
      return t;
    case kBitN:
      t.kind = SqlKind::Bit;
      r.skip(1);
      return t;
    case kFlt4:
    case kFlt8:
      t.kind = SqlKind::Float;
      t.length = id == kFlt4 ? 4 : 8;
      t.fixed = true;
      return t;
    case kIntN: {
      const std::uint8_t n = r.u8();
      t.kind = n == 1 ? SqlKind::TinyInt : n == 2 ? SqlKind::SmallInt : n == 4 ? SqlKind::Int : SqlKind::BigInt;
      return t;
    }
    case kFltN:
      t.kind = SqlKind::Float;
      t.length = r.u8();
      return t;
    case kDecimalN:
    case kNumericN:
      t.kind = SqlKind::Decimal;
      r.skip(1);
      t.precision = r.u8();
      t.scale = r.u8();
      return t;
    case kDateTime2N:
      t.kind = SqlKind::DateTime2;
      t.scale = r.u8();
      return t;
    case kDateN: t.kind = SqlKind::Date; return t;
    case kTimeN:
      t.kind = SqlKind::Time;
      t.scale = r.u8();
      return t;
    case kDateTimeOffsetN:
      t.kind = SqlKind::DateTimeOffset;
      t.scale = r.u8();
      return t;
    case kDateTimN:
      t.kind = SqlKind::DateTime;
      r.skip(1);
      return t;
    case kGuid:
      t.kind = SqlKind::UniqueIdentifier;
      r.skip(1);
      return t;
    case kText:
    case kNText:
    case kImage:
      // The old LOB types, which ODBC sends for long statements: a 4-byte length, collation for
      // text; read as the (max) types, `fixed` marking the 4-byte length of their values.
      t.kind = id == kImage ? SqlKind::VarBinary : id == kText ? SqlKind::VarChar : SqlKind::NVarChar;
      t.length = kMax;
      t.fixed = true;
      r.skip(4);
      if (id != kImage) r.skip(5);
      return t;
    case kBigVarBinary: sized(SqlKind::VarBinary, false, false); return t;
    case kBigBinary: sized(SqlKind::Binary, false, false); return t;
    case kBigVarChar: sized(SqlKind::VarChar, false, true); return t;
    case kBigChar: sized(SqlKind::Char, false, true); return t;
    case kNVarChar: sized(SqlKind::NVarChar, true, true); return t;
    case kNChar: sized(SqlKind::NChar, true, true); return t;
    default: break;
  }
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", id);
  throw Error(ErrorKind::InvalidArgument, std::string("parameters of TDS type ") + hex + " are not supported yet");
}

Value read_value(Reader& r, const ColumnType& t) {
  // Fixed-length parameter forms carry no length byte; their TYPE_INFO left t.length at 0.
  const auto fixed_int = [&r](std::size_t n) -> Value {
    const std::uint64_t raw = r.uint_le(n);
    const int shift = static_cast<int>(64 - 8 * n);
    return n == 1 ? static_cast<std::int64_t>(raw)
                  : static_cast<std::int64_t>(static_cast<std::int64_t>(raw << shift) >> shift);
  };
  switch (t.kind) {
    case SqlKind::TinyInt:
    case SqlKind::SmallInt:
    case SqlKind::Int:
    case SqlKind::BigInt: {
      const std::size_t width = static_cast<std::size_t>(int_bytes(t.kind));
      if (t.fixed) return fixed_int(width);
      const std::uint8_t n = r.u8();
      if (n == 0) return std::monostate{};
      if (n != width) throw Error(ErrorKind::InvalidArgument, "integer parameter of bad length");
      return fixed_int(width);
    }
    case SqlKind::Bit: {
      if (t.fixed) return r.u8() != 0;
      const std::uint8_t n = r.u8();
      if (n == 0) return std::monostate{};
      return r.u8() != 0;
    }
    case SqlKind::Float: {
      const std::uint8_t n = t.fixed ? static_cast<std::uint8_t>(t.length) : r.u8();
      if (n == 0) return std::monostate{};
      if (n == 4) {
        const auto bits = static_cast<std::uint32_t>(r.u32le());
        float f = 0;
        std::memcpy(&f, &bits, sizeof f);
        return static_cast<double>(f);
      }
      const std::uint64_t bits = r.u64le();
      double d = 0;
      std::memcpy(&d, &bits, sizeof d);
      return d;
    }
    case SqlKind::Decimal: {
      const std::uint8_t n = r.u8();
      if (n == 0) return std::monostate{};
      const bool positive = r.u8() == 1;
      unsigned __int128 mag = 0;
      const auto digits = r.bytes(n - 1U);
      for (std::size_t k = digits.size(); k-- > 0;) mag = (mag << 8) | digits[k];
      const auto v = static_cast<__int128>(mag);
      return Decimal{positive ? v : -v};
    }
    case SqlKind::DateTime2: {
      const std::uint8_t n = r.u8();
      if (n == 0) return std::monostate{};
      const int tb = time_bytes(t.scale);
      const auto units = static_cast<std::int64_t>(r.uint_le(static_cast<std::size_t>(tb)));
      const auto days = static_cast<std::int32_t>(r.uint_le(3));
      return DateTime2{days, units * pow10(7 - t.scale)};
    }
    case SqlKind::Date: {
      if (r.u8() == 0) return std::monostate{};
      return DateTime2{static_cast<std::int32_t>(r.uint_le(3)), 0};
    }
    case SqlKind::Time: {
      const std::uint8_t n = r.u8();
      if (n == 0) return std::monostate{};
      const auto units = static_cast<std::int64_t>(r.uint_le(n));
      return DateTime2{0, units * pow10(7 - t.scale)};
    }
    case SqlKind::DateTimeOffset: {
      const std::uint8_t n = r.u8();
      if (n == 0) return std::monostate{};
      const auto units = static_cast<std::int64_t>(r.uint_le(static_cast<std::size_t>(n - 5)));
      const auto days = static_cast<std::int32_t>(r.uint_le(3));
      const auto offset = static_cast<std::int16_t>(r.u16le());
      return DateTimeOffset{DateTime2{days, units * pow10(7 - t.scale)}, offset};
    }
    case SqlKind::DateTime: {
      if (r.u8() == 0) return std::monostate{};
      const auto days = static_cast<std::int32_t>(static_cast<std::uint32_t>(r.u32le()));
      const auto parts = static_cast<std::int64_t>(r.u32le());
      return DateTime2{days + 693595, (parts * 100000 + 1) / 3};
    }
    case SqlKind::UniqueIdentifier: {
      if (r.u8() == 0) return std::monostate{};
      const auto part = r.bytes(16);
      return Bytes(part.begin(), part.end());
    }
    case SqlKind::Real: {
      if (r.u8() == 0) return std::monostate{};
      const auto bits = static_cast<std::uint32_t>(r.u32le());
      float f = 0;
      std::memcpy(&f, &bits, sizeof f);
      return static_cast<double>(f);
    }
    default: break;
  }
  Bytes data;
  if (t.length == kMax && t.fixed) {
    const std::uint32_t n = r.u32le();
    if (n == 0xFFFFFFFFU) return std::monostate{};
    const auto part = r.bytes(n);
    data.assign(part.begin(), part.end());
  } else if (t.length == kMax) {
    const std::uint64_t total = r.u64le();
    if (total == kPlpNull) return std::monostate{};
    (void)kPlpUnknownLength;  // the chunks end at a zero-length chunk either way
    for (std::uint32_t chunk = r.u32le(); chunk != 0; chunk = r.u32le()) {
      const auto part = r.bytes(chunk);
      data.insert(data.end(), part.begin(), part.end());
    }
  } else {
    const std::uint16_t n = r.u16le();
    if (n == kShortNull) return std::monostate{};
    const auto part = r.bytes(n);
    data.assign(part.begin(), part.end());
  }
  if (t.kind == SqlKind::Binary || t.kind == SqlKind::VarBinary) return data;
  if (is_unicode(t.kind)) return utf16le_to_utf8(data);
  return from_single_byte(data);
}

}  // namespace mssqlcdc::tds
