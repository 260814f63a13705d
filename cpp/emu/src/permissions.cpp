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

void select_denied(std::string_view object, std::string_view database) {
  throw Error(ErrorKind::EmuPermission,
              "The SELECT permission was denied on the object '" + std::string(object) + "', database '" +
                  std::string(database) + "', schema 'cdc'.",
              229);
}

}  // namespace mssqlcdc::emu
