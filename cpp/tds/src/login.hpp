// login.hpp: the two messages that open a connection. PRELOGIN (MS-TDS 2.2.6.5) negotiates
// encryption: without TLS this server answers "not supported", so a client that requires TLS
// stops there; with TLS it follows MS-TDS's table (negotiate_encryption).
// LOGIN7 (MS-TDS 2.2.6.4) names the user, the database and the packet size; its password arrives
// obfuscated (each byte XOR 0xA5 after a nibble swap), is decoded into a Secret and is never
// written to a log, a message or an exception. A Microsoft Entra access token arrives instead in
// LOGIN7's FEDAUTH feature extension (MS-TDS 2.2.6.4, security-token library), is kept as a
// Secret too, and is acknowledged with FEATUREEXTACK (MS-TDS 2.2.7.11).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "mssqlcdc/tds/server.hpp"
#include "mssqlcdc/tds/wire.hpp"

namespace mssqlcdc::tds {

enum class Encryption : std::uint8_t { Off = 0, On = 1, NotSupported = 2, Required = 3 };

struct PreLogin {
  std::optional<Encryption> encryption;  // the client's wish; absent when it sent none
  bool mars = false;
  bool fedauth_required = false;  // the client's FEDAUTHREQUIRED option (0x06) was 0x01
};

[[nodiscard]] PreLogin parse_prelogin(std::span<const std::uint8_t> payload);

// Which traffic TLS protects after PRELOGIN: none, LOGIN7 alone, or everything.
enum class TlsScope : std::uint8_t { None, LoginOnly, All };

struct EncryptionAnswer {
  Encryption answer = Encryption::NotSupported;  // what the server's PRELOGIN says
  TlsScope scope = TlsScope::None;
};

// MS-TDS 2.2.6.5's negotiation from the server's side. Without TLS: "not supported" (a client
// that wants encryption then ends the connection itself). With TLS: client OFF -> OFF, the
// login alone encrypted; client ON or REQ -> ON, everything encrypted; client NOT_SUP or no
// option -> NOT_SUP, nothing encrypted (the server does not require encryption).
[[nodiscard]] EncryptionAnswer negotiate_encryption(std::optional<Encryption> client, bool server_has_tls);
// The server's PRELOGIN answer: its version, the encryption it grants, no instance, no MARS,
// and FEDAUTHREQUIRED 0x01 when `fedauth_required` (a client that asked for federated
// authentication, to a server that accepts access tokens; the client then echoes it in LOGIN7).
[[nodiscard]] Bytes prelogin_response(Encryption encryption, bool fedauth_required = false);

// A password: it can be compared and read on purpose, and has no way to be printed.
class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}
  [[nodiscard]] const std::string& reveal() const { return value_; }
  [[nodiscard]] bool empty() const { return value_.empty(); }

 private:
  std::string value_;
};

// LOGIN7's FEDAUTH feature extension (FeatureId 0x02): which token library the client uses,
// whether it echoes the server's FEDAUTHREQUIRED, and, for the security-token library, the token.
struct FedAuth {
  static constexpr std::uint8_t kSecurityToken = 0x01;  // bFedAuthLibrary: a token made beforehand
  std::uint8_t library = 0;                             // bFedAuthLibrary, the Options byte's high 7 bits
  bool echo = false;                                    // fFedAuthEcho, the Options byte's low bit
  Secret token;        // the token's UTF-16LE bytes decoded to UTF-8; empty for other libraries
  bool nonce = false;  // the client sent a 32-byte nonce after the token
};

// The FeatureExt block at `offset` of a LOGIN7 payload: FeatureOpt entries (FeatureId, DWORD
// FeatureDataLen, data) up to the 0xFF terminator. Returns FEDAUTH when present (other features
// are skipped). Throws Error(InvalidArgument) for an entry past the payload's end, a missing
// terminator, or a FEDAUTH whose token length disagrees with its data; never quotes the token.
[[nodiscard]] std::optional<FedAuth> parse_feature_ext(std::span<const std::uint8_t> payload, std::size_t offset);

struct Login7 {
  std::uint32_t tds_version = 0;  // as the client wrote it: 0x74000004 is TDS 7.4
  std::uint32_t packet_size = 0;  // 0: the server's default
  std::uint8_t option_flags1 = 0;
  std::uint8_t option_flags2 = 0;
  std::uint8_t type_flags = 0;
  std::uint8_t option_flags3 = 0;
  std::string host_name;
  std::string user_name;
  Secret password;
  std::string app_name;
  std::string server_name;
  std::string library_name;
  std::string language;
  std::string database;
  bool sspi = false;               // integrated authentication, which this server does not offer
  std::optional<FedAuth> fedauth;  // a FEDAUTH feature extension: a token login

  // OptionFlags3 fExtension: a FEATUREEXT block follows, so the client expects FEATUREEXTACK.
  [[nodiscard]] bool has_feature_ext() const { return (option_flags3 & 0x10) != 0; }
};

// Throws Error(InvalidArgument) for a message shorter than its fixed part or whose offsets
// point outside it; the message never quotes the password.
[[nodiscard]] Login7 parse_login7(std::span<const std::uint8_t> payload);

// The LOGIN7 password transform and its inverse, byte by byte over the UTF-16LE text.
[[nodiscard]] Bytes obfuscate_password(std::string_view utf8);
[[nodiscard]] Secret deobfuscate_password(std::span<const std::uint8_t> bytes);

// Whether `password` is `login`'s: its PBKDF2-HMAC-SHA256 with the login's salt and iterations,
// compared in constant time.
[[nodiscard]] bool password_matches(const SqlLogin& login, const Secret& password);
// `name` with a 16-byte random salt and the PBKDF2-HMAC-SHA256 hash of `password` (20,000
// rounds, as serve() hashes its login), for a login kept in the file (CREATE LOGIN).
[[nodiscard]] SqlLogin hash_password(const std::string& name, const Secret& password);

// Whether `token` is the server's (ServerOptions::access_token): its SHA-256 equals the kept
// hash, compared in constant time, and `now` (Unix seconds) is before the kept expiry, if any.
[[nodiscard]] bool access_token_matches(const AccessTokenCheck& check, const Secret& token, std::int64_t now);

}  // namespace mssqlcdc::tds
