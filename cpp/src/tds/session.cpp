#include "mssqlcdc/tds/session.hpp"

#include <algorithm>
#include <utility>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/login.hpp"
#include "mssqlcdc/tds/tokens.hpp"
#include "mssqlcdc/tds/tsql.hpp"

namespace mssqlcdc::tds {
namespace {

constexpr std::uint32_t kTds74 = 0x74000004;
constexpr std::array<std::uint8_t, 4> kServerVersion{16, 0, 0x03, 0xE8};  // 16.0.1000
const char* const kServerName = "mssql-cdc-emulator";

ServerMessage as_message(const std::exception& e) {
  if (const auto* err = dynamic_cast<const Error*>(&e)) {
    if (err->number() != 0) return server_error(err->number(), err->what());
  }
  ServerMessage m = server_error(50000, e.what());
  m.state = 1;
  return m;
}

void write_error(Writer& w, ServerMessage m, const std::string& procedure = "") {
  m.server = kServerName;
  m.procedure = procedure;
  write_message(w, Token::Error, m);
}

// Writes each statement's tokens. With `ends`, the last statement's DONE closes the message
// (no MORE bit, as SQL Server ends a batch), so a client reading its last result set sees the
// end and has nothing left to cancel; returns whether it did.
bool write_results(Writer& w, const std::vector<StatementResult>& results, Token done, const std::string& db,
                   bool ends) {
  for (std::size_t i = 0; i < results.size(); ++i) {
    const StatementResult& r = results[i];
    if (r.database) {
      write_envchange(w, EnvChange::Database, *r.database, db);
      ServerMessage info{5701, 2, 0, "Changed database context to '" + *r.database + "'.", kServerName, "", 1};
      write_message(w, Token::Info, info);
    }
    if (!r.rows) continue;
    write_colmetadata(w, r.rows->columns);
    for (const auto& row : r.rows->rows) write_row(w, r.rows->columns, row);
    std::uint64_t count = r.rows->rows.size();
    if (r.rows->more) {
      // A streamed result: an error mid-way ends it as SQL Server does, after the rows sent.
      std::vector<Value> row;
      try {
        for (; r.rows->more(row); ++count) write_row(w, r.rows->columns, row);
      } catch (const std::exception& e) {
        write_error(w, as_message(e));
        write_done(w, done, kDoneError | kDoneMore, kCmdSelect, 0);
        return false;
      }
    }
    const bool last = ends && i + 1 == results.size();
    write_done(w, done, last ? kDoneCount : kDoneMore | kDoneCount, kCmdSelect, count);
    if (last) return true;
  }
  return false;
}

// Parameter names from an sp_executesql declaration "@P1 nvarchar(10), @P2 int", in order, for
// drivers that send the values without names.
std::vector<std::string> declared_names(const std::string& decl) {
  std::vector<std::string> names;
  int depth = 0;
  bool expect_name = true;
  for (const SqlToken& t : lex(decl)) {
    if (t.is_symbol('(')) ++depth;
    if (t.is_symbol(')')) --depth;
    if (depth == 0 && t.is_symbol(',')) expect_name = true;
    if (expect_name && t.kind == TokenKind::Variable) {
      names.push_back(lower(t.text));
      expect_name = false;
    }
  }
  return names;
}

std::string text_param(const RpcParam& p, const char* what) {
  if (const auto* s = std::get_if<std::string>(&p.value)) return *s;
  throw Error(ErrorKind::Sql, std::string("Procedure expects parameter '") + what + "' of type 'ntext/nchar/nvarchar'.",
              214);
}

}  // namespace

Session::Session(std::filesystem::path file, std::string database, std::uint16_t spid)
    : file_(std::move(file)), database_name_(std::move(database)), spid_(spid) {}

Reply Session::handle(const Message& message) {
  if (state_ == State::PreLogin && message.type == PacketType::PreLogin) {
    (void)parse_prelogin(message.payload);  // the client's wish does not change our answer
    state_ = State::Login;
    return Reply{prelogin_response(Encryption::NotSupported), false};
  }
  if (state_ != State::LoggedIn) {
    if (message.type == PacketType::Login7) return login(message);
    Writer w;
    write_error(w, server_error(18456, "Login failed: the client sent a request before logging in."));
    write_done(w, Token::Done, kDoneError, 0, 0);
    return Reply{w.take(), true};
  }
  switch (message.type) {
    case PacketType::SqlBatch: return Reply{batch(message), false};
    case PacketType::Rpc: return Reply{rpc(message), false};
    case PacketType::TransactionManager: return Reply{transaction(message), false};
    case PacketType::Attention: {
      // Requests are answered whole before the next is read, so nothing is left to cancel.
      Writer w;
      write_done(w, Token::Done, kDoneAttention, 0, 0);
      return Reply{w.take(), false};
    }
    default: {
      Writer w;
      write_error(w, server_error(50000, "This TDS front end does not accept packets of type " +
                                             std::to_string(static_cast<int>(message.type)) + "."));
      write_done(w, Token::Done, kDoneError, 0, 0);
      return Reply{w.take(), false};
    }
  }
}

Reply Session::login(const Message& message) {
  const Login7 req = parse_login7(message.payload);
  Writer w;
  const auto refuse = [&](ServerMessage m) {
    write_error(w, std::move(m));
    write_error(w, server_error(18456, "Login failed for user '" + req.user_name + "'."));
    write_done(w, Token::Done, kDoneError, 0, 0);
    return Reply{w.take(), true};
  };
  if (req.sspi) return refuse(server_error(18452, "Login failed. The login is from an untrusted domain."));
  if (!req.database.empty() && lower(req.database) != lower(database_name_)) {
    return refuse(server_error(4060, "Cannot open database \"" + req.database + "\" requested by the login."));
  }
  database_ = std::make_unique<Database>(file_, database_name_);
  if (req.packet_size != 0) packet_size_ = std::clamp<std::size_t>(req.packet_size, kMinPacketSize, kMaxPacketSize);
  state_ = State::LoggedIn;
  write_envchange(w, EnvChange::Database, database_name_, "master");
  write_message(w, Token::Info,
                ServerMessage{5701, 2, 0, "Changed database context to '" + database_name_ + "'.", kServerName, "", 1});
  write_envchange_bytes(w, EnvChange::Collation, kDefaultCollation, {});
  write_envchange(w, EnvChange::Language, "us_english", "");
  write_message(w, Token::Info,
                ServerMessage{5703, 1, 0, "Changed language setting to us_english.", kServerName, "", 1});
  write_loginack(w, std::min(req.tds_version, kTds74), "Microsoft SQL Server", kServerVersion);
  write_envchange(w, EnvChange::PacketSize, std::to_string(packet_size_), std::to_string(kDefaultPacketSize));
  if (req.has_feature_ext()) write_feature_ext_ack(w);
  write_done(w, Token::Done, kDoneFinal, 0, 0);
  return Reply{w.take(), false};
}

Bytes Session::batch(const Message& message) {
  Writer w;
  std::vector<StatementResult> done;
  try {
    database_->run(parse_sql_batch(message.payload), {}, done);
  } catch (const std::exception& e) {
    write_results(w, done, Token::Done, database_name_, false);
    write_error(w, as_message(e));
    write_done(w, Token::Done, kDoneError, 0, 0);
    return w.take();
  }
  if (!write_results(w, done, Token::Done, database_name_, true)) write_done(w, Token::Done, kDoneFinal, 0, 0);
  return w.take();
}

Bytes Session::rpc(const Message& message) {
  Writer w;
  std::vector<RpcCall> calls;
  try {
    calls = parse_rpc(message.payload);
  } catch (const std::exception& e) {
    write_error(w, as_message(e));
    write_done(w, Token::DoneProc, kDoneError, 0, 0);
    return w.take();
  }
  for (std::size_t i = 0; i < calls.size(); ++i) rpc_call(w, calls[i], i + 1 == calls.size());
  return w.take();
}

void Session::run_in_proc(Writer& w, const std::string& sql, const Params& params) {
  std::vector<StatementResult> done;
  try {
    database_->run(sql, params, done);
  } catch (...) {
    write_results(w, done, Token::DoneInProc, database_name_, false);
    throw;
  }
  // DONEPROC ends the call, so every statement inside it keeps the MORE bit.
  write_results(w, done, Token::DoneInProc, database_name_, false);
}

void Session::rpc_call(Writer& w, const RpcCall& call, bool last) {
  const std::uint16_t more = last ? kDoneFinal : kDoneMore;
  // Statement parameters: named ones by name, unnamed ones by their place in the declaration.
  const auto bind = [](const std::vector<RpcParam>& values, std::size_t from, const std::string& decl) {
    Params params;
    const auto names = declared_names(decl);
    for (std::size_t i = from, k = 0; i < values.size(); ++i, ++k) {
      const std::string name = !values[i].name.empty() ? lower(values[i].name) : (k < names.size() ? names[k] : "");
      params[name] = TypedValue{values[i].type, values[i].value};
    }
    return params;
  };
  const auto& p = call.params;
  const auto decl_at = [&p](std::size_t i) {
    return i < p.size() && !is_null(p[i].value) ? text_param(p[i], "@params") : std::string();
  };
  try {
    std::optional<std::int32_t> handle;
    if (call.procedure == "sp_executesql") {
      if (p.empty())
        throw Error(ErrorKind::Sql, "Procedure expects parameter '@statement', which was not supplied.", 201);
      run_in_proc(w, text_param(p[0], "@statement"), bind(p, 2, decl_at(1)));
    } else if (call.procedure == "sp_prepexec" || call.procedure == "sp_prepare") {
      if (p.size() < 3)
        throw Error(ErrorKind::Sql, "Procedure expects parameter '@stmt', which was not supplied.", 201);
      handle = next_handle_++;
      prepared_[*handle] = {decl_at(1), text_param(p[2], "@stmt")};
      if (call.procedure == "sp_prepexec") run_in_proc(w, prepared_[*handle].second, bind(p, 3, decl_at(1)));
    } else if (call.procedure == "sp_execute") {
      const auto* h = p.empty() ? nullptr : std::get_if<std::int64_t>(&p[0].value);
      const auto it = h == nullptr ? prepared_.end() : prepared_.find(static_cast<std::int32_t>(*h));
      if (it == prepared_.end()) {
        throw Error(ErrorKind::Sql,
                    "Could not find prepared statement with handle " +
                        (h == nullptr ? std::string("NULL") : std::to_string(*h)) + ".",
                    8179);
      }
      run_in_proc(w, it->second.second, bind(p, 1, it->second.first));
    } else if (call.procedure == "sp_unprepare") {
      if (const auto* h = p.empty() ? nullptr : std::get_if<std::int64_t>(&p[0].value)) {
        prepared_.erase(static_cast<std::int32_t>(*h));
      }
    } else {
      throw Error(ErrorKind::Sql, "Could not find stored procedure '" + call.procedure + "'.", 2812);
    }
    write_return_status(w, 0);
    if (handle && !p.empty() && p[0].output) {
      write_return_value(w, 1, p[0].name, Column{"", ColumnType{SqlKind::Int}, true}, std::int64_t{*handle});
    }
    write_done(w, Token::DoneProc, more, 0, 0);
  } catch (const std::exception& e) {
    write_error(w, as_message(e), call.procedure);
    write_done(w, Token::DoneProc, static_cast<std::uint16_t>(more | kDoneError), 0, 0);
  }
}

Bytes Session::transaction(const Message& message) {
  Reader r(message.payload);
  const std::uint32_t headers = r.u32le();
  r.skip(headers - 4);
  const std::uint16_t request = r.u16le();
  Writer w;
  Bytes descriptor(8, 0);
  // TM_BEGIN_XACT 5, TM_COMMIT_XACT 7, TM_ROLLBACK_XACT 8 (2.2.6.9). The emulator reads only,
  // so a transaction is bookkeeping the client can see, nothing more.
  if (request == 5) {
    transaction_ = (static_cast<std::uint64_t>(spid_) << 32) | static_cast<std::uint64_t>(next_handle_++);
    for (std::size_t k = 0; k < 8; ++k) descriptor[k] = static_cast<std::uint8_t>(transaction_ >> (8 * k));
    write_envchange_bytes(w, EnvChange::BeginTransaction, descriptor, {});
  } else if (request == 7 || request == 8) {
    for (std::size_t k = 0; k < 8; ++k) descriptor[k] = static_cast<std::uint8_t>(transaction_ >> (8 * k));
    write_envchange_bytes(w, request == 7 ? EnvChange::CommitTransaction : EnvChange::RollbackTransaction, {},
                          descriptor);
    transaction_ = 0;
  }
  write_done(w, Token::Done, kDoneFinal, 0, 0);
  return w.take();
}

}  // namespace mssqlcdc::tds
