#include "tls.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>

#include "mssqlcdc/error.hpp"
#include "packet.hpp"

namespace mssqlcdc::tds {
namespace {

// Owns an OpenSSL object from birth; F is its free function.
template <auto F>
struct Free {
  void operator()(auto* p) const { F(p); }
};
template <typename T, auto F>
using Owned = std::unique_ptr<T, Free<F>>;

constexpr std::size_t kRecordHeader = 5;
constexpr std::size_t kMaxRecordBody = 16384 + 2048;  // TLSCiphertext's bound (RFC 5246 6.2.3)
constexpr std::size_t kChunk = 16384;                 // one TLS record's plaintext at most

[[noreturn]] void fail(const std::string& what) {
  const unsigned long code = ERR_get_error();
  std::array<char, 256> why{};
  ERR_error_string_n(code, why.data(), why.size());
  throw Error(ErrorKind::Io, "TLS: " + what + ": " + why.data());
}

void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

// A TLS record's content type (change_cipher_spec, alert, handshake, application_data); no TDS
// packet type lies in this range, so the first byte tells the two framings apart.
bool is_tls_record(std::uint8_t first) { return first >= 0x14 && first <= 0x17; }

std::string pem_of(X509* cert) {
  Owned<BIO, BIO_free> bio(BIO_new(BIO_s_mem()));
  check(bio != nullptr && PEM_write_bio_X509(bio.get(), cert) == 1, "writing the certificate");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

}  // namespace

struct TlsContext::Impl {
  Owned<SSL_CTX, SSL_CTX_free> ctx;
};

TlsContext::TlsContext(std::unique_ptr<Impl> impl, std::string pem)
    : impl_(std::move(impl)), certificate_pem_(std::move(pem)) {}

TlsContext::~TlsContext() = default;

std::shared_ptr<const TlsContext> TlsContext::self_signed() {
  ERR_clear_error();
  Owned<EVP_PKEY, EVP_PKEY_free> key(EVP_RSA_gen(2048));
  check(key != nullptr, "generating an RSA 2048 key");
  Owned<X509, X509_free> cert(X509_new());
  check(cert != nullptr && X509_set_version(cert.get(), 2) == 1, "creating the certificate");
  // A random serial, so a client that caches certificates never confuses two runs' certificates.
  Owned<BIGNUM, BN_free> serial(BN_new());
  check(serial != nullptr && BN_rand(serial.get(), 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
            BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) != nullptr,
        "choosing a serial number");
  constexpr long kOneDay = 24L * 60 * 60;
  check(X509_gmtime_adj(X509_getm_notBefore(cert.get()), 0) != nullptr &&
            X509_gmtime_adj(X509_getm_notAfter(cert.get()), kOneDay) != nullptr,
        "setting the validity");
  X509_NAME* name = X509_get_subject_name(cert.get());
  check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"), -1,
                                   -1, 0) == 1 &&
            X509_set_issuer_name(cert.get(), name) == 1 && X509_set_pubkey(cert.get(), key.get()) == 1,
        "naming the certificate");
  X509V3_CTX v3{};
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, cert.get(), cert.get(), nullptr, nullptr, 0);
  Owned<X509_EXTENSION, X509_EXTENSION_free> san(
      X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1"));
  check(san != nullptr && X509_add_ext(cert.get(), san.get(), -1) == 1, "adding the subject alternative name");
  check(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0, "signing the certificate");

  auto impl = std::make_unique<Impl>();
  impl->ctx.reset(SSL_CTX_new(TLS_server_method()));
  SSL_CTX* ctx = impl->ctx.get();
  check(ctx != nullptr, "creating the TLS context");
  // TDS 7.x: SQL Server offers TLS 1.3 only with TDS 8.0 (strict encryption), which the front
  // end does not serve, so 1.2 is both the floor and the ceiling.
  check(SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 &&
            SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION) == 1 && SSL_CTX_use_certificate(ctx, cert.get()) == 1 &&
            SSL_CTX_use_PrivateKey(ctx, key.get()) == 1 && SSL_CTX_check_private_key(ctx) == 1,
        "loading the certificate and key");
  // TLS 1.3 session tickets would follow the handshake as records the client reads in its
  // PRELOGIN framing or in none, depending on the driver; no tickets, no ambiguity.
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  return std::make_shared<const TlsContext>(std::move(impl), pem_of(cert.get()));
}

struct Transport::Tls {
  Owned<SSL, SSL_free> ssl;
  BIO* in = nullptr;   // ciphertext from the client; owned by ssl
  BIO* out = nullptr;  // ciphertext for the client; owned by ssl
};

Transport::Transport(int fd) : fd_(fd) {}
Transport::~Transport() = default;

bool Transport::recv_plain(std::uint8_t* out, std::size_t n) {
  while (n > 0) {
    const ssize_t got = ::recv(fd_, out, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

bool Transport::send_plain(std::span<const std::uint8_t> data) {
  std::size_t at = 0;
  while (at < data.size()) {
    const ssize_t sent = ::send(fd_, data.data() + at, data.size() - at, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    at += static_cast<std::size_t>(sent);
  }
  return true;
}

// Reads exactly one TLS record or one PRELOGIN packet (never a byte more, so plain bytes after
// login-only TLS stay on the socket) and hands its TLS bytes to OpenSSL.
bool Transport::read_record_or_packet(bool& wrapped) {
  std::array<std::uint8_t, kHeaderSize> head{};
  if (!recv_plain(head.data(), 1)) return false;
  wrapped = !is_tls_record(head[0]);
  Bytes data;
  if (!wrapped) {
    if (!recv_plain(head.data() + 1, kRecordHeader - 1)) return false;
    const std::size_t body = (static_cast<std::size_t>(head[3]) << 8) | head[4];
    if (body > kMaxRecordBody) return false;
    data.assign(head.begin(), head.begin() + kRecordHeader);
    data.resize(kRecordHeader + body);
    if (!recv_plain(data.data() + kRecordHeader, body)) return false;
  } else {
    if (!recv_plain(head.data() + 1, kHeaderSize - 1)) return false;
    const PacketHeader h = parse_header(head);
    if (h.type != PacketType::PreLogin) return false;  // TLS was negotiated; nothing else may come
    data.resize(h.length - kHeaderSize);
    if (!recv_plain(data.data(), data.size())) return false;
  }
  return data.empty() ||
         BIO_write(tls_->in, data.data(), static_cast<int>(data.size())) == static_cast<int>(data.size());
}

bool Transport::flush_records() {
  std::array<std::uint8_t, kChunk> buf{};
  while (BIO_ctrl_pending(tls_->out) > 0) {
    const int n = BIO_read(tls_->out, buf.data(), static_cast<int>(buf.size()));
    if (n <= 0) return false;
    if (!send_plain(std::span(buf.data(), static_cast<std::size_t>(n)))) return false;
  }
  return true;
}

// The server's handshake flight, in the framing the client used for its own last one.
bool Transport::flush_handshake(bool wrapped, std::uint16_t spid) {
  if (!wrapped) return flush_records();
  Bytes flight(BIO_ctrl_pending(tls_->out));
  if (flight.empty()) return true;
  if (BIO_read(tls_->out, flight.data(), static_cast<int>(flight.size())) != static_cast<int>(flight.size())) {
    return false;
  }
  return send_plain(frame_message(PacketType::PreLogin, flight, kDefaultPacketSize, spid));
}

bool Transport::start_tls(const TlsContext& context, std::uint16_t spid) {
  auto tls = std::make_unique<Tls>();
  ERR_clear_error();
  tls->ssl.reset(SSL_new(context.impl_->ctx.get()));
  if (tls->ssl == nullptr) return false;
  tls->in = BIO_new(BIO_s_mem());
  tls->out = BIO_new(BIO_s_mem());
  if (tls->in == nullptr || tls->out == nullptr) {
    BIO_free(tls->in);
    BIO_free(tls->out);
    return false;
  }
  SSL_set_bio(tls->ssl.get(), tls->in, tls->out);  // the SSL owns both from here
  SSL_set_accept_state(tls->ssl.get());
  tls_ = std::move(tls);
  bool wrapped = true;
  for (;;) {
    ERR_clear_error();
    const int rc = SSL_do_handshake(tls_->ssl.get());
    // Sent even when the handshake failed: the flight then holds the alert telling the client why.
    if (!flush_handshake(wrapped, spid)) break;
    if (rc == 1) return true;
    if (SSL_get_error(tls_->ssl.get(), rc) != SSL_ERROR_WANT_READ) break;
    if (!read_record_or_packet(wrapped)) break;
  }
  tls_.reset();
  return false;
}

void Transport::stop_tls() {
  tls_.reset();
  plain_.clear();
  plain_at_ = 0;
}

void Transport::unread(std::span<const std::uint8_t> bytes) {
  pushed_.insert(pushed_.begin(), bytes.begin(), bytes.end());
}

bool Transport::read_exact(std::uint8_t* out, std::size_t n) {
  if (!pushed_.empty()) {
    const std::size_t k = std::min(n, pushed_.size());
    std::copy_n(pushed_.begin(), k, out);
    pushed_.erase(pushed_.begin(), pushed_.begin() + static_cast<std::ptrdiff_t>(k));
    out += k;
    n -= k;
    if (n == 0) return true;
  }
  if (!tls_) return recv_plain(out, n);
  std::array<std::uint8_t, kChunk> buf{};
  while (plain_.size() - plain_at_ < n) {
    plain_.erase(plain_.begin(), plain_.begin() + static_cast<std::ptrdiff_t>(plain_at_));
    plain_at_ = 0;
    ERR_clear_error();
    const int got = SSL_read(tls_->ssl.get(), buf.data(), static_cast<int>(buf.size()));
    if (got > 0) {
      plain_.insert(plain_.end(), buf.begin(), buf.begin() + got);
      continue;
    }
    bool wrapped = false;
    if (SSL_get_error(tls_->ssl.get(), got) != SSL_ERROR_WANT_READ || !flush_records() ||
        !read_record_or_packet(wrapped)) {
      return false;  // close_notify, a bad record, or the client left
    }
  }
  std::copy_n(plain_.begin() + static_cast<std::ptrdiff_t>(plain_at_), n, out);
  plain_at_ += n;
  return true;
}

bool Transport::write_all(std::span<const std::uint8_t> data) {
  if (!tls_) return send_plain(data);
  while (!data.empty()) {
    const std::size_t n = std::min(data.size(), kChunk);
    ERR_clear_error();
    if (SSL_write(tls_->ssl.get(), data.data(), static_cast<int>(n)) != static_cast<int>(n)) return false;
    if (!flush_records()) return false;
    data = data.subspan(n);
  }
  return true;
}

}  // namespace mssqlcdc::tds
