#include "login.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <string>
#include <vector>

#include "mssqlcdc/error.hpp"

namespace mssqlcdc::tds {
namespace {

// PRELOGIN option tokens (MS-TDS 2.2.6.5).
constexpr std::uint8_t kVersion = 0x00;
constexpr std::uint8_t kEncryption = 0x01;
constexpr std::uint8_t kInstance = 0x02;
constexpr std::uint8_t kThreadId = 0x03;
constexpr std::uint8_t kMars = 0x04;
constexpr std::uint8_t kFedAuthRequired = 0x06;
constexpr std::uint8_t kTerminator = 0xFF;

// LOGIN7 FeatureExt (MS-TDS 2.2.6.4): the federated-authentication feature and the list's end.
constexpr std::uint8_t kFeatureFedAuth = 0x02;
constexpr std::uint8_t kFeatureTerminator = 0xFF;
constexpr std::size_t kNonceSize = 32;

// LOGIN7's fixed part ends at byte 94; the offset/length pairs start at byte 36.
constexpr std::size_t kLoginFixed = 94;

std::uint8_t swap_nibbles(std::uint8_t b) { return static_cast<std::uint8_t>((b << 4) | (b >> 4)); }

}  // namespace

PreLogin parse_prelogin(std::span<const std::uint8_t> payload) {
  PreLogin out;
  Reader options(payload);
  for (std::uint8_t t = options.u8(); t != kTerminator; t = options.u8()) {
    const std::uint16_t offset = options.u16be();
    const std::uint16_t length = options.u16be();
    if (static_cast<std::size_t>(offset) + length > payload.size()) {
      throw Error(ErrorKind::InvalidArgument, "PRELOGIN option points past the end of the message");
    }
    if (t == kEncryption && length >= 1) out.encryption = static_cast<Encryption>(payload[offset]);
    if (t == kMars && length >= 1) out.mars = payload[offset] != 0;
    if (t == kFedAuthRequired && length >= 1) out.fedauth_required = payload[offset] == 0x01;
  }
  return out;
}

EncryptionAnswer negotiate_encryption(std::optional<Encryption> client, bool server_has_tls) {
  if (!server_has_tls || !client) return {};
  switch (*client) {
    case Encryption::Off: return {Encryption::Off, TlsScope::LoginOnly};
    case Encryption::On:
    case Encryption::Required: return {Encryption::On, TlsScope::All};
    case Encryption::NotSupported: break;
  }
  return {};  // NOT_SUP, or a value MS-TDS does not define (its high bits are other flags)
}

Bytes prelogin_response(Encryption encryption, bool fedauth_required) {
  struct Option {
    std::uint8_t token;
    Bytes data;
  };
  std::vector<Option> options = {
      {kVersion, {16, 0, 0x03, 0xE8, 0, 0}},  // 16.0.1000, subbuild 0: SQL Server 2022's numbering
      {kEncryption, {static_cast<std::uint8_t>(encryption)}},
      {kInstance, {0}},
      {kThreadId, {}},
      {kMars, {0}},
  };
  if (fedauth_required) options.push_back({kFedAuthRequired, {0x01}});
  const std::size_t header = options.size() * 5 + 1;
  Writer w;
  std::size_t offset = header;
  for (const Option& o : options) {
    w.u8(o.token);
    w.u16be(static_cast<std::uint16_t>(offset));
    w.u16be(static_cast<std::uint16_t>(o.data.size()));
    offset += o.data.size();
  }
  w.u8(kTerminator);
  for (const Option& o : options) w.bytes(o.data);
  return w.take();
}

Bytes obfuscate_password(std::string_view utf8) {
  Bytes out;
  append_utf16le(out, utf8);
  for (auto& b : out) b = static_cast<std::uint8_t>(swap_nibbles(b) ^ 0xA5);
  return out;
}

Secret deobfuscate_password(std::span<const std::uint8_t> bytes) {
  Bytes plain(bytes.begin(), bytes.end());
  for (auto& b : plain) b = swap_nibbles(static_cast<std::uint8_t>(b ^ 0xA5));
  return Secret(utf16le_to_utf8(plain));
}

Login7 parse_login7(std::span<const std::uint8_t> payload) {
  Reader r(payload);
  const std::uint32_t length = r.u32le();
  if (payload.size() < kLoginFixed || length > payload.size()) {
    throw Error(ErrorKind::InvalidArgument, "LOGIN7 message of " + std::to_string(payload.size()) +
                                                " bytes is shorter than its fixed part or its stated length");
  }
  Login7 out;
  out.tds_version = r.u32le();
  out.packet_size = r.u32le();
  r.skip(12);  // client program version, process id, connection id
  out.option_flags1 = r.u8();
  out.option_flags2 = r.u8();
  out.type_flags = r.u8();
  out.option_flags3 = r.u8();
  r.skip(8);  // client time zone, LCID
  // Offsets are from the start of the message, lengths in characters (SSPI: in bytes).
  const auto field = [&payload, &r](const char* name, bool bytes_length = false) -> std::span<const std::uint8_t> {
    const std::size_t offset = r.u16le();
    const std::size_t count = r.u16le();
    const std::size_t n = bytes_length ? count : count * 2;
    if (n == 0) return {};
    if (offset + n > payload.size()) {
      throw Error(ErrorKind::InvalidArgument, std::string("LOGIN7 field ") + name + " points past the message");
    }
    return payload.subspan(offset, n);
  };
  out.host_name = utf16le_to_utf8(field("HostName"));
  out.user_name = utf16le_to_utf8(field("UserName"));
  out.password = deobfuscate_password(field("Password"));
  out.app_name = utf16le_to_utf8(field("AppName"));
  out.server_name = utf16le_to_utf8(field("ServerName"));
  // ibExtension/cbExtension: with fExtension, ibExtension points to a DWORD, the FeatureExt's offset.
  const std::size_t extension = r.u16le();
  const std::size_t extension_length = r.u16le();
  out.library_name = utf16le_to_utf8(field("CltIntName"));
  out.language = utf16le_to_utf8(field("Language"));
  out.database = utf16le_to_utf8(field("Database"));
  r.skip(6);  // ClientID
  out.sspi = !field("SSPI", true).empty() || (out.option_flags2 & 0x80) != 0;
  if (out.has_feature_ext() && extension_length >= 4) {
    if (extension + 4 > payload.size()) {
      throw Error(ErrorKind::InvalidArgument, "LOGIN7 extension offset points past the message");
    }
    Reader at(payload.subspan(extension, 4));
    out.fedauth = parse_feature_ext(payload, at.u32le());
  }
  return out;
}

std::optional<FedAuth> parse_feature_ext(std::span<const std::uint8_t> payload, std::size_t offset) {
  std::optional<FedAuth> found;
  while (true) {
    if (offset >= payload.size()) {
      throw Error(ErrorKind::InvalidArgument, "LOGIN7 FeatureExt has no terminator before the message ends");
    }
    const std::uint8_t id = payload[offset];
    if (id == kFeatureTerminator) return found;
    if (offset + 5 > payload.size()) {
      throw Error(ErrorKind::InvalidArgument, "LOGIN7 FeatureExt entry is cut short by the message's end");
    }
    Reader header(payload.subspan(offset + 1, 4));
    const std::size_t length = header.u32le();
    if (length > payload.size() - offset - 5) {
      throw Error(ErrorKind::InvalidArgument,
                  "LOGIN7 FeatureExt entry " + std::to_string(id) + " is longer than the message holds");
    }
    const std::span<const std::uint8_t> data = payload.subspan(offset + 5, length);
    offset += 5 + length;
    if (id != kFeatureFedAuth) continue;
    if (data.empty()) throw Error(ErrorKind::InvalidArgument, "LOGIN7 FEDAUTH feature has no Options byte");
    FedAuth f;
    f.library = static_cast<std::uint8_t>(data[0] >> 1);
    f.echo = (data[0] & 0x01) != 0;
    if (f.library == FedAuth::kSecurityToken) {
      if (data.size() < 5) throw Error(ErrorKind::InvalidArgument, "LOGIN7 FEDAUTH feature has no token length");
      Reader token(data.subspan(1, 4));
      const std::size_t n = token.u32le();
      const std::size_t rest = data.size() - 5;
      if (n > rest || (rest - n != 0 && rest - n != kNonceSize) || n % 2 != 0) {
        throw Error(ErrorKind::InvalidArgument, "LOGIN7 FEDAUTH token length " + std::to_string(n) +
                                                    " disagrees with its " + std::to_string(rest) +
                                                    " bytes of data (UTF-16LE token, then an optional 32-byte nonce)");
      }
      f.token = Secret(utf16le_to_utf8(data.subspan(5, n)));
      f.nonce = rest - n == kNonceSize;
    }
    found = std::move(f);
  }
}

bool password_matches(const SqlLogin& login, const Secret& password) {
  if (login.hash.empty() || login.iterations == 0) return false;
  std::string derived(login.hash.size(), '\0');
  const std::string& clear = password.reveal();
  const int ok = PKCS5_PBKDF2_HMAC(
      clear.data(), static_cast<int>(clear.size()), reinterpret_cast<const unsigned char*>(login.salt.data()),
      static_cast<int>(login.salt.size()), static_cast<int>(login.iterations), EVP_sha256(),
      static_cast<int>(derived.size()), reinterpret_cast<unsigned char*>(derived.data()));
  return ok == 1 && CRYPTO_memcmp(derived.data(), login.hash.data(), derived.size()) == 0;
}

SqlLogin hash_password(const std::string& name, const Secret& password) {
  constexpr std::uint32_t kIterations = 20'000;
  SqlLogin out{name, std::string(16, '\0'), std::string(32, '\0'), kIterations};
  const std::string& clear = password.reveal();
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.salt.data()), static_cast<int>(out.salt.size())) != 1 ||
      PKCS5_PBKDF2_HMAC(clear.data(), static_cast<int>(clear.size()),
                        reinterpret_cast<const unsigned char*>(out.salt.data()), static_cast<int>(out.salt.size()),
                        static_cast<int>(kIterations), EVP_sha256(), static_cast<int>(out.hash.size()),
                        reinterpret_cast<unsigned char*>(out.hash.data())) != 1) {
    throw Error(ErrorKind::Io, "OpenSSL could not hash a new login's password");
  }
  return out;
}

bool access_token_matches(const AccessTokenCheck& check, const Secret& token, std::int64_t now) {
  constexpr std::size_t kSha256 = 32;
  if (check.hash.size() != kSha256 || token.empty()) return false;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  const std::string& clear = token.reveal();
  if (EVP_Digest(clear.data(), clear.size(), digest, &size, EVP_sha256(), nullptr) != 1 || size != kSha256) {
    return false;
  }
  const bool same = CRYPTO_memcmp(digest, check.hash.data(), kSha256) == 0;
  return same && (!check.expires_at || now < *check.expires_at);
}

}  // namespace mssqlcdc::tds
