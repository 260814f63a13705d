#include "session.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <utility>

#include "login.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/tokens.hpp"
#include "procedures.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {
namespace {

constexpr std::uint32_t kTds74 = 0x74000004;
constexpr std::uint16_t kDoneServerError = 0x100;  // DONE_SRVERROR (MS-TDS 2.2.7.6): a severity 20+ error
constexpr std::array<std::uint8_t, 4> kServerVersion{16, 0, 0x03, 0xE8};  // 16.0.1000
const char* const kServerName = "mssql-cdc-emulator";

ServerMessage as_message(const std::exception& e) {
  if (const auto* raised = dynamic_cast<const RaisedError*>(&e)) return raised->message();  // RAISERROR, THROW
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

// RAISERROR's message: an ERROR from severity 11, an INFO below (the RAISERROR page).
void write_error_or_info(Writer& w, ServerMessage m, const std::string& procedure) {
  m.server = kServerName;
  m.procedure = procedure;
  write_message(w, m.severity > 10 ? Token::Error : Token::Info, m);
}

// Pulls one row at a time; false at the end. The seam to the engine's row producers: a result
// whose rows come from a RowStream is written without ever holding more than a packet.
using RowSource = std::function<bool(std::vector<Value>&)>;

// ENVCHANGE 8 carries the new transaction's descriptor as its new value; 9 and 10 the ended
// one's as the old value (MS-TDS 2.2.7.9).
void write_transaction_change(Writer& w, const TransactionChange& change) {
  Bytes descriptor(8, 0);
  for (std::size_t k = 0; k < 8; ++k) descriptor[k] = static_cast<std::uint8_t>(change.descriptor >> (8 * k));
  if (change.type == EnvChange::BeginTransaction) {
    write_envchange_bytes(w, change.type, descriptor, {});
  } else {
    write_envchange_bytes(w, change.type, {}, descriptor);
  }
}

RowSource rows_of(const ResultSet& set) {
  return [&set, i = std::size_t{0}](std::vector<Value>& row) mutable {
    if (i < set.rows.size()) {
      row = set.rows[i++];
      return true;
    }
    return set.more ? set.more(row) : false;  // a streamed result's rows after its first ones
  };
}

// A fault script's large result: n bigint 1..count and a short text, made as they are sent.
const std::vector<Column>& synthesized_columns() {
  static const std::vector<Column> columns{{"n", ColumnType{SqlKind::BigInt}, false},
                                           {"text", ColumnType{SqlKind::NVarChar, 40}, false}};
  return columns;
}

RowSource synthesized_rows(std::uint64_t count) {
  return [count, n = std::uint64_t{0}](std::vector<Value>& row) mutable {
    if (n == count) return false;
    ++n;
    row.assign({Value{static_cast<std::int64_t>(n)}, Value{"row " + std::to_string(n)}});
    return true;
  };
}

enum class Stop { None, Cancelled, Cut, Failed };

// Writes one result set row by row, flushing at each row so a socket sink sends full packets
// while rows are still being made. With `drop_after`, at most that many rows go out and the
// connection is cut before the DONE.
Stop write_result_set(ReplySink& sink, const std::vector<Column>& columns, const RowSource& next, Token done, bool last,
                      const std::optional<std::uint64_t>& drop_after,
                      const std::function<std::vector<ServerMessage>()>& notes = {}) {
  write_colmetadata(sink.out(), columns);
  std::uint64_t count = 0;
  std::vector<Value> row;
  for (;;) {
    if (drop_after && count == *drop_after) break;
    try {
      if (!next(row)) break;
    } catch (const Cancelled&) {
      return Stop::Cancelled;
    } catch (const std::exception& e) {
      // A streamed result fails mid-way as SQL Server's does: the rows sent stay sent, then
      // the ERROR; the batch's DONE carries the error bit.
      write_error(sink.out(), as_message(e));
      return Stop::Failed;
    }
    // A value that does not fit its column throws; a row is appended whole or not at all, so
    // the ERROR that follows starts on a token boundary.
    Writer one;
    write_row(one, columns, row);
    sink.out().bytes(one.data());
    ++count;
    if (!sink.flush()) return Stop::Cancelled;
  }
  if (drop_after) {
    sink.cut();
    return Stop::Cut;
  }
  if (notes) {
    for (ServerMessage m : notes()) {  // SET STATISTICS IO's, after the rows (decision 1411)
      m.server = kServerName;
      write_message(sink.out(), Token::Info, m);
    }
  }
  write_done(sink.out(), done, last ? kDoneCount : kDoneMore | kDoneCount, kCmdSelect, count);
  return Stop::None;
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

Session::Session(std::filesystem::path file, std::string database, std::uint16_t spid,
                 std::shared_ptr<FaultScript> faults, bool tls, std::optional<SqlLogin> sql_login,
                 std::optional<AccessTokenCheck> access_token)
    : file_(std::move(file)),
      database_name_(std::move(database)),
      spid_(spid),
      tls_(tls),
      faults_(std::move(faults)),
      sql_login_(std::move(sql_login)),
      access_token_(std::move(access_token)) {}

namespace {

class BufferSink final : public ReplySink {
 public:
  Bytes take() { return out_.take(); }
};

}  // namespace

Reply Session::handle(const Message& message) {
  BufferSink sink;
  const bool close = handle(message, sink);
  return Reply{sink.take(), close};
}

bool Session::handle(const Message& message, ReplySink& sink) {
  Writer& w = sink.out();
  bool close = false;
  if (state_ == State::PreLogin && message.type == PacketType::PreLogin) {
    const PreLogin pre = parse_prelogin(message.payload);
    const EncryptionAnswer answer = negotiate_encryption(pre.encryption, tls_);
    tls_scope_ = answer.scope;
    // A client that asks for federated authentication, of a server that accepts a token: the
    // answer says FEDAUTHREQUIRED, which the client's LOGIN7 must echo (MS-TDS's LOGIN7 rules).
    fedauth_required_ = pre.fedauth_required && access_token_.has_value();
    state_ = State::Login;
    w.bytes(prelogin_response(answer.answer, fedauth_required_));
  } else if (state_ != State::LoggedIn) {
    if (message.type == PacketType::Login7) return login(message, sink);
    write_error(w, server_error(18456, "Login failed: the client sent a request before logging in."));
    write_done(w, Token::Done, kDoneError, 0, 0);
    close = true;
  } else {
    // The request computes under a watch: ATTENTION, a client that leaves or a stopping server
    // ends it within a poll, and the rows it holds are bounded (watch.hpp).
    const Watch watch([&sink] { return sink.interrupted(); }, statement_memory_);
    switch (message.type) {
      case PacketType::SqlBatch: return batch(message, sink);
      case PacketType::Rpc: return rpc(message, sink);
      case PacketType::TransactionManager: transaction(message, w); break;
      // An attention that arrives after its answer was sent: there is nothing left to cancel
      // (one that arrives during an answer is taken by the sink), but it is acknowledged.
      case PacketType::Attention: write_done(w, Token::Done, kDoneAttention, 0, 0); break;
      default:
        write_error(w, server_error(50000, "This TDS front end does not accept packets of type " +
                                               std::to_string(static_cast<int>(message.type)) + "."));
        write_done(w, Token::Done, kDoneError, 0, 0);
    }
  }
  sink.end();
  return close;
}

bool Session::login(const Message& message, ReplySink& sink) {
  const Login7 req = parse_login7(message.payload);
  Writer& w = sink.out();
  const auto refuse = [&](ServerMessage m) {
    if (m.number != 18456) {
      log_error(m);
      write_error(w, std::move(m));
    }
    const ServerMessage failed = server_error(18456, "Login failed for user '" + req.user_name + "'.");
    log_error(failed);
    write_error(w, failed);
    write_done(w, Token::Done, kDoneError, 0, 0);
    sink.end();
    return true;
  };
  const FaultPlan fault = faults_ ? faults_->claim(FaultWhen::Login, "") : FaultPlan{};
  if (fault.stall && !sink.wait(*fault.stall)) return true;
  if (fault.drop_after) {
    sink.cut();
    return true;
  }
  if (fault.error) {
    ServerMessage m = fault_message(*fault.error, database_name_, spid_);
    if (m.number == 4060 || m.number == 18456) return refuse(std::move(m));
    write_error(w, std::move(m));  // Azure SQL refuses a login with its own error alone
    write_done(w, Token::Done, kDoneError, 0, 0);
    sink.end();
    return true;
  }
  if (req.sspi) return refuse(server_error(18452, "Login failed. The login is from an untrusted domain."));
  if (req.fedauth) {
    if (!token_login_accepted(*req.fedauth)) {
      // SQL Server names no user for a refused token; the reason stays in its own log.
      write_error(w, server_error(18456, "Login failed for user '<token-identified principal>'."));
      write_done(w, Token::Done, kDoneError, 0, 0);
      sink.end();
      return true;
    }
    return logged_in(req, sql_login_ ? sql_login_->name : std::string("sa"), sink);
  }
  // The server's login, a login of the file (CREATE LOGIN) with its own password, or a
  // database user of the file (create_user) logging in with the server's password. An unknown login and a wrong
  // password get the same error, as SQL Server's client sees. A login CREATE LOGIN kept in the file is checked against
  // its own hash.
  std::optional<emu::LoginRecord> kept;
  if (!sql_login_ || lower(req.user_name) != lower(sql_login_->name)) {
    try {
      emu::Reader logins(file_);
      kept = logins.find_login(req.user_name);
    } catch (const Error&) {
      return refuse(server_error(18456, ""));
    }
  }
  if (kept) {
    const SqlLogin login{kept->name, kept->salt, kept->hash, kept->iterations};
    if (!password_matches(login, req.password)) return refuse(server_error(18456, ""));
  } else if (sql_login_) {
    bool known = lower(req.user_name) == lower(sql_login_->name);
    if (!known) {
      try {
        emu::Reader users(file_);
        users.act_as(req.user_name, database_name_, true);
        known = true;
      } catch (const Error&) {
        known = false;
      }
    }
    if (!known || !password_matches(*sql_login_, req.password)) return refuse(server_error(18456, ""));
  }
  return logged_in(req, req.user_name, sink);
}

bool Session::token_login_accepted(const FedAuth& fedauth) const {
  // Only over TLS, only the security-token library, with FEDAUTHREQUIRED echoed as answered.
  if (!access_token_ || tls_scope_ == TlsScope::None) return false;
  if (fedauth.library != FedAuth::kSecurityToken || fedauth.echo != fedauth_required_) return false;
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  return access_token_matches(*access_token_, fedauth.token, now.count());
}

bool Session::logged_in(const Login7& req, const std::string& user, ReplySink& sink) {
  Writer& w = sink.out();
  if (!req.database.empty() && lower(req.database) != lower(database_name_)) {
    write_error(w, server_error(4060, "Cannot open database \"" + req.database + "\" requested by the login."));
    write_error(w, server_error(18456, "Login failed for user '" + user + "'."));
    write_done(w, Token::Done, kDoneError, 0, 0);
    sink.end();
    return true;
  }
  database_ = std::make_unique<Database>(file_, database_name_, user);
  database_->set_spid(spid_);
  if (log_) log_->login(spid_, user, database_name_);
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
  if (req.has_feature_ext()) write_feature_ext_ack(w, req.fedauth.has_value());
  write_done(w, Token::Done, kDoneFinal, 0, 0);
  sink.end();
  return false;
}

Session::Outcome Session::execute(ReplySink& sink, const std::string& sql, const Params& params, Token done, bool ends,
                                  const std::string& procedure) {
  Writer& w = sink.out();
  const FaultPlan fault = faults_ ? faults_->claim(FaultWhen::Statement, sql) : FaultPlan{};
  if (fault.stall && !sink.wait(*fault.stall)) return Outcome::Cancelled;
  if (fault.error) {
    const ServerMessage m = fault_message(*fault.error, database_name_, spid_);
    write_error(w, m, procedure);
    return m.severity >= 20 ? Outcome::Fatal : Outcome::Failed;  // SQL Server ends the session
  }
  const std::optional<std::uint64_t> drop = fault.drop_after;
  const auto finish = [](Stop stop, bool last) {
    if (stop == Stop::Cancelled) return Outcome::Cancelled;
    if (stop == Stop::Cut) return Outcome::Cut;
    if (stop == Stop::Failed) return Outcome::Failed;
    return last ? Outcome::Ended : Outcome::Done;
  };
  if (fault.rows)
    return finish(write_result_set(sink, synthesized_columns(), synthesized_rows(*fault.rows), done, ends, drop), ends);
  std::vector<StatementResult> results;
  std::optional<ServerMessage> failure;
  try {
    database_->run(sql, params, results);
  } catch (const Cancelled&) {
    return Outcome::Cancelled;  // SQL Server sends nothing more of a cancelled batch
  } catch (const std::exception& e) {
    failure = as_message(e);  // the statements before it still send their results
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    const StatementResult& r = results[i];
    if (r.transaction) write_transaction_change(w, *r.transaction);
    if (r.print) write_message(w, Token::Info, ServerMessage{0, 1, 0, *r.print, kServerName, "", 1});
    if (r.message) {
      if (r.message->severity > 10) log_error(*r.message);
      write_error_or_info(w, *r.message, procedure);
    }
    if (r.database) {
      write_envchange(w, EnvChange::Database, *r.database, database_name_);
      write_message(
          w, Token::Info,
          ServerMessage{5701, 2, 0, "Changed database context to '" + *r.database + "'.", kServerName, "", 1});
    }
    // The last statement's DONE closes the message (no MORE bit, as SQL Server ends a batch), so
    // a client reading its last result set sees the end and has nothing left to cancel.
    const bool last = ends && !failure && i + 1 == results.size();
    Outcome o = Outcome::Done;
    if (r.procedure) {
      // A procedure's result sets end with DONEINPROC; RETURNSTATUS and DONEPROC end the call.
      for (const ResultSet& set : *r.procedure) {
        o = finish(write_result_set(sink, set.columns, rows_of(set), Token::DoneInProc, false, drop), false);
        if (o != Outcome::Done) return o;
      }
      write_return_status(w, 0);
      write_done(w, Token::DoneProc, last ? kDoneFinal : kDoneMore, 0, 0);
      o = last ? Outcome::Ended : Outcome::Done;
    } else if (r.count) {
      const std::uint16_t status = last ? kDoneCount : kDoneMore | kDoneCount;
      write_done(w, done, status, r.count->cur_cmd, r.count->rows);
      o = last ? Outcome::Ended : Outcome::Done;
    } else if (r.rows) {
      o = finish(write_result_set(sink, r.rows->columns, rows_of(*r.rows), done, last, drop, r.rows->notes), last);
    }
    if (o != Outcome::Done) return o;
  }
  if (failure) {
    log_error(*failure);
    write_error(w, *failure, procedure);
    return Outcome::Failed;
  }
  return Outcome::Done;
}

bool Session::batch(const Message& message, ReplySink& sink) {
  Writer& w = sink.out();
  Outcome o = Outcome::Failed;
  try {
    const std::string sql = parse_sql_batch(message.payload);
    if (log_) log_->batch(spid_, sql);
    o = execute(sink, sql, {}, Token::Done, true, "");
  } catch (const Cancelled&) {
    o = Outcome::Cancelled;
  } catch (const std::exception& e) {
    log_error(as_message(e));
    write_error(w, as_message(e));
  }
  switch (o) {
    case Outcome::Cut: return true;
    case Outcome::Ended: break;
    case Outcome::Done: write_done(w, Token::Done, kDoneFinal, 0, 0); break;
    case Outcome::Failed: write_done(w, Token::Done, kDoneError, 0, 0); break;
    case Outcome::Cancelled: write_done(w, Token::Done, kDoneAttention, 0, 0); break;
    case Outcome::Fatal: write_done(w, Token::Done, kDoneError | kDoneServerError, 0, 0); break;
  }
  sink.end();
  return o == Outcome::Fatal;
}

bool Session::rpc(const Message& message, ReplySink& sink) {
  std::vector<RpcCall> calls;
  try {
    calls = parse_rpc(message.payload);
  } catch (const std::exception& e) {
    log_error(as_message(e));
    write_error(sink.out(), as_message(e));
    write_done(sink.out(), Token::DoneProc, kDoneError, 0, 0);
    sink.end();
    return false;
  }
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const Outcome o = rpc_call(sink, calls[i], i + 1 == calls.size());
    if (o == Outcome::Cut) return true;
    if (o == Outcome::Cancelled) {
      write_done(sink.out(), Token::Done, kDoneAttention, 0, 0);
      break;
    }
    if (o == Outcome::Fatal) {
      sink.end();
      return true;
    }
  }
  sink.end();
  return false;
}

Session::Outcome Session::rpc_call(ReplySink& sink, const RpcCall& call, bool last) {
  Writer& w = sink.out();
  if (log_) log_->rpc(spid_, call);
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
  // DONEPROC ends the call, so every statement inside it keeps the MORE bit.
  const auto run_in_proc = [&](const std::string& sql, const Params& params) {
    return execute(sink, sql, params, Token::DoneInProc, false, call.procedure);
  };
  Outcome outcome = Outcome::Done;
  try {
    std::optional<std::int32_t> handle;
    if (call.procedure == "sp_executesql") {
      if (p.empty())
        throw Error(ErrorKind::Sql, "Procedure expects parameter '@statement', which was not supplied.", 201);
      outcome = run_in_proc(text_param(p[0], "@statement"), bind(p, 2, decl_at(1)));
    } else if (call.procedure == "sp_prepexec" || call.procedure == "sp_prepare") {
      if (p.size() < 3)
        throw Error(ErrorKind::Sql, "Procedure expects parameter '@stmt', which was not supplied.", 201);
      handle = next_handle_++;
      prepared_[*handle] = {decl_at(1), text_param(p[2], "@stmt")};
      if (call.procedure == "sp_prepexec") outcome = run_in_proc(prepared_[*handle].second, bind(p, 3, decl_at(1)));
    } else if (call.procedure == "sp_execute") {
      const auto* h = p.empty() ? nullptr : std::get_if<std::int64_t>(&p[0].value);
      const auto it = h == nullptr ? prepared_.end() : prepared_.find(static_cast<std::int32_t>(*h));
      if (it == prepared_.end()) {
        throw Error(ErrorKind::Sql,
                    "Could not find prepared statement with handle " +
                        (h == nullptr ? std::string("NULL") : std::to_string(*h)) + ".",
                    8179);
      }
      outcome = run_in_proc(it->second.second, bind(p, 1, it->second.first));
    } else if (call.procedure == "sp_unprepare") {
      if (const auto* h = p.empty() ? nullptr : std::get_if<std::int64_t>(&p[0].value)) {
        prepared_.erase(static_cast<std::int32_t>(*h));
      }
    } else {
      // Any other name is a stored procedure called by name, bound as EXEC binds it.
      ProcCall by_name{call.procedure, {}};
      for (const RpcParam& param : p) by_name.args.push_back(ProcArg{lower(param.name), {param.type, param.value}});
      for (const ResultSet& rs : database_->call(by_name)) {
        const Stop stop = write_result_set(sink, rs.columns, rows_of(rs), Token::DoneInProc, false, std::nullopt);
        outcome = stop == Stop::Cancelled ? Outcome::Cancelled : stop == Stop::Failed ? Outcome::Failed : Outcome::Done;
        if (outcome != Outcome::Done) break;
      }
    }
    if (outcome == Outcome::Done || outcome == Outcome::Ended) {
      write_return_status(w, 0);
      if (handle && !p.empty() && p[0].output) {
        write_return_value(w, 1, p[0].name, Column{"", ColumnType{SqlKind::Int}, true}, std::int64_t{*handle});
      }
      write_done(w, Token::DoneProc, more, 0, 0);
      return Outcome::Done;
    }
  } catch (const Cancelled&) {
    return Outcome::Cancelled;
  } catch (const std::exception& e) {
    log_error(as_message(e));
    write_error(w, as_message(e), call.procedure);
    outcome = Outcome::Failed;
  }
  if (outcome == Outcome::Failed) write_done(w, Token::DoneProc, static_cast<std::uint16_t>(more | kDoneError), 0, 0);
  if (outcome == Outcome::Fatal) write_done(w, Token::DoneProc, kDoneError | kDoneServerError, 0, 0);
  return outcome;
}

void Session::transaction(const Message& message, Writer& w) {
  // TM_BEGIN_XACT 5, TM_COMMIT_XACT 7, TM_ROLLBACK_XACT 8, TM_SAVE_XACT 9 (MS-TDS 2.2.6.9): the
  // same transaction as the T-SQL statements. A commit or rollback with
  // fBeginXact begins the next transaction in the same request. The DTC requests are refused.
  try {
    Reader r(message.payload);
    const std::uint32_t headers = r.u32le();
    r.skip(headers - 4);
    const std::uint16_t request = r.u16le();
    const auto send = [&](const std::optional<TransactionChange>& change) {
      if (change) write_transaction_change(w, *change);
    };
    if (request == 5) {
      (void)r.u8();  // the isolation level: the session's own SET TRANSACTION ISOLATION LEVEL rules
      send(database_->transact(TransactionRequest::Begin, r.b_varchar()));
    } else if (request == 7 || request == 8) {
      const std::string name = r.b_varchar();
      const bool begin_next = !r.at_end() && (r.u8() & 1) != 0;
      send(database_->transact(request == 7 ? TransactionRequest::Commit : TransactionRequest::Rollback, name));
      if (begin_next) {
        if (!r.at_end()) (void)r.u8();
        send(database_->transact(TransactionRequest::Begin, r.at_end() ? std::string() : r.b_varchar()));
      }
    } else if (request == 9) {
      send(database_->transact(TransactionRequest::Save, r.b_varchar()));
    } else {
      throw Error(ErrorKind::Sql,
                  "The emulator's TDS front end has no distributed transactions (transaction manager request " +
                      std::to_string(request) + "); use BEGIN, COMMIT and ROLLBACK TRANSACTION.",
                  50000);
    }
  } catch (const std::exception& e) {
    log_error(as_message(e));
    write_error(w, as_message(e));
    write_done(w, Token::Done, kDoneError, 0, 0);
    return;
  }
  write_done(w, Token::Done, kDoneFinal, 0, 0);
}

}  // namespace mssqlcdc::tds
