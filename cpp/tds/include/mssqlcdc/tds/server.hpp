// server.hpp: the TDS listener over one emulator file. It binds a TCP socket (port 0 picks a
// free one), accepts on its own thread and serves each connection on a thread of its own, so
// a slow client stalls only itself, and an idle one sleeps in recv(). Answers stream: each full
// packet is sent while rows are still being made, so a connection holds about one packet of a
// result however long it is, and an ATTENTION from the client stops the result between packets
// (acknowledged with DONE(ATTN)); while a request computes without sending, the engine polls
// for ATTENTION, a client gone and stop() (watch.hpp), so each ends it within a fraction of a
// second, and the rows it buffers are bounded (error 701). A connection that does not finish
// its login within `login_timeout` is dropped. At `max_connections` live connections a new one gets SQL
// Server's error 17809 at login and is closed. stop() (and the destructor) closes the listener,
// shuts every connection's socket and joins all threads. No thread touches Python.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "mssqlcdc/tds/faults.hpp"

namespace mssqlcdc::tds {

class TlsContext;
class StatementLog;

// What a Server listens on and serves.
// The SQL login a server accepts: its name, matched without case, and a salted
// PBKDF2-HMAC-SHA256 hash of its password's UTF-8 bytes; the clear password is never held.
struct SqlLogin {
  std::string name;
  std::string salt;  // raw bytes
  std::string hash;  // raw bytes: PBKDF2-HMAC-SHA256(password, salt, iterations), 32 bytes
  std::uint32_t iterations = 0;
};

// The Microsoft Entra access token a server accepts (a token login, LOGIN7's FEDAUTH feature):
// the SHA-256 of the token's UTF-8 bytes, never the token, and when it expires.
struct AccessTokenCheck {
  std::string hash;                        // raw bytes: SHA-256(token), 32 bytes
  std::optional<std::int64_t> expires_at;  // Unix seconds (the JWT's exp claim); nullopt: never
};

struct ServerOptions {
  std::filesystem::path file;  // the emulator file every connection reads
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::string database;  // the name clients see; empty: the file's stem
  std::size_t max_connections = 64;
  std::vector<Fault> faults;  // for tests only (faults.hpp); empty in production
  bool tls = false;           // offer TLS with a self-signed certificate made at start (tds/src/tls.hpp)
  // The one login accepted; others and a wrong password get error 18456. nullopt: any login
  // and password (for tests that drive sessions without one).
  std::optional<SqlLogin> login = std::nullopt;
  // The one access token accepted, over TLS, as the login above; nullopt: token logins refused.
  std::optional<AccessTokenCheck> access_token = std::nullopt;
  // How long a new connection may take from accept to the end of its login (each read is
  // bounded by it); a client silent for longer is dropped, so silent sockets cannot hold every
  // place of `max_connections`.
  std::chrono::milliseconds login_timeout{10'000};
  // The bytes one request may hold in rows it buffers (a sort, groups, a join's side); past
  // it the request fails with SQL Server's error 701 and the connection goes on.
  std::size_t statement_memory = std::size_t{256} << 20;
  // Where each login, batch, RPC (with its parameters) and error returned is written, one line
  // each, passwords masked: "-" for stderr, a file's path (appended to), or "" for nowhere.
  std::string log_statements = "";
};

// One listener and its connections. Thread-safe: its methods may be called from any thread
// while connections are served; each connection opens the file with its own Reader (and an
// Engine when it writes).
class Server {
 public:
  // Binds and starts accepting. Throws Error(Io) when the address cannot be bound,
  // Error(FileNotFound) when the file does not exist and Error(EmuFileFormat) or
  // Error(EmuFormatVersion) when it is no emulator file this build reads (named in the text).
  explicit Server(ServerOptions options);
  // stop(), then frees the listener.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The address it listens on (the bound port when options.port was 0) and the database name
  // clients see.
  [[nodiscard]] const std::string& host() const { return options_.host; }
  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] const std::string& database() const { return options_.database; }
  // Connections not yet closed, after reaping the finished ones.
  [[nodiscard]] std::size_t live_connections();
  // The TLS certificate clients are shown, as PEM; empty without TLS. Public data, no key.
  [[nodiscard]] std::string certificate_pem() const;

  // Closes the listener, shuts every connection's socket and joins all threads. Idempotent;
  // blocks until each connection's thread has returned.
  void stop();

 private:
  struct Connection;
  void accept_loop();
  void reap(bool all);

  ServerOptions options_;
  std::shared_ptr<FaultScript> faults_;
  std::shared_ptr<const TlsContext> tls_;
  std::shared_ptr<StatementLog> log_;  // null without options.log_statements
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint16_t> next_spid_{51};
  std::mutex mutex_;
  std::list<std::unique_ptr<Connection>> connections_;
  std::thread acceptor_;
};

}  // namespace mssqlcdc::tds
