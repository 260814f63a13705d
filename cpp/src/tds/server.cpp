#include "mssqlcdc/tds/server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/packet.hpp"
#include "mssqlcdc/tds/session.hpp"
#include "mssqlcdc/tds/tls.hpp"

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

// Serves one connection until the client leaves, the login fails or the server stops. A
// message that cannot even be framed ends the connection; everything else is answered.
void serve(int fd, const ServerOptions& options, const TlsContext* tls, std::uint16_t spid) noexcept {
  try {
    Session session(options.file, options.database, spid, tls != nullptr);
    MessageAssembler assembler;
    Transport io(fd);
    std::array<std::uint8_t, kHeaderSize> header{};
    Bytes body;
    while (io.read_exact(header.data(), header.size())) {
      const PacketHeader h = parse_header(header);
      body.resize(h.length - kHeaderSize);
      if (!io.read_exact(body.data(), body.size())) return;
      const auto message = assembler.add(h, body);
      if (!message) continue;
      const Reply reply = session.handle(*message);
      // Login-only encryption: TLS carried LOGIN7; its answer and all after it are plain.
      if (message->type == PacketType::Login7 && session.tls_scope() == TlsScope::LoginOnly) io.stop_tls();
      if (!io.write_all(frame_message(PacketType::TabularResult, reply.payload, session.packet_size(), spid)) ||
          reply.close)
        return;
      if (message->type == PacketType::PreLogin && session.tls_scope() != TlsScope::None && !io.start_tls(*tls, spid))
        return;
    }
  } catch (const std::exception&) {
    // The connection ends; the server and its other connections go on.
  }
}

}  // namespace

struct Server::Connection {
  explicit Connection(int raw) : fd(raw) {}
  Fd fd;
  std::atomic<bool> done{false};
  std::thread thread;
};

Server::Server(ServerOptions options) : options_(std::move(options)) {
  if (!std::filesystem::exists(options_.file)) {
    throw Error(ErrorKind::FileNotFound, options_.file.string() + ": no emulator file to serve");
  }
  if (options_.database.empty()) options_.database = options_.file.stem().string();
  if (options_.tls) tls_ = TlsContext::self_signed();
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
    auto conn = std::make_unique<Connection>(raw);
    const int one = 1;
    ::setsockopt(raw, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    reap(false);
    std::lock_guard lock(mutex_);
    if (stopping_ || connections_.size() >= options_.max_connections) continue;  // closed by ~Fd
    Connection* c = conn.get();
    const std::uint16_t spid = next_spid_++;
    c->thread = std::thread([this, c, spid] {
      serve(c->fd.get(), options_, tls_.get(), spid);
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
  return connections_.size();
}

void Server::stop() {
  if (stopping_.exchange(true)) return;
  ::shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  reap(true);
}

}  // namespace mssqlcdc::tds
