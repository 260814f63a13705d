// session.hpp: one connection's protocol state, without sockets: PRELOGIN, then LOGIN7, then
// requests (SQL batches, RPCs, transaction manager requests, attention). handle() takes one
// whole client message and writes the server's answer into a ReplySink while it is produced, so
// a socket sink sends each full packet as rows come and a long result never sits in memory;
// the one-argument handle() collects the whole answer instead (the GoogleTest suite's form).
// Every request is answered: a statement the server cannot run gets SQL Server's ERROR token
// and the connection stays usable.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "login.hpp"
#include "mssqlcdc/tds/faults.hpp"
#include "packet.hpp"
#include "request.hpp"
#include "statement_log.hpp"
#include "statements.hpp"
#include "watch.hpp"

namespace mssqlcdc::tds {

struct Reply {
  Bytes payload;
  bool close = false;  // the login failed: send, then close the connection
};

// Where one answer goes while the session produces it: tokens are appended to out(); at each
// row boundary the session calls flush(). A sink frames the bytes as tabular-result packets of
// the session's packet size (the last one ends the message at end()).
class ReplySink {
 public:
  virtual ~ReplySink() = default;
  [[nodiscard]] Writer& out() { return out_; }
  // A socket sink sends the full packets it holds here. Returns false when the request must
  // stop: the client sent ATTENTION (the session then ends the answer with DONE(ATTN)) or left.
  virtual bool flush() { return true; }
  // Asked while a request computes without sending (a join, a sort): true when it must stop
  // now, because the client sent ATTENTION or left, or the server is stopping.
  virtual bool interrupted() { return false; }
  // A stalled answer (a fault script's): waits `d`; false when ATTENTION came first.
  virtual bool wait(std::chrono::milliseconds /*d*/) { return true; }
  // Ends the message: what is left goes out as its last packet.
  virtual void end() {}
  // A fault: sends what is held as a packet that does not end the message; the connection is
  // then closed, so the client sees the server vanish mid-result.
  virtual void cut() {}

 protected:
  Writer out_;
};

class Session {
 public:
  // `faults`: a test-only script (faults.hpp); nullptr in production. `tls`: the server can
  // encrypt, so PRELOGIN grants what the client asks (login.hpp). `sql_login`: the one login
  // accepted (ServerOptions::login); nullopt accepts any. `access_token`: the one Microsoft Entra
  // token accepted over TLS, as that login (ServerOptions::access_token); nullopt refuses tokens.
  Session(std::filesystem::path file, std::string database, std::uint16_t spid,
          std::shared_ptr<FaultScript> faults = nullptr, bool tls = false,
          std::optional<SqlLogin> sql_login = std::nullopt,
          std::optional<AccessTokenCheck> access_token = std::nullopt);

  // Writes the answer to `message` into `sink` and ends it; returns true when the connection
  // must close after it (a failed login, a fatal error, a cut).
  [[nodiscard]] bool handle(const Message& message, ReplySink& sink);
  [[nodiscard]] Reply handle(const Message& message);
  // Writes logins, batches, RPCs and the errors sent to `log` (serve --log-statements).
  void set_statement_log(std::shared_ptr<StatementLog> log) { log_ = std::move(log); }
  [[nodiscard]] std::size_t packet_size() const { return packet_size_; }
  [[nodiscard]] std::uint16_t spid() const { return spid_; }
  // What PRELOGIN negotiated: the transport starts TLS after sending its answer.
  [[nodiscard]] TlsScope tls_scope() const { return tls_scope_; }
  // Whether LOGIN7 was accepted: the connection is past PRELOGIN and login.
  [[nodiscard]] bool authenticated() const { return state_ == State::LoggedIn; }
  // The bytes one request may hold in buffered rows before it fails with error 701 (watch.hpp).
  void limit_memory(std::size_t bytes) { statement_memory_ = bytes; }

 private:
  enum class State { PreLogin, Login, LoggedIn };

  // How a statement text ended; anything but Done stops the rest of its request.
  enum class Outcome { Done, Ended, Failed, Cancelled, Cut, Fatal };  // Ended: its DONE closed the message

  bool login(const Message& message, ReplySink& sink);
  // The rest of a login whose credentials passed, as `user`: the database, then LOGINACK.
  bool logged_in(const Login7& req, const std::string& user, ReplySink& sink);
  [[nodiscard]] bool token_login_accepted(const FedAuth& fedauth) const;
  bool batch(const Message& message, ReplySink& sink);
  bool rpc(const Message& message, ReplySink& sink);
  void transaction(const Message& message, Writer& w);
  Outcome rpc_call(ReplySink& sink, const RpcCall& call, bool last);
  Outcome execute(ReplySink& sink, const std::string& sql, const Params& params, Token done, bool ends,
                  const std::string& procedure);

  // Logs an error sent to the client, when there is a statement log.
  void log_error(const ServerMessage& m) const {
    if (log_) log_->error(spid_, m);
  }
  std::filesystem::path file_;
  std::string database_name_;
  std::uint16_t spid_;
  bool tls_;
  TlsScope tls_scope_ = TlsScope::None;
  State state_ = State::PreLogin;
  std::size_t packet_size_ = kDefaultPacketSize;
  std::unique_ptr<Database> database_;
  std::map<std::int32_t, std::pair<std::string, std::string>> prepared_;  // handle: (params decl, stmt)
  std::int32_t next_handle_ = 1;
  std::shared_ptr<FaultScript> faults_;
  std::optional<SqlLogin> sql_login_;
  std::optional<AccessTokenCheck> access_token_;
  std::shared_ptr<StatementLog> log_;  // null: nothing is logged
  bool fedauth_required_ = false;      // this session's PRELOGIN answer said FEDAUTHREQUIRED
  std::size_t statement_memory_ = kDefaultStatementMemory;
};

}  // namespace mssqlcdc::tds
