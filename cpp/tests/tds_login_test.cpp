#include <gtest/gtest.h>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/login.hpp"

namespace mssqlcdc::tds {
namespace {

// A LOGIN7 laid out as the specification's table: fixed part, then the variable data.
Bytes login7(const std::string& user, const std::string& password, const std::string& database) {
  struct Field {
    Bytes data;
    std::size_t chars;
  };
  const auto text = [](const std::string& s) {
    Bytes b;
    append_utf16le(b, s);
    return Field{b, b.size() / 2};
  };
  const Bytes secret = obfuscate_password(password);
  const Field fields[] = {text("host1"), text(user),        Field{secret, secret.size() / 2},
                          text("app"),   text("127.0.0.1"), Field{{}, 0},
                          text("lib"),   text(""),          text(database)};
  Writer w;
  w.u32le(0);  // patched below
  w.u32le(0x74000004);
  w.u32le(8192);
  w.u32le(7);
  w.u32le(1234);
  w.u32le(0);
  w.u8(0xE0);
  w.u8(0x03);
  w.u8(0);
  w.u8(0);
  w.u32le(0);
  w.u32le(0x0409);
  std::size_t offset = 94;
  for (const Field& f : fields) {
    w.u16le(static_cast<std::uint16_t>(offset));
    w.u16le(static_cast<std::uint16_t>(f.chars));
    offset += f.data.size();
  }
  w.bytes(Bytes(6, 0));  // ClientID
  for (int k = 0; k < 3; ++k) {  // SSPI, AtchDBFile, ChangePassword: empty
    w.u16le(static_cast<std::uint16_t>(offset));
    w.u16le(0);
  }
  w.u32le(0);  // cbSSPILong
  Bytes out = w.take();
  for (const Field& f : fields) out.insert(out.end(), f.data.begin(), f.data.end());
  const auto n = static_cast<std::uint32_t>(out.size());
  for (int k = 0; k < 4; ++k) out[k] = static_cast<std::uint8_t>(n >> (8 * k));
  return out;
}

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
