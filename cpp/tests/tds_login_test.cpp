#include <gtest/gtest.h>

#include "mssqlcdc/error.hpp"
#include "tds/src/login.hpp"
#include "tds_test_util.hpp"

namespace mssqlcdc::tds {
namespace {

using test::login7;

TEST(TdsLogin, TheObfuscationIsANibbleSwapThenXorA5) {
  // "a" is 0x61 0x00 in UTF-16LE: swap -> 0x16 0x00, xor -> 0xB3 0xA5.
  EXPECT_EQ(obfuscate_password("a"), (Bytes{0xB3, 0xA5}));
}

TEST(TdsLogin, APasswordRoundTripsThroughTheObfuscation) {
  for (const std::string pw : {"", "Secret#123", "pässwörd", "🔑key"}) {
    EXPECT_EQ(deobfuscate_password(obfuscate_password(pw)).reveal(), pw);
  }
}

TEST(TdsLogin, Login7FieldsAreReadFromTheirOffsets) {
  const Login7 login = parse_login7(login7("sa", "Str0ng!pw", "shop"));
  EXPECT_EQ(login.tds_version, 0x74000004U);
  EXPECT_EQ(login.packet_size, 8192U);
  EXPECT_EQ(login.user_name, "sa");
  EXPECT_EQ(login.password.reveal(), "Str0ng!pw");
  EXPECT_EQ(login.host_name, "host1");
  EXPECT_EQ(login.app_name, "app");
  EXPECT_EQ(login.server_name, "127.0.0.1");
  EXPECT_EQ(login.library_name, "lib");
  EXPECT_EQ(login.database, "shop");
  EXPECT_FALSE(login.sspi);
  EXPECT_FALSE(login.has_feature_ext());
}

TEST(TdsLogin, ATruncatedLoginIsRefusedWithoutQuotingThePassword) {
  Bytes bytes = login7("sa", "hunter2-secret", "shop");
  bytes.resize(bytes.size() - 4);
  try {
    (void)parse_login7(bytes);
    FAIL() << "a truncated LOGIN7 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
  }
}

TEST(TdsLogin, PreLoginAnswersEncryptionNotSupported) {
  const PreLogin answer = parse_prelogin(prelogin_response(Encryption::NotSupported));
  ASSERT_TRUE(answer.encryption);
  EXPECT_EQ(*answer.encryption, Encryption::NotSupported);
  EXPECT_FALSE(answer.mars);
}

TEST(TdsLogin, APreLoginOptionPointingPastTheMessageIsRefused) {
  const Bytes bad{0x01, 0x00, 0x10, 0x00, 0x01, 0xFF};
  EXPECT_THROW((void)parse_prelogin(bad), Error);
}

}  // namespace
}  // namespace mssqlcdc::tds
