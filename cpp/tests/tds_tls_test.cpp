// TLS inside TDS, byte for byte: an OpenSSL client on one end of a socket pair, the server's
// Transport on the other. The client frames its flights as a TDS 7.x driver does.
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "emu_test_util.hpp"
#include "tds/src/login.hpp"
#include "tds/src/packet.hpp"
#include "tds/src/session.hpp"
#include "tds/src/tls.hpp"

namespace mssqlcdc::tds {
namespace {

TEST(TdsTlsNegotiation, WithoutTlsEveryClientHearsNotSupported) {
  for (const auto client : {Encryption::Off, Encryption::On, Encryption::NotSupported, Encryption::Required}) {
    const EncryptionAnswer a = negotiate_encryption(client, false);
    EXPECT_EQ(a.answer, Encryption::NotSupported);
    EXPECT_EQ(a.scope, TlsScope::None);
  }
}

TEST(TdsTlsNegotiation, WithTlsTheClientsChoiceFollowsTheSpecificationsTable) {
  struct Row {
    std::optional<Encryption> client;  // no ENCRYPTION option at all when empty
    Encryption answer;
    TlsScope scope;
  };
  const Row table[] = {{Encryption::Off, Encryption::Off, TlsScope::LoginOnly},
                       {Encryption::On, Encryption::On, TlsScope::All},
                       {Encryption::Required, Encryption::On, TlsScope::All},
                       {Encryption::NotSupported, Encryption::NotSupported, TlsScope::None},
                       {std::nullopt, Encryption::NotSupported, TlsScope::None}};
  for (const Row& row : table) {
    const EncryptionAnswer a = negotiate_encryption(row.client, true);
    const int client = row.client ? static_cast<int>(*row.client) : -1;
    EXPECT_EQ(a.answer, row.answer) << "client " << client;
    EXPECT_EQ(a.scope, row.scope) << "client " << client;
  }
}

TEST(TdsTlsNegotiation, ASessionWithTlsAnswersPreloginWithTheNegotiatedLevel) {
  emu::test::TempFile file;
  (void)emu::test::orders_file(file.path());
  Session with_tls(file.path(), "shop", 51, nullptr, true);
  const Reply r = with_tls.handle(Message{PacketType::PreLogin, prelogin_response(Encryption::On), false});
  EXPECT_EQ(parse_prelogin(r.payload).encryption, Encryption::On);
  EXPECT_EQ(with_tls.tls_scope(), TlsScope::All);
  Session without(file.path(), "shop", 52);
  const Reply n = without.handle(Message{PacketType::PreLogin, prelogin_response(Encryption::On), false});
  EXPECT_EQ(parse_prelogin(n.payload).encryption, Encryption::NotSupported);
  EXPECT_EQ(without.tls_scope(), TlsScope::None);
}

TEST(TdsTlsCertificate, IsSelfSignedForLocalhostAnd127001ValidOneDay) {
  const auto context = TlsContext::self_signed();
  const std::string& pem = context->certificate_pem();
  ASSERT_EQ(pem.rfind("-----BEGIN CERTIFICATE-----", 0), 0U);
  EXPECT_EQ(pem.find("PRIVATE KEY"), std::string::npos);
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), &X509_free);
  ASSERT_NE(cert, nullptr);
  std::array<char, 64> cn{};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert.get()), NID_commonName, cn.data(), cn.size());
  EXPECT_STREQ(cn.data(), "localhost");
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_host(cert.get(), "localhost", 0, 0, nullptr), 1);
  int days = -1;
  int seconds = -1;
  ASSERT_EQ(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(cert.get()), X509_get0_notAfter(cert.get())), 1);
  EXPECT_EQ(days, 1);
  EXPECT_EQ(seconds, 0);
  EXPECT_EQ(X509_check_issued(cert.get(), cert.get()), X509_V_OK);  // self-signed
}

// A TLS client as a TDS 7.x driver runs it: its flights wrapped in PRELOGIN packets, or (after
// its first flight, with `raw_tail`) bare, as ODBC 18 sends its last one.
class Client {
 public:
  Client(int fd, bool raw_tail) : fd_(fd), raw_tail_(raw_tail) {
    ctx_.reset(SSL_CTX_new(TLS_client_method()));
    ssl_.reset(SSL_new(ctx_.get()));
    in_ = BIO_new(BIO_s_mem());
    out_ = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl_.get(), in_, out_);
    SSL_set_connect_state(ssl_.get());
  }

  // Runs the handshake; records how each server flight was framed.
  bool handshake() {
    for (int flights = 0;; ++flights) {
      const int rc = SSL_do_handshake(ssl_.get());
      send_pending(raw_tail_ && flights > 0);
      if (rc == 1) return true;
      if (SSL_get_error(ssl_.get(), rc) != SSL_ERROR_WANT_READ) return false;
      if (!receive()) return false;
    }
  }

  void write(const std::string& text) {
    ASSERT_EQ(SSL_write(ssl_.get(), text.data(), static_cast<int>(text.size())), static_cast<int>(text.size()));
    send_pending(true);
  }

  // Reads records until `n` bytes of plaintext arrived; every record must be bare TLS.
  std::string read(std::size_t n) {
    std::string got;
    std::array<char, 4096> buf{};
    while (got.size() < n) {
      const int k = SSL_read(ssl_.get(), buf.data(), static_cast<int>(buf.size()));
      if (k > 0) {
        got.append(buf.data(), static_cast<std::size_t>(k));
        continue;
      }
      EXPECT_TRUE(receive());
      EXPECT_FALSE(last_wrapped_) << "after the handshake, the server sent a TDS packet instead of a TLS record";
    }
    return got;
  }

  std::vector<std::uint8_t> server_framings;  // first byte of each server unit read: 0x12 or a TLS type

 private:
  void send_pending(bool raw) {
    Bytes data(BIO_ctrl_pending(out_));
    if (data.empty()) return;
    ASSERT_EQ(BIO_read(out_, data.data(), static_cast<int>(data.size())), static_cast<int>(data.size()));
    const Bytes wire = raw ? data : frame_message(PacketType::PreLogin, data, kDefaultPacketSize, 0);
    ASSERT_EQ(::send(fd_, wire.data(), wire.size(), MSG_NOSIGNAL), static_cast<ssize_t>(wire.size()));
  }

  bool recv_exact(std::uint8_t* p, std::size_t n) {
    while (n > 0) {
      const ssize_t k = ::recv(fd_, p, n, 0);
      if (k <= 0) return false;
      p += k;
      n -= static_cast<std::size_t>(k);
    }
    return true;
  }

  // One TDS packet (its body is TLS bytes) or one bare TLS record.
  bool receive() {
    std::array<std::uint8_t, 8> head{};
    if (!recv_exact(head.data(), 1)) return false;
    server_framings.push_back(head[0]);
    last_wrapped_ = head[0] == static_cast<std::uint8_t>(PacketType::PreLogin);
    Bytes data;
    if (last_wrapped_) {
      if (!recv_exact(head.data() + 1, 7)) return false;
      data.resize(((static_cast<std::size_t>(head[2]) << 8) | head[3]) - 8);
    } else {
      if (!recv_exact(head.data() + 1, 4)) return false;
      data.assign(head.begin(), head.begin() + 5);
      data.resize(5 + ((static_cast<std::size_t>(head[3]) << 8) | head[4]));
    }
    const std::size_t skip = last_wrapped_ ? 0 : 5;
    if (!recv_exact(data.data() + skip, data.size() - skip)) return false;
    return BIO_write(in_, data.data(), static_cast<int>(data.size())) == static_cast<int>(data.size());
  }

  int fd_;
  bool raw_tail_;
  bool last_wrapped_ = false;
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx_{nullptr, &SSL_CTX_free};
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl_{nullptr, &SSL_free};
  BIO* in_ = nullptr;
  BIO* out_ = nullptr;
};

class TdsTlsTransport : public ::testing::TestWithParam<bool> {
 protected:
  TdsTlsTransport() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_.data()), 0); }
  ~TdsTlsTransport() override {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  std::array<int, 2> fds_{-1, -1};
  std::shared_ptr<const TlsContext> context_ = TlsContext::self_signed();
};

TEST_P(TdsTlsTransport, TheHandshakeTravelsInPreloginPacketsThenTlsRecordsCarryTheTraffic) {
  const bool raw_tail = GetParam();
  Transport server(fds_[1]);
  bool started = false;
  std::string heard;
  std::thread t([&] {
    started = server.start_tls(*context_, 51);
    std::array<std::uint8_t, 5> got{};
    if (started && server.read_exact(got.data(), got.size())) heard.assign(got.begin(), got.end());
    const std::string answer = "world";
    if (started) (void)server.write_all(std::span(reinterpret_cast<const std::uint8_t*>(answer.data()), 5));
  });
  Client client(fds_[0], raw_tail);
  ASSERT_TRUE(client.handshake());
  client.write("hello");
  EXPECT_EQ(client.read(5), "world");
  t.join();
  EXPECT_TRUE(started);
  EXPECT_EQ(heard, "hello");
  ASSERT_FALSE(client.server_framings.empty());
  // The server's first flight answers a wrapped ClientHello, so it is wrapped too.
  EXPECT_EQ(client.server_framings.front(), static_cast<std::uint8_t>(PacketType::PreLogin));
  EXPECT_EQ(client.server_framings.back(), 0x17);  // application data
}

INSTANTIATE_TEST_SUITE_P(FinalFlight, TdsTlsTransport, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Bare" : "Wrapped"; });

TEST(TdsTlsTransportStop, AfterLoginOnlyTlsTheBytesArePlainAgain) {
  std::array<int, 2> fds{-1, -1};
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds.data()), 0);
  const auto context = TlsContext::self_signed();
  Transport server(fds[1]);
  std::string plain;
  std::thread t([&] {
    if (!server.start_tls(*context, 51)) return;
    std::array<std::uint8_t, 5> got{};
    if (!server.read_exact(got.data(), got.size())) return;
    server.stop_tls();
    EXPECT_FALSE(server.encrypted());
    if (server.read_exact(got.data(), got.size())) plain.assign(got.begin(), got.end());
  });
  Client client(fds[0], false);
  ASSERT_TRUE(client.handshake());
  client.write("login");
  ASSERT_EQ(::send(fds[0], "plain", 5, MSG_NOSIGNAL), 5);
  t.join();
  EXPECT_EQ(plain, "plain");
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(TdsTlsTransportStop, AClientThatSendsNoTlsEndsTheHandshakeWithoutAHang) {
  std::array<int, 2> fds{-1, -1};
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds.data()), 0);
  const auto context = TlsContext::self_signed();
  Transport server(fds[1]);
  // A PRELOGIN packet whose body is no TLS: OpenSSL refuses it, the handshake fails.
  const Bytes junk = frame_message(PacketType::PreLogin, Bytes(32, 0x41), kDefaultPacketSize, 0);
  ASSERT_EQ(::send(fds[0], junk.data(), junk.size(), MSG_NOSIGNAL), static_cast<ssize_t>(junk.size()));
  EXPECT_FALSE(server.start_tls(*context, 51));
  EXPECT_FALSE(server.encrypted());
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace mssqlcdc::tds
