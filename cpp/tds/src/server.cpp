#include "mssqlcdc/tds/server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <span>

#include "login.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/tokens.hpp"
#include "packet.hpp"
#include "session.hpp"
#include "tls.hpp"

namespace mssqlcdc::tds {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

// A ReplySink on a socket: full packets leave as soon as they are full (the last byte of an
// answer is always kept for the end-of-message packet), so memory stays at about one packet
// however long the result. A client that does not read blocks send() on its own thread only.
class SocketSink final : public ReplySink {
 public:
  SocketSink(Transport& io, int fd, std::size_t packet_size, std::uint16_t spid, const std::atomic<bool>& stopping)
      : io_(io), fd_(fd), body_(packet_size - kHeaderSize), spid_(spid), stopping_(stopping) {}

  [[nodiscard]] bool lost() const { return lost_; }

  bool interrupted() override {
    if (!lost_ && !cancelled_ && !stopping_ && attention(std::chrono::milliseconds(0))) cancelled_ = true;
    return lost_ || cancelled_ || stopping_;
  }

  bool flush() override {
    if (lost_ || cancelled_) return false;
    if (out_.size() <= body_) return true;
    send_packets(false);
    // Checked once per packet sent, not per row: one poll() per packet costs nothing.
    if (!lost_ && attention(std::chrono::milliseconds(0))) cancelled_ = true;
    return !lost_ && !cancelled_;
  }

  bool wait(std::chrono::milliseconds d) override {
    const auto until = std::chrono::steady_clock::now() + d;
    for (auto now = std::chrono::steady_clock::now(); now < until && !stopping_;
         now = std::chrono::steady_clock::now()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
      if (attention(std::min(left, std::chrono::milliseconds(200)))) {
        cancelled_ = true;
        return false;
      }
      if (lost_) return false;
    }
    return !stopping_;
  }

  void end() override {
    if (!lost_ && !cut_) send_packets(true);
  }

  void cut() override {
    if (!lost_ && out_.size() > 0) send_packets(false, true);
    cut_ = true;
  }

 private:
  // Sends whole packets; with `last`, everything, the final packet marked end-of-message;
  // with `all`, everything without that mark (a cut).
  void send_packets(bool last, bool all = false) {
    const Bytes held = out_.take();
    std::span<const std::uint8_t> rest(held);
    Bytes packet;
    do {
      if (!last && !all && rest.size() <= body_) break;
      const std::size_t n = std::min(body_, rest.size());
      const bool eom = last && n == rest.size();
      Writer h;
      h.u8(static_cast<std::uint8_t>(PacketType::TabularResult));
      h.u8(eom ? kStatusEndOfMessage : 0);
      h.u16be(static_cast<std::uint16_t>(n + kHeaderSize));
      h.u16be(spid_);
      h.u8(packet_id_++);
      h.u8(0);
      packet = h.take();
      packet.insert(packet.end(), rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(n));
      if (!io_.write_all(packet)) {
        lost_ = true;
        return;
      }
      rest = rest.subspan(n);
    } while (!rest.empty());
    out_.bytes(rest);
    if (last) packet_id_ = 1;
  }

  // Whether the client sent ATTENTION within `timeout`; takes it off the stream. Another request
  // sent meanwhile goes back to the transport, queued for after this answer (MS-TDS 3.3.5.9).
  // The header is read through the transport, so a TLS connection's attention is seen too.
  bool attention(std::chrono::milliseconds timeout) {
    if (!io_.pending()) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
    }
    std::array<std::uint8_t, kHeaderSize> h{};
    if (!io_.read_exact(h.data(), h.size())) {
      lost_ = true;  // the client left
      return false;
    }
    if (h[0] != static_cast<std::uint8_t>(PacketType::Attention)) {
      io_.unread(h);
      if (timeout.count() > 0) ::poll(nullptr, 0, static_cast<int>(timeout.count()));  // no busy loop
      return false;
    }
    const PacketHeader header = parse_header(h);
    Bytes skip(header.length - kHeaderSize);
    lost_ = !io_.read_exact(skip.data(), skip.size());
    return !lost_;
  }

  Transport& io_;
  int fd_;
  std::size_t body_;
  std::uint16_t spid_;
  const std::atomic<bool>& stopping_;
  std::uint8_t packet_id_ = 1;
  bool lost_ = false;
  bool cancelled_ = false;
  bool cut_ = false;
};

// Bounds each recv() on `fd` to `limit` (0: no bound).
void receive_timeout(int fd, std::chrono::milliseconds limit) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(limit).count();
  const timeval tv{static_cast<time_t>(us / 1'000'000), static_cast<suseconds_t>(us % 1'000'000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

// The client's next whole message; nullopt when the client left (or a read timed out).
std::optional<Message> next_message(Transport& io, MessageAssembler& assembler) {
  std::array<std::uint8_t, kHeaderSize> header{};
  Bytes body;
  while (io.read_exact(header.data(), header.size())) {
    const PacketHeader h = parse_header(header);
    body.resize(h.length - kHeaderSize);
    if (!io.read_exact(body.data(), body.size())) return std::nullopt;
    if (auto message = assembler.add(h, body)) return message;
  }
  return std::nullopt;
}

// Serves one connection until the client leaves, the login fails or the server stops. A
// message that cannot even be framed ends the connection; everything else is answered.
void serve(int fd, const ServerOptions& options, std::shared_ptr<FaultScript> faults, const TlsContext* tls,
           std::shared_ptr<StatementLog> log, std::uint16_t spid, const std::atomic<bool>& stopping) noexcept {
  try {
    Session session(options.file, options.database, spid, std::move(faults), tls != nullptr, options.login,
                    options.access_token);
    session.limit_memory(options.statement_memory);
    // Until LOGIN7 is answered every read is bounded: a client that connects and never speaks
    // (or stops half-way through PRELOGIN, TLS or LOGIN7) is dropped, and frees its place.
    receive_timeout(fd, options.login_timeout);
    session.set_statement_log(std::move(log));
    MessageAssembler assembler;
    Transport io(fd);
    bool bounded = true;
    while (const auto message = next_message(io, assembler)) {
      // Login-only encryption: TLS carried LOGIN7; its answer and all after it are plain.
      if (message->type == PacketType::Login7 && session.tls_scope() == TlsScope::LoginOnly) io.stop_tls();
      SocketSink sink(io, fd, session.packet_size(), spid, stopping);
      const bool close = session.handle(*message, sink);
      if (close || sink.lost()) return;
      if (bounded && session.authenticated()) {
        receive_timeout(fd, std::chrono::milliseconds(0));  // a logged-in connection may idle
        bounded = false;
      }
      if (message->type == PacketType::PreLogin && session.tls_scope() != TlsScope::None && !io.start_tls(*tls, spid))
        return;
    }
  } catch (...) {
    // The connection ends; the server and its other connections go on.
  }
}

// One connection past the bound: answered as SQL Server answers it, with error 17809 at login,
// then closed. A client that sends nothing is dropped after a few seconds.
void refuse(int fd, std::size_t max_connections, std::uint16_t spid, std::chrono::milliseconds login_timeout) noexcept {
  try {
    receive_timeout(fd, std::min(login_timeout, std::chrono::milliseconds(5000)));
    MessageAssembler assembler;
    Transport io(fd);
    while (const auto message = next_message(io, assembler)) {
      Writer w;
      if (message->type == PacketType::PreLogin) {
        w.bytes(prelogin_response(Encryption::NotSupported));
        if (!io.write_all(frame_message(PacketType::TabularResult, w.data(), kDefaultPacketSize, spid))) return;
        continue;
      }
      ServerMessage m{17809,
                      3,
                      20,
                      "Could not connect because the maximum number of '" + std::to_string(max_connections) +
                          "' user connections has already been reached. The system administrator can use "
                          "sp_configure to increase the maximum value. The connection has been closed.",
                      "mssql-cdc-emulator",
                      "",
                      1};
      write_message(w, Token::Error, m);
      write_done(w, Token::Done, kDoneError, 0, 0);
      (void)io.write_all(frame_message(PacketType::TabularResult, w.data(), kDefaultPacketSize, spid));
      return;
    }
  } catch (const std::exception&) {
    // Nothing more to tell a client that sent garbage.
  }
}

}  // namespace

struct Server::Connection {
  explicit Connection(int raw, bool counted) : fd(raw), counted(counted) {}
  Fd fd;
  bool counted;  // false: one past the bound, being refused
  std::atomic<bool> done{false};
  std::thread thread;
};

Server::Server(ServerOptions options)
    : options_(std::move(options)),
      faults_(options_.faults.empty() ? nullptr : std::make_shared<FaultScript>(options_.faults)) {
  if (!std::filesystem::exists(options_.file)) {
    throw Error(ErrorKind::FileNotFound, options_.file.string() + ": no emulator file to serve");
  }
  // Refused now, with the file's name, rather than at each client's login.
  (void)emu::Reader(options_.file);
  if (options_.database.empty()) options_.database = options_.file.stem().string();
  if (options_.tls) tls_ = TlsContext::self_signed();
  if (!options_.log_statements.empty()) log_ = std::make_shared<StatementLog>(options_.log_statements);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(ErrorKind::Io, std::string("socket: ") + std::strerror(errno));
  listen_fd_ = fd;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(options_.port);
  if (::inet_pton(AF_INET, options_.host.c_str(), &addr.sin_addr) != 1) {
    ::close(fd);
    throw Error(ErrorKind::InvalidArgument, options_.host + " is not an IPv4 address; give one such as 127.0.0.1");
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 128) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw Error(ErrorKind::Io, "cannot listen on " + options_.host + ":" + std::to_string(options_.port) + ": " + why);
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

Server::~Server() { stop(); }

void Server::accept_loop() {
  while (!stopping_) {
    const int raw = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (raw < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // the listener was shut down by stop()
    }
    const int one = 1;
    ::setsockopt(raw, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    reap(false);
    std::lock_guard lock(mutex_);
    const auto live = static_cast<std::size_t>(
        std::count_if(connections_.begin(), connections_.end(), [](const auto& c) { return c->counted; }));
    const bool counted = live < options_.max_connections;
    // Refusals are bounded too, so a flood of connections cannot make threads without end.
    if (stopping_ || (!counted && connections_.size() - live >= options_.max_connections)) {
      ::close(raw);
      continue;
    }
    auto conn = std::make_unique<Connection>(raw, counted);
    Connection* c = conn.get();
    const std::uint16_t spid = next_spid_++;
    c->thread = std::thread([this, c, spid] {
      if (c->counted) {
        serve(c->fd.get(), options_, faults_, tls_.get(), log_, spid, stopping_);
      } else {
        refuse(c->fd.get(), options_.max_connections, spid, options_.login_timeout);
      }
      // The client sees the end now; the descriptor itself is closed when the thread is reaped.
      ::shutdown(c->fd.get(), SHUT_RDWR);
      c->done = true;
    });
    connections_.push_back(std::move(conn));
  }
}

void Server::reap(bool all) {
  std::list<std::unique_ptr<Connection>> finished;
  {
    std::lock_guard lock(mutex_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (all || (*it)->done) {
        if (all) ::shutdown((*it)->fd.get(), SHUT_RDWR);
        finished.push_back(std::move(*it));
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& c : finished) c->thread.join();  // outside the lock: a finishing thread never takes it
}

std::string Server::certificate_pem() const { return tls_ ? tls_->certificate_pem() : std::string(); }

std::size_t Server::live_connections() {
  reap(false);
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(
      std::count_if(connections_.begin(), connections_.end(), [](const auto& c) { return c->counted; }));
}

void Server::stop() {
  if (stopping_.exchange(true)) return;
  ::shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  reap(true);
}

}  // namespace mssqlcdc::tds
