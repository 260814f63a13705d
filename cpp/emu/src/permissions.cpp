// permissions.cpp: users, roles and the read check of permissions.hpp. Names compare without
// case, as sysname does under the default collation.
#include "mssqlcdc/emu/permissions.hpp"

#include "ascii.hpp"
#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

std::string user_key(std::string_view user) { return "user." + ascii_lower(user); }
std::string role_key(std::string_view role) { return "role." + ascii_lower(role); }
// The role's length first, so a dot inside either name cannot make two pairs share a key.
std::string member_key(std::string_view role, std::string_view user) {
  const std::string r = ascii_lower(role);
  return "member." + std::to_string(r.size()) + "." + r + "." + ascii_lower(user);
}

bool role_exists(Db& db, std::string_view role) {
  return ascii_lower(role) == kDbOwner || meta_get(db, role_key(role)).has_value();
}

void check_name(std::string_view name, const char* what) {
  if (name.empty() || name.size() > 128) {
    throw Error(ErrorKind::EmuSchema,
                std::string(what) + " name must be 1 to 128 characters, got '" + std::string(name) + "'");
  }
}

[[noreturn]] void no_role(std::string_view role) {
  throw Error(ErrorKind::EmuUnknownObject,
              "Cannot alter the role '" + std::string(role) +
                  "', because it does not exist or you do not have permission. (roles exist once "
                  "enable_cdc names them as role_name; db_owner always does)",
              15151);
}

}  // namespace

void create_user(Db& db, std::string_view name, const std::vector<std::string>& roles) {
  check_name(name, "user");
  if (ascii_lower(name) == "dbo" || find_user(db, name)) {
    throw Error(ErrorKind::EmuSchema,
                "User, group, or role '" + std::string(name) + "' already exists in the current database.", 15023);
  }
  for (const auto& r : roles) {
    if (!role_exists(db, r)) no_role(r);
  }
  meta_set(db, user_key(name), std::string(name));
  for (const auto& r : roles) meta_set(db, member_key(r, name), "1");
}

void add_role_member(Db& db, std::string_view role, std::string_view user) {
  if (!role_exists(db, role)) no_role(role);
  if (!find_user(db, user)) {
    throw Error(ErrorKind::EmuUnknownObject,
                "Cannot add the principal '" + std::string(user) +
                    "', because it does not exist or you do not have permission. (create_user first)",
                15151);
  }
  meta_set(db, member_key(role, user), "1");
}

void set_gating_role(Db& db, std::int64_t change_table_id, std::string_view role) {
  check_name(role, "role");
  if (!role_exists(db, role)) meta_set(db, role_key(role), std::string(role));
  db.prepare("UPDATE \"cdc.change_tables\" SET role_name = ? WHERE object_id = ?")
      .bind(1, role)
      .bind(2, change_table_id)
      .run();
}

std::optional<std::string> gating_role(Db& db, std::int64_t change_table_id) {
  auto st = db.prepare("SELECT role_name FROM \"cdc.change_tables\" WHERE object_id = ?");
  st.bind(1, change_table_id);
  if (!st.step() || st.is_null(0)) return std::nullopt;
  return st.text(0);
}

std::optional<std::string> find_user(Db& db, std::string_view name) { return meta_get(db, user_key(name)); }

bool may_read(Db& db, const std::optional<std::string>& user, std::int64_t change_table_id) {
  if (!user || meta_get(db, member_key(kDbOwner, *user))) return true;
  const auto role = gating_role(db, change_table_id);
  return !role || meta_get(db, member_key(*role, *user)).has_value();
}

void select_denied(std::string_view object, std::string_view database) { select_denied_in(object, database, "cdc"); }

void select_denied_in(std::string_view object, std::string_view database, std::string_view schema) {
  throw Error(ErrorKind::EmuPermission,
              "The SELECT permission was denied on the object '" + std::string(object) + "', database '" +
                  std::string(database) + "', schema '" + std::string(schema) + "'.",
              229);
}

namespace {

std::string login_key(std::string_view login) { return "login." + ascii_lower(login); }
std::string login_user_key(std::string_view login) { return "login_user." + ascii_lower(login); }
// The securable's length first, as member_key does, so no two pairs share a key.
std::string grant_prefix(std::string_view securable) {
  const std::string s = ascii_lower(securable);
  return "grant.select." + std::to_string(s.size()) + "." + s + ".";
}

std::string to_hex(std::string_view bytes) {
  static const char* const kDigits = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 0xF];
  }
  return out;
}

std::string from_hex(std::string_view hex) {
  const auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw Error(ErrorKind::Corrupt, "a login's hash in emu_meta is not hexadecimal");
  };
  if (hex.size() % 2 != 0) throw Error(ErrorKind::Corrupt, "a login's hash in emu_meta has an odd length");
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) out += static_cast<char>(nibble(hex[i]) * 16 + nibble(hex[i + 1]));
  return out;
}

// The principals granted SELECT on `securable`.
std::vector<std::string> grantees(Db& db, std::string_view securable) {
  const std::string prefix = grant_prefix(securable);
  auto st = db.prepare("SELECT value FROM emu_meta WHERE key >= ? AND key < ?");
  st.bind(1, std::string_view(prefix));
  const std::string end = prefix.substr(0, prefix.size() - 1) + "/";  // '/' follows '.'
  st.bind(2, std::string_view(end));
  std::vector<std::string> out;
  while (st.step()) out.push_back(st.text(0));
  return out;
}

}  // namespace

void create_login(Db& db, const LoginRecord& login) {
  check_name(login.name, "login");
  if (find_login(db, login.name) || ascii_lower(login.name) == "sa") {
    throw Error(ErrorKind::EmuSchema, "The server principal '" + login.name + "' already exists.", 15025);
  }
  meta_set(
      db, login_key(login.name),
      login.name + "\n" + std::to_string(login.iterations) + "\n" + to_hex(login.salt) + "\n" + to_hex(login.hash));
}

std::optional<LoginRecord> find_login(Db& db, std::string_view name) {
  const auto value = meta_get(db, login_key(name));
  if (!value) return std::nullopt;
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (std::size_t at = value->find('\n'); at != std::string::npos; at = value->find('\n', from)) {
    parts.push_back(value->substr(from, at - from));
    from = at + 1;
  }
  parts.push_back(value->substr(from));
  if (parts.size() != 4 || parts[1].empty() || parts[1].find_first_not_of("0123456789") != std::string::npos ||
      parts[1].size() > 9) {
    throw Error(ErrorKind::Corrupt, "login '" + std::string(name) + "' in emu_meta is malformed");
  }
  return LoginRecord{parts[0], from_hex(parts[2]), from_hex(parts[3]),
                     static_cast<std::uint32_t>(std::stoul(parts[1]))};
}

void map_user_to_login(Db& db, std::string_view user, std::string_view login) {
  if (!find_login(db, login)) {
    throw Error(ErrorKind::EmuUnknownObject,
                "'" + std::string(login) + "' is not a valid login or you do not have permission.", 15007);
  }
  meta_set(db, login_user_key(login), std::string(user));
}

std::optional<std::string> user_of_login(Db& db, std::string_view login) {
  if (const auto mapped = meta_get(db, login_user_key(login))) return find_user(db, *mapped);
  return find_user(db, login);
}

void grant_select(Db& db, std::string_view securable, std::string_view principal) {
  const auto user = find_user(db, principal);
  const bool role = ascii_lower(principal) != kDbOwner && meta_get(db, role_key(principal)).has_value();
  if (!user && !role) {
    throw Error(ErrorKind::EmuUnknownObject,
                "Cannot find the user '" + std::string(principal) +
                    "', because it does not exist or you do not have permission.",
                15151);
  }
  meta_set(db, grant_prefix(securable) + ascii_lower(principal), user ? *user : std::string(principal));
}

bool may_select(Db& db, const std::optional<std::string>& user, std::string_view schema, std::string_view name) {
  if (!user || meta_get(db, member_key(kDbOwner, *user))) return true;
  const std::string object = "object:" + std::string(schema) + "." + std::string(name);
  for (const std::string& securable : {object, "schema:" + std::string(schema)}) {
    for (const std::string& p : grantees(db, securable)) {
      if (ascii_lower(p) == ascii_lower(*user) || meta_get(db, member_key(p, *user))) return true;
    }
  }
  return false;
}

}  // namespace mssqlcdc::emu
