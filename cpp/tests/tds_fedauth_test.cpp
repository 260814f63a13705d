// Token logins: LOGIN7's FEDAUTH feature extension (MS-TDS 2.2.6.4), PRELOGIN's FEDAUTHREQUIRED
// (2.2.6.5) and the FEATUREEXTACK answer (2.2.7.11), laid out here from the specification's tables.
#include <gtest/gtest.h>

#include <openssl/evp.h>
#include <algorithm>
#include <chrono>

#include "emu_test_util.hpp"
#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/tokens.hpp"
#include "tds/src/login.hpp"
#include "tds/src/session.hpp"
#include "tds_test_util.hpp"

namespace mssqlcdc::tds {
namespace {

const std::string kToken = "eyJhbGciOiJub25lIn0.eyJvaWQiOiJ0ZXN0In0.c2lnbmVk";

void u32(Bytes& b, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) b.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
}

// One FeatureOpt: FeatureId, DWORD FeatureDataLen, FeatureData.
void feature(Bytes& b, std::uint8_t id, const Bytes& data) {
  b.push_back(id);
  u32(b, static_cast<std::uint32_t>(data.size()));
  b.insert(b.end(), data.begin(), data.end());
}

// FEDAUTH's data for the security-token library: Options (bFedAuthLibrary << 1 | fFedAuthEcho),
// then the token as L_VARBYTE (DWORD length, UTF-16LE bytes), then an optional 32-byte nonce.
Bytes fedauth_data(const std::string& token, bool echo, bool nonce = false) {
  Bytes utf16;
  append_utf16le(utf16, token);
  Bytes d{static_cast<std::uint8_t>((0x01 << 1) | (echo ? 1 : 0))};
  u32(d, static_cast<std::uint32_t>(utf16.size()));
  d.insert(d.end(), utf16.begin(), utf16.end());
  if (nonce) d.insert(d.end(), 32, 0x5A);
  return d;
}

// test::login7 with fExtension set: ibExtension points to a DWORD that holds the FeatureExt's
// offset, and the FeatureExt follows it at the end of the message.
Bytes login7_with(const Bytes& features) {
  Bytes out = test::login7("", "", "shop");
  const auto at = static_cast<std::uint32_t>(out.size());
  u32(out, at + 4);
  out.insert(out.end(), features.begin(), features.end());
  out[27] |= 0x10;  // OptionFlags3 fExtension
  out[56] = static_cast<std::uint8_t>(at);
  out[57] = static_cast<std::uint8_t>(at >> 8);
  out[58] = 4;  // cbExtension: the DWORD
  out[59] = 0;
  const auto n = static_cast<std::uint32_t>(out.size());
  for (int k = 0; k < 4; ++k) out[k] = static_cast<std::uint8_t>(n >> (8 * k));
  return out;
}

Bytes token_login(const std::string& token, bool echo) {
  Bytes f;
  feature(f, 0x02, fedauth_data(token, echo));
  f.push_back(0xFF);
  return login7_with(f);
}

AccessTokenCheck check_of(const std::string& token, std::optional<std::int64_t> expires_at = std::nullopt) {
  std::string digest(32, '\0');
  unsigned int size = 0;
  EXPECT_EQ(EVP_Digest(token.data(), token.size(), reinterpret_cast<unsigned char*>(digest.data()), &size, EVP_sha256(),
                       nullptr),
            1);
  return AccessTokenCheck{digest, expires_at};
}

bool contains(const Bytes& haystack, const Bytes& needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) != haystack.end();
}

TEST(TdsFedAuth, ASecurityTokenIsReadFromTheFeatureExtWithItsEchoFlag) {
  const Login7 login = parse_login7(token_login(kToken, true));
  ASSERT_TRUE(login.has_feature_ext());
  ASSERT_TRUE(login.fedauth);
  EXPECT_EQ(login.fedauth->library, FedAuth::kSecurityToken);
  EXPECT_TRUE(login.fedauth->echo);
  EXPECT_FALSE(login.fedauth->nonce);
  EXPECT_EQ(login.fedauth->token.reveal(), kToken);
  EXPECT_TRUE(login.user_name.empty());
}

TEST(TdsFedAuth, OtherFeaturesAreSkippedAndANonceAfterTheTokenIsSeen) {
  Bytes f;
  feature(f, 0x0A, Bytes{0x01});  // UTF8_SUPPORT, not this server's concern
  feature(f, 0x02, fedauth_data(kToken, false, true));
  f.push_back(0xFF);
  const std::optional<FedAuth> found = parse_feature_ext(f, 0);
  ASSERT_TRUE(found);
  EXPECT_FALSE(found->echo);
  EXPECT_TRUE(found->nonce);
  EXPECT_EQ(found->token.reveal(), kToken);
}

TEST(TdsFedAuth, AFeatureExtWithoutFedAuthHasNone) {
  Bytes f;
  feature(f, 0x0A, Bytes{0x01});
  f.push_back(0xFF);
  EXPECT_FALSE(parse_feature_ext(f, 0));
}

TEST(TdsFedAuth, ATokenLengthThatDisagreesWithItsDataIsRefusedWithoutQuotingTheToken) {
  Bytes data = fedauth_data(kToken, true);
  data[1] = static_cast<std::uint8_t>(data[1] + 2);  // the stated length two bytes too long
  Bytes f;
  feature(f, 0x02, data);
  f.push_back(0xFF);
  try {
    (void)parse_feature_ext(f, 0);
    FAIL() << "a FEDAUTH token longer than its data was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("eyJ"), std::string::npos) << e.what();
  }
}

TEST(TdsFedAuth, AFeatureExtWithoutItsTerminatorOrCutShortIsRefused) {
  Bytes f;
  feature(f, 0x02, fedauth_data(kToken, true));
  EXPECT_THROW((void)parse_feature_ext(f, 0), Error);  // no 0xFF
  f.resize(8);
  EXPECT_THROW((void)parse_feature_ext(f, 0), Error);  // the entry's data is cut
}

TEST(TdsFedAuth, PreLoginCarriesFedAuthRequiredOnlyWhenAsked) {
  EXPECT_TRUE(parse_prelogin(prelogin_response(Encryption::On, true)).fedauth_required);
  EXPECT_FALSE(parse_prelogin(prelogin_response(Encryption::On)).fedauth_required);
}

TEST(TdsFedAuth, TheTokenMatchesByItsHashUntilItExpires) {
  const AccessTokenCheck check = check_of(kToken, 2'000'000'000);
  EXPECT_TRUE(access_token_matches(check, Secret(kToken), 1'999'999'999));
  EXPECT_FALSE(access_token_matches(check, Secret(kToken), 2'000'000'000));  // expired at exp
  EXPECT_FALSE(access_token_matches(check, Secret(kToken + "x"), 0));
  EXPECT_FALSE(access_token_matches(check, Secret(""), 0));
  EXPECT_TRUE(access_token_matches(check_of(kToken), Secret(kToken), 4'000'000'000));  // no exp
}

class TdsTokenSession : public ::testing::Test {
 protected:
  TdsTokenSession() { (void)emu::test::orders_file(file_.path()); }

  // PRELOGIN asking for encryption and federated authentication, then LOGIN7 with `token`.
  Reply login(const std::string& token, std::optional<AccessTokenCheck> check, bool tls = true, bool echo = true) {
    const bool accepts = check.has_value();
    Session s(file_.path(), "shop", 51, nullptr, tls, std::nullopt, std::move(check));
    const Reply pre = s.handle(Message{PacketType::PreLogin, prelogin_response(Encryption::On, true), false});
    EXPECT_FALSE(pre.close);
    EXPECT_EQ(parse_prelogin(pre.payload).fedauth_required, accepts);
    return s.handle(Message{PacketType::Login7, token_login(token, echo), false});
  }

  emu::test::TempFile file_;
};

TEST_F(TdsTokenSession, TheRightTokenLogsInAndFeatureExtAckAcknowledgesFedAuth) {
  const Reply r = login(kToken, check_of(kToken));
  EXPECT_FALSE(r.close);
  EXPECT_TRUE(contains(r.payload, Bytes{static_cast<std::uint8_t>(Token::LoginAck)}));
  // FEATUREEXTACK: FEDAUTH (0x02) with FeatureAckDataLen 0, then the terminator.
  EXPECT_TRUE(contains(r.payload, Bytes{static_cast<std::uint8_t>(Token::FeatureExtAck), 0x02, 0, 0, 0, 0, 0xFF}));
}

TEST_F(TdsTokenSession, AWrongExpiredUnechoedOrUnencryptedTokenIsLoginFailed18456) {
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  const Reply wrong = login("another-token", check_of(kToken));
  const Reply expired = login(kToken, check_of(kToken, now.count() - 1));
  const Reply unechoed = login(kToken, check_of(kToken), true, false);
  const Reply plain = login(kToken, check_of(kToken), false);
  const Reply refused = login(kToken, std::nullopt);  // a server without a token
  for (const Reply* r : {&wrong, &expired, &unechoed, &plain, &refused}) {
    EXPECT_TRUE(r->close);
    ASSERT_EQ(r->payload.front(), static_cast<std::uint8_t>(Token::Error));
    Reader number(std::span<const std::uint8_t>(r->payload).subspan(3, 4));
    EXPECT_EQ(number.u32le(), 18456U);
    EXPECT_FALSE(contains(r->payload, Bytes{'e', 0, 'y', 0, 'J', 0}));  // the token's UTF-16 text
  }
}

}  // namespace
}  // namespace mssqlcdc::tds
