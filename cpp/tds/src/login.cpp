#include "login.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <string>

#include "mssqlcdc/error.hpp"

namespace mssqlcdc::tds {
namespace {

// PRELOGIN option tokens (MS-TDS 2.2.6.5).
constexpr std::uint8_t kVersion = 0x00;
constexpr std::uint8_t kEncryption = 0x01;
constexpr std::uint8_t kInstance = 0x02;
constexpr std::uint8_t kThreadId = 0x03;
constexpr std::uint8_t kMars = 0x04;
constexpr std::uint8_t kTerminator = 0xFF;

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

Bytes prelogin_response(Encryption encryption) {
  struct Option {
    std::uint8_t token;
    Bytes data;
  };
  const Option options[] = {
      {kVersion, {16, 0, 0x03, 0xE8, 0, 0}},  // 16.0.1000, subbuild 0: SQL Server 2022's numbering
      {kEncryption, {static_cast<std::uint8_t>(encryption)}},
      {kInstance, {0}},
      {kThreadId, {}},
      {kMars, {0}},
  };
  const std::size_t header = std::size(options) * 5 + 1;
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
  r.skip(4);  // the FeatureExt offset (when fExtension) or unused
  out.library_name = utf16le_to_utf8(field("CltIntName"));
  out.language = utf16le_to_utf8(field("Language"));
  out.database = utf16le_to_utf8(field("Database"));
  r.skip(6);  // ClientID
  out.sspi = !field("SSPI", true).empty() || (out.option_flags2 & 0x80) != 0;
  return out;
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

}  // namespace mssqlcdc::tds
