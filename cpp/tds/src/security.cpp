#include "security.hpp"

#include "builtins.hpp"
#include "login.hpp"
#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/emu/permissions.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "objects.hpp"
#include "procedures.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {
namespace {

// Quotes a token in a syntax error; callers never pass the password's token.
[[noreturn]] void syntax_near(const std::vector<SqlToken>& t, std::size_t at) {
  sql_error(102, "Incorrect syntax near '" + (at < t.size() ? t[at].text : std::string(";")) + "'.");
}

[[noreturn]] void not_modelled(const std::string& what) {
  sql_error(50000, "The emulator's TDS front end does not model " + what +
                       " (docs/emulator.md lists the principal statements it runs).");
}

const std::string& name_at(const std::vector<SqlToken>& t, std::size_t at) {
  if (at >= t.size() || !t[at].is_name()) syntax_near(t, at);
  return t[at].text;
}

// A one- or two-part name from `at`; advances past it. An empty schema means dbo.
std::pair<std::string, std::string> object_name(const std::vector<SqlToken>& t, std::size_t& at) {
  std::string first = name_at(t, at++);
  if (at < t.size() && t[at].is_symbol('.')) {
    ++at;
    return {std::move(first), name_at(t, at++)};
  }
  return {"dbo", std::move(first)};
}

// The password: a string literal or a character @variable. Errors never quote it.
Secret password_at(const std::vector<SqlToken>& t, std::size_t at, const Params& params) {
  if (at >= t.size()) syntax_near(t, at);
  const SqlToken& p = t[at];
  if (p.kind == TokenKind::String || p.kind == TokenKind::UnicodeString) return Secret(p.text);
  if (p.kind == TokenKind::Variable) {
    const auto it = params.find(lower(p.text));
    if (it == params.end()) sql_error(137, "Must declare the scalar variable \"" + p.text + "\".");
    if (const auto* s = std::get_if<std::string>(&it->second.value)) return Secret(*s);
  }
  sql_error(102, "Incorrect syntax near 'PASSWORD'.");
}

template <typename Fn>
void in_write(Storage& storage, Fn fn) {
  emu::Engine& engine = storage.writer();
  try {
    emu::WriteTxn txn(engine.db());
    fn(engine.db());
    txn.commit();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Sql) throw;
    sql_error(e.number() == 0 ? 50000 : e.number(), e.what());
  }
}

// CREATE LOGIN name WITH PASSWORD = 'p' [, CHECK_POLICY = ON|OFF, CHECK_EXPIRATION = ...,
// DEFAULT_DATABASE = db, DEFAULT_LANGUAGE = l]: those options change nothing here.
void create_login(Storage& storage, const std::vector<SqlToken>& t, const Params& params) {
  const std::string& name = name_at(t, 2);
  if (t.size() > 3 && t[3].is("FROM")) not_modelled("Windows, certificate or key logins");
  if (t.size() < 7 || !t[3].is("WITH") || !t[4].is("PASSWORD") || !t[5].is_symbol('=')) syntax_near(t, 3);
  const Secret password = password_at(t, 6, params);
  for (std::size_t at = 7; at < t.size(); at += 4) {
    if (at < t.size() && (t[at].is("HASHED") || t[at].is("MUST_CHANGE"))) not_modelled("HASHED and MUST_CHANGE");
    if (!t[at].is_symbol(',') || at + 3 >= t.size() || !t[at + 2].is_symbol('=')) syntax_near(t, at);
    const SqlToken& option = t[at + 1];
    if (!option.is("CHECK_POLICY") && !option.is("CHECK_EXPIRATION") && !option.is("DEFAULT_DATABASE") &&
        !option.is("DEFAULT_LANGUAGE")) {
      not_modelled("the login option " + option.text);
    }
  }
  const SqlLogin hashed = hash_password(name, password);
  in_write(storage, [&](emu::Db& db) {
    emu::create_login(db, emu::LoginRecord{hashed.name, hashed.salt, hashed.hash, hashed.iterations});
  });
}

// CREATE USER name [{FOR | FROM} LOGIN login | WITHOUT LOGIN] [WITH DEFAULT_SCHEMA = s]: without
// a clause the user maps to the login of its own name, which must exist (15007).
void create_user(Storage& storage, const std::vector<SqlToken>& t) {
  const std::string& name = name_at(t, 2);
  std::optional<std::string> login = name;
  std::size_t at = 3;
  if (at < t.size() && (t[at].is("FOR") || t[at].is("FROM"))) {
    if (at + 1 >= t.size() || !t[at + 1].is("LOGIN")) syntax_near(t, at + 1);
    login = name_at(t, at + 2);
    at += 3;
  } else if (at < t.size() && t[at].is("WITHOUT")) {
    if (at + 1 >= t.size() || !t[at + 1].is("LOGIN")) syntax_near(t, at + 1);
    login.reset();
    at += 2;
  }
  if (at < t.size()) {
    if (!t[at].is("WITH") || at + 3 >= t.size() || !t[at + 1].is("DEFAULT_SCHEMA") || !t[at + 2].is_symbol('=')) {
      syntax_near(t, at);
    }
    if (!t[at + 3].is("dbo") || at + 4 != t.size()) not_modelled("a default schema other than dbo");
  }
  in_write(storage, [&](emu::Db& db) {
    emu::create_user(db, name, {});
    if (login) emu::map_user_to_login(db, name, *login);
  });
}

// GRANT SELECT ON [OBJECT::]schema.table | SCHEMA::schema TO principal [, principal]...
void grant(Storage& storage, const std::vector<SqlToken>& t) {
  if (t.size() < 2 || !t[1].is("SELECT")) not_modelled("permissions other than SELECT");
  std::size_t at = 2;
  if (at >= t.size() || !t[at].is("ON")) {
    if (at < t.size() && (t[at].is_symbol(',') || t[at].is_symbol('('))) not_modelled("permissions other than SELECT");
    syntax_near(t, at);
  }
  ++at;
  bool schema = false;
  if (at + 2 < t.size() && t[at + 1].is_symbol(':') && t[at + 2].is_symbol(':')) {
    if (t[at].is("SCHEMA")) {
      schema = true;
    } else if (!t[at].is("OBJECT")) {
      not_modelled("GRANT on a " + t[at].text);
    }
    at += 3;
  }
  std::string securable;
  emu::Reader& reader = storage.reader();
  if (schema) {
    const std::string& s = name_at(t, at++);
    const auto held_model = object_model(reader);
    const ObjectModel& model = *held_model;
    if (model.schema_id(s) == 0) {
      sql_error(15151, "Cannot find the schema '" + s + "', because it does not exist or you do not have permission.");
    }
    securable = "schema:" + lower(s);
  } else {
    const std::size_t from = at;
    const auto [s, n] = object_name(t, at);
    const auto held_model = object_model(reader);
    const ObjectModel& model = *held_model;
    const SqlObject* object = model.find(s, n);
    if (object == nullptr ||
        (object->kind != SqlObject::Kind::UserTable && object->kind != SqlObject::Kind::ChangeTable)) {
      const std::string written = at - from > 1 ? s + "." + n : n;
      sql_error(15151,
                "Cannot find the object '" + written + "', because it does not exist or you do not have permission.");
    }
    securable = "object:" + object->schema + "." + object->name;
  }
  if (at >= t.size() || !t[at].is("TO")) syntax_near(t, at);
  ++at;
  std::vector<std::string> principals{name_at(t, at++)};
  while (at < t.size() && t[at].is_symbol(',')) {
    ++at;
    principals.push_back(name_at(t, at++));
  }
  if (at < t.size()) {
    if (t[at].is("WITH") || t[at].is("AS")) not_modelled("GRANT's WITH GRANT OPTION and AS");
    syntax_near(t, at);
  }
  in_write(storage, [&](emu::Db& db) {
    for (const auto& p : principals) emu::grant_select(db, securable, p);
  });
}

// ALTER ROLE role ADD MEMBER user.
void alter_role(Storage& storage, const std::vector<SqlToken>& t) {
  const std::string& role = name_at(t, 2);
  if (t.size() > 3 && t[3].is("DROP")) not_modelled("ALTER ROLE ... DROP MEMBER");
  if (t.size() > 3 && t[3].is("WITH")) not_modelled("renaming a role");
  if (t.size() != 6 || !t[3].is("ADD") || !t[4].is("MEMBER")) syntax_near(t, t.size() > 3 ? 3 : t.size());
  const std::string& member = name_at(t, 5);
  in_write(storage, [&](emu::Db& db) { emu::add_role_member(db, role, member); });
}

}  // namespace

bool is_security_statement(const std::vector<SqlToken>& t) {
  if (t.empty()) return false;
  if (t[0].is("GRANT")) return true;
  if (t.size() < 2) return false;
  if (t[0].is("CREATE")) return t[1].is("LOGIN") || t[1].is("USER");
  return t[0].is("ALTER") && t[1].is("ROLE");
}

void run_security_statement(Storage& storage, const std::vector<SqlToken>& t, const Params& params) {
  if (storage.reader().user()) sql_error(15247, "User does not have permission to perform this action.");
  if (storage.trancount() > 0) not_modelled("principal statements inside a transaction");
  if (t[0].is("GRANT")) return grant(storage, t);
  if (t[1].is("LOGIN")) return create_login(storage, t, params);
  if (t[1].is("USER")) return create_user(storage, t);
  alter_role(storage, t);
}

}  // namespace mssqlcdc::tds
