// tls.hpp: TLS inside TDS 7.x (MS-TDS 2.2.6.5, 3.3.5). After a PRELOGIN exchange that
// negotiates encryption, the TLS handshake's records travel as the bodies of PRELOGIN (0x12)
// packets; once it completes, TLS records carry the TDS packets (every one with full
// encryption, only LOGIN7 with login-only encryption). Some clients (ODBC 18) send their last
// handshake flight as bare TLS records: a first byte of 0x14..0x17 is a TLS content type, never
// a TDS packet type, so both framings are read. OpenSSL works over memory buffers here; the
// socket stays ours.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "mssqlcdc/tds/wire.hpp"

namespace mssqlcdc::tds {

// The server's TLS identity: a self-signed RSA 2048 certificate for CN=localhost (SAN DNS
// localhost, IP 127.0.0.1), valid for one day from its creation, and its key. Both live in
// memory only; certificate_pem() is public data a client may choose to trust.
class TlsContext {
 public:
  // Throws Error(Io) when OpenSSL cannot create the key or the certificate.
  static std::shared_ptr<const TlsContext> self_signed();
  struct Impl;
  TlsContext(std::unique_ptr<Impl> impl, std::string pem);  // for self_signed(): Impl is OpenSSL's
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  [[nodiscard]] const std::string& certificate_pem() const { return certificate_pem_; }

 private:
  std::unique_ptr<Impl> impl_;
  std::string certificate_pem_;
  friend class Transport;
};

// The byte stream under the TDS packets of one connection: the socket itself, or TLS over it.
// Reads and writes return false when the peer has gone (or TLS failed): the connection ends.
class Transport {
 public:
  explicit Transport(int fd);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  [[nodiscard]] bool read_exact(std::uint8_t* out, std::size_t n);
  [[nodiscard]] bool write_all(std::span<const std::uint8_t> data);

  // Runs the server side of the handshake, wrapped in PRELOGIN packets carrying `spid`; from
  // then on reads and writes are TLS. False when the client left or the handshake failed.
  [[nodiscard]] bool start_tls(const TlsContext& context, std::uint16_t spid);
  // Login-only encryption: the bytes after LOGIN7 are plain again, both ways.
  void stop_tls();
  [[nodiscard]] bool encrypted() const { return tls_ != nullptr; }
  // Puts bytes read ahead back in front of the stream (a peeked packet header that was not an
  // ATTENTION); the next read_exact returns them first.
  void unread(std::span<const std::uint8_t> bytes);
  // Whether bytes are already here to read without waiting on the socket.
  [[nodiscard]] bool pending() const { return !pushed_.empty() || plain_at_ < plain_.size(); }

 private:
  struct Tls;
  bool recv_plain(std::uint8_t* out, std::size_t n);
  bool send_plain(std::span<const std::uint8_t> data);
  bool read_record_or_packet(bool& wrapped);
  bool flush_handshake(bool wrapped, std::uint16_t spid);
  bool flush_records();

  int fd_;
  std::unique_ptr<Tls> tls_;
  Bytes pushed_;  // bytes given back by unread()
  Bytes plain_;   // decrypted bytes not yet read
  std::size_t plain_at_ = 0;
};

}  // namespace mssqlcdc::tds
