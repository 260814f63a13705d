#include "mssqlcdc/lsn.hpp"

#include <gtest/gtest.h>

#include "mssqlcdc/error.hpp"

namespace mssqlcdc {
namespace {

TEST(Lsn, ParsesPrefixedTextOfAnyLengthLeftPadded) {
  EXPECT_EQ(Lsn::parse("0x2A").to_string(), "0x0000000000000000002A");
  EXPECT_EQ(Lsn::parse("0X2a").to_string(), "0x0000000000000000002A");
  EXPECT_EQ(Lsn::parse("0x0000002a000001f00004").to_string(), "0x0000002A000001F00004");
}

TEST(Lsn, ParsesTheTwentyDigitFormWithoutPrefix) {
  EXPECT_EQ(Lsn::parse("0000002A000001F00004").to_string(), "0x0000002A000001F00004");
}

TEST(Lsn, SplitsIntoVlfBlockAndSlot) {
  const Lsn lsn = Lsn::parse("0x0000002A000001F00004");
  EXPECT_EQ(lsn.vlf(), 0x2Au);
  EXPECT_EQ(lsn.block(), 0x1F0u);
  EXPECT_EQ(lsn.slot(), 4u);
  EXPECT_EQ(Lsn(0x2A, 0x1F0, 4), lsn);
}

TEST(Lsn, RejectsMalformedTextNamingIt) {
  for (const char* bad : {"", "0x", "0xZZ", "12", "0x000000000000000000001", "2A000001F00004XYZ!!", " 0x1", "0x1 "}) {
    try {
      (void)Lsn::parse(bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("'" + std::string(bad) + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(Lsn, OrdersByValueAcrossFields) {
  EXPECT_LT(Lsn(1, 0xFFFFFFFF, 0xFFFF), Lsn(2, 0, 0));
  EXPECT_LT(Lsn(2, 1, 0xFFFF), Lsn(2, 2, 0));
  EXPECT_LT(Lsn::zero(), Lsn(0, 0, 1));
  EXPECT_EQ(Lsn::parse("0x1"), Lsn(0, 0, 1));
}

TEST(Lsn, IncrementCarriesAcrossEveryByte) {
  EXPECT_EQ(Lsn(0, 0, 0xFFFF).increment(), Lsn(0, 1, 0));
  EXPECT_EQ(Lsn(0, 0xFFFFFFFF, 0xFFFF).increment(), Lsn(1, 0, 0));
  EXPECT_EQ(Lsn::zero().increment(), Lsn(0, 0, 1));
}

TEST(Lsn, DecrementBorrowsAcrossEveryByte) {
  EXPECT_EQ(Lsn(1, 0, 0).decrement(), Lsn(0, 0xFFFFFFFF, 0xFFFF));
  EXPECT_EQ(Lsn(0, 1, 0).decrement(), Lsn(0, 0, 0xFFFF));
}

TEST(Lsn, IncrementAtTheMaximumAndDecrementAtZeroThrow) {
  EXPECT_THROW((void)Lsn::max().increment(), Error);
  EXPECT_THROW((void)Lsn::zero().decrement(), Error);
  try {
    (void)Lsn::zero().decrement();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::OutOfRange);
  }
}

TEST(Lsn, TextOrderIsLsnOrder) {
  const Lsn a(0x10, 0x2, 0x3);
  const Lsn b(0x9, 0xFFFF, 0xFFFF);
  EXPECT_EQ(a < b, a.to_string() < b.to_string());
  EXPECT_EQ(b < a, b.to_string() < a.to_string());
}

}  // namespace
}  // namespace mssqlcdc
