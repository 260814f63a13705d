// statement_log.hpp: what clients send, written down (serve --log-statements), internal to
// src/tds. One line per event, each with a UTC time and the connection's spid: a login (user
// and database, never the password), a SQL batch's text, an RPC's procedure and parameters,
// and each error returned. Password literals are masked in batch text and parameters
// (decision 1421). Thread-safe: every connection of a server writes to the same log.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "mssqlcdc/tds/tokens.hpp"
#include "request.hpp"

namespace mssqlcdc::tds {

class StatementLog {
 public:
  // "-" writes to stderr; any other text names a file, appended to. Throws Error(Io) when the
  // file cannot be opened.
  explicit StatementLog(const std::string& target);

  // A login that passed: its user and database.
  void login(std::uint16_t spid, const std::string& user, const std::string& database);
  // A SQL batch's text, passwords masked.
  void batch(std::uint16_t spid, std::string_view sql);
  // An RPC: the procedure and each parameter as name=value, passwords masked.
  void rpc(std::uint16_t spid, const RpcCall& call);
  // An error sent to the client.
  void error(std::uint16_t spid, const ServerMessage& message);

 private:
  void line(std::uint16_t spid, const std::string& text);

  struct Close {
    void operator()(std::FILE* f) const {
      if (f != nullptr) std::fclose(f);
    }
  };
  std::mutex mutex_;
  std::unique_ptr<std::FILE, Close> file_;  // null: stderr
};

// `sql` with the text of each password literal replaced by ******: the string or 0x literal
// after a word ending in PASSWORD (CREATE/ALTER LOGIN ... PASSWORD = '...', OLD_PASSWORD,
// ENCRYPTION BY PASSWORD) or PASSWD and an '=', and every literal of a call of sp_addlogin or
// sp_password up to the next semicolon.
[[nodiscard]] std::string mask_passwords(std::string_view sql);

}  // namespace mssqlcdc::tds
