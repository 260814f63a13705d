// The row digest reconcile compares (decision 1432). SHA-256's expected values are FIPS 180-4's
// examples (https://csrc.nist.gov/pubs/fips/180-4/upd1/final, the "abc" and two-block messages);
// the row digests' expected values were computed independently with Python's hashlib over the
// documented layout: int.from_bytes(hashlib.sha256(text.encode("utf-16-le")).digest()[:8], "big").
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mssqlcdc/emu/row_digest.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {
namespace {

std::string hex(const std::array<std::uint8_t, 32>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const std::uint8_t b : bytes) out += {kDigits[b >> 4], kDigits[b & 15]};
  return out;
}

std::array<std::uint8_t, 32> sha_of(const std::string& text) {
  return sha256({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
}

// An Arrow utf8 array over `texts` (NULL where `valid` says so), owning its buffers.
struct Utf8Array {
  explicit Utf8Array(const std::vector<std::string>& texts, std::vector<bool> valid = {}) {
    offsets.push_back(0);
    for (const auto& t : texts) {
      data += t;
      offsets.push_back(static_cast<std::int32_t>(data.size()));
    }
    bits.assign((texts.size() + 7) / 8 + 1, 0);
    for (std::size_t i = 0; i < texts.size(); ++i) {
      if (valid.empty() || valid[i]) bits[i / 8] |= static_cast<std::uint8_t>(1U << (i % 8));
      else ++array.null_count;
    }
    buffers = {bits.data(), offsets.data(), data.data()};
    array.length = static_cast<std::int64_t>(texts.size());
    array.n_buffers = 3;
    array.buffers = buffers.data();
  }
  std::string data;
  std::vector<std::int32_t> offsets;
  std::vector<std::uint8_t> bits;
  std::vector<const void*> buffers;
  ArrowSchema schema{"u", nullptr, nullptr, 0, 0, nullptr, nullptr, nullptr, nullptr};
  ArrowArray array{0, 0, 0, 0, 0, nullptr, nullptr, nullptr, nullptr, nullptr};
};

const std::string kRow =
    "\x02"
    "1\x1f\x02s1\x1f\x01";  // (1, 's1', NULL)
const std::string kAccents =
    "\x02"
    "caf\xc3\xa9 \xf0\x9f\x98\x80";  // "café 😀": é and a pair

TEST(RowDigest, Sha256MatchesTheStandardsExamples) {
  EXPECT_EQ(hex(sha_of("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(sha_of("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(RowDigest, ARowsDigestIsTheFirstEightBytesOfSha256OverItsUtf16LeText) {
  EXPECT_EQ(row_digest(kRow), 0x943e920dd2bf2fd6ULL);
  EXPECT_EQ(row_digest(kAccents), 0x9e350e300269b9caULL);
  EXPECT_EQ(row_digest(""), 0xe3b0c44298fc1c14ULL);
  EXPECT_EQ(row_digest(std::string(40, 'x')), 0x278dec48ce57423eULL);  // 80 bytes: two blocks
  EXPECT_EQ(row_digest(std::string(28, 'y')), 0x209173ff9d96a45cULL);  // 56 bytes: padding spills
}

TEST(RowDigest, ACodePointAboveTheBmpBecomesItsSurrogatePair) {
  EXPECT_EQ(utf16le("\xf0\x9f\x98\x80"), (std::vector<std::uint8_t>{0x3d, 0xd8, 0x00, 0xde}));
  EXPECT_EQ(utf16le("\xc3\xa9"), (std::vector<std::uint8_t>{0xe9, 0x00}));
}

TEST(RowDigest, TextThatIsNotUtf8IsRefused) {
  EXPECT_THROW((void)utf16le("\xc3"), Error);
  EXPECT_THROW((void)utf16le("\xff"), Error);
  EXPECT_THROW((void)utf16le("\xed\xa0\x80"), Error);  // a lone surrogate
}

TEST(RowDigest, ATilesDigestIsItsRowsDigestsSummedModuloTwoToThe64) {
  Utf8Array rows({kRow, kAccents});
  EXPECT_EQ(row_digests(rows.schema, rows.array),
            (std::vector<std::uint64_t>{0x943e920dd2bf2fd6ULL, 0x9e350e300269b9caULL}));
  EXPECT_EQ(tile_sum(rows.schema, rows.array), (TileSum{2, 0x3273a03dd528e9a0ULL}));
}

TEST(RowDigest, AnArraysOffsetIsHonoured) {
  Utf8Array rows({"ignored", kRow, kAccents});
  rows.array.offset = 1;
  rows.array.length = 2;
  EXPECT_EQ(tile_sum(rows.schema, rows.array), (TileSum{2, 0x3273a03dd528e9a0ULL}));
}

TEST(RowDigest, ANullTextOrAnotherArrowFormatIsRefused) {
  Utf8Array nulls({kRow, ""}, {true, false});
  EXPECT_THROW((void)tile_sum(nulls.schema, nulls.array), Error);
  Utf8Array binary({kRow});
  binary.schema.format = "z";
  EXPECT_THROW((void)row_digests(binary.schema, binary.array), Error);
}

// A batch of three rows as a struct array: bigint `a`, text `b` and decimal(12,2) `c`:
// (5, 'ab', 1.05), (NULL, 'é', -0.10), (-3, NULL, NULL).
struct Batch {
  Batch() {
    std::memcpy(ints.data(), std::array<std::int64_t, 3>{5, 0, -3}.data(), 24);
    decimals = {105, 0, static_cast<std::uint64_t>(-10), ~std::uint64_t{0}, 0, 0};
    for (int c = 0; c < 3; ++c) {
      kids[c].n_buffers = c == 1 ? 3 : 2;
      kids[c].length = 3;
      kids[c].null_count = 1;
      kid_ptrs[c] = &kids[c];
      kid_schema_ptrs[c] = &kid_schemas[c];
    }
    a_buffers = {&a_valid, ints.data()};
    b_buffers = {&b_valid, offsets.data(), text.data()};
    c_buffers = {&c_valid, decimals.data()};
    kids[0].buffers = a_buffers.data();
    kids[1].buffers = b_buffers.data();
    kids[2].buffers = c_buffers.data();
    kid_schemas[0].format = "l";
    kid_schemas[1].format = "u";
    kid_schemas[2].format = "d:12,2";
    schema.format = "+s";
    schema.n_children = 3;
    schema.children = kid_schema_ptrs.data();
    array.length = 3;
    array.n_children = 3;
    array.children = kid_ptrs.data();
  }
  std::array<std::uint8_t, 24> ints{};
  std::uint8_t a_valid = 0b101, b_valid = 0b011, c_valid = 0b011;
  std::array<std::int32_t, 4> offsets{0, 2, 4, 4};
  std::string text = "ab\xc3\xa9";
  std::array<std::uint64_t, 6> decimals{};
  std::array<const void*, 2> a_buffers{}, c_buffers{};
  std::array<const void*, 3> b_buffers{};
  std::array<ArrowArray, 3> kids{};
  std::array<ArrowArray*, 3> kid_ptrs{};
  std::array<ArrowSchema, 3> kid_schemas{};
  std::array<ArrowSchema*, 3> kid_schema_ptrs{};
  ArrowSchema schema{};
  ArrowArray array{};
};

TEST(RowDigest, ABatchsRowsAreDigestedFromTheirFieldsCanonicalTexts) {
  Batch batch;  // texts "\x025\x1f\x02ab\x1f\x021.05", "\x01\x1f\x02é\x1f\x02-0.10", "\x02-3\x1f\x01\x1f\x01"
  EXPECT_EQ(batch_digests(batch.schema, batch.array),
            (std::vector<std::uint64_t>{0x2b971a7f1f99a536ULL, 0xcee2b57aa8a19970ULL, 0xbb578cd3f91a4c24ULL}));
  EXPECT_EQ(batch_tile(batch.schema, batch.array), (TileSum{3, 0xb5d15ccdc1558acaULL}));
  batch.kid_schemas[2].format = "z";
  EXPECT_THROW((void)batch_tile(batch.schema, batch.array), Error);
}

}  // namespace
}  // namespace mssqlcdc::emu
