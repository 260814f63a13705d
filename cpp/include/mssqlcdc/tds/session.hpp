// session.hpp: one connection's protocol state, without sockets: PRELOGIN, then LOGIN7, then
// requests (SQL batches, RPCs, transaction manager requests, attention). handle() takes one
// whole client message and returns the server's whole answer (a tabular-result payload, to be
// framed in packets of packet_size()). Every request is answered: a statement the server cannot
// run gets SQL Server's ERROR token and the connection stays usable.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "mssqlcdc/tds/login.hpp"
#include "mssqlcdc/tds/packet.hpp"
#include "mssqlcdc/tds/request.hpp"
#include "mssqlcdc/tds/statements.hpp"

namespace mssqlcdc::tds {

struct Reply {
  Bytes payload;
  bool close = false;  // the login failed: send, then close the connection
};

class Session {
 public:
  // `tls`: the server can encrypt, so PRELOGIN grants what the client asks (login.hpp).
  Session(std::filesystem::path file, std::string database, std::uint16_t spid, bool tls = false);

  [[nodiscard]] Reply handle(const Message& message);
  [[nodiscard]] std::size_t packet_size() const { return packet_size_; }
  [[nodiscard]] std::uint16_t spid() const { return spid_; }
  // What PRELOGIN negotiated: the transport starts TLS after sending its answer.
  [[nodiscard]] TlsScope tls_scope() const { return tls_scope_; }

 private:
  enum class State { PreLogin, Login, LoggedIn };

  Reply login(const Message& message);
  Bytes batch(const Message& message);
  Bytes rpc(const Message& message);
  Bytes transaction(const Message& message);
  void rpc_call(Writer& w, const RpcCall& call, bool last);
  void run_in_proc(Writer& w, const std::string& sql, const Params& params);

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
  std::uint64_t transaction_ = 0;  // the open transaction's descriptor; 0: none
};

}  // namespace mssqlcdc::tds
