// permissions.hpp: database users, role membership and the gating role of a capture instance
// (docs/emulator.md, decision 1280). SQL Server lets sysadmin and db_owner read every capture
// instance; anyone else needs SELECT on the captured columns and, when the instance names a
// gating role (sp_cdc_enable_table @role_name), membership in it. The emulator keeps users and
// memberships as emu_meta rows and the role in cdc.change_tables.role_name, so the file format
// does not change. Reading as nobody (no user) is dbo, today's behaviour.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mssqlcdc/emu/sqlite.hpp"

namespace mssqlcdc::emu {

// The fixed role whose members read every capture instance.
inline constexpr const char* kDbOwner = "db_owner";

// The calls that write need the caller's write transaction on `db`.
// Creates a database user that is a member of `roles` (each db_owner or a role that exists).
// EmuSchema 15023 when the name is taken, EmuUnknownObject 15151 for an unknown role.
void create_user(Db& db, std::string_view name, const std::vector<std::string>& roles);
// ALTER ROLE role ADD MEMBER user; EmuUnknownObject 15151 for an unknown role or user.
void add_role_member(Db& db, std::string_view role, std::string_view user);
// The instance's gating role, created when it does not exist (sp_cdc_enable_table does so).
void set_gating_role(Db& db, std::int64_t change_table_id, std::string_view role);
// The instance's gating role, or nothing when it has none.
std::optional<std::string> gating_role(Db& db, std::int64_t change_table_id);

// The user's name as created, or nothing when no such user exists.
std::optional<std::string> find_user(Db& db, std::string_view name);
// Whether `user` (nothing: dbo) may read the change data of the instance with that change table.
bool may_read(Db& db, const std::optional<std::string>& user, std::int64_t change_table_id);

// Error 229 for `object` in schema cdc, as SQL Server words it (EmuPermission).
[[noreturn]] void select_denied(std::string_view object, std::string_view database);

// A SQL login kept in the file (CREATE LOGIN over TDS): its salted PBKDF2-HMAC-SHA256 hash,
// never the password. `salt` and `hash` are raw bytes.
struct LoginRecord {
  std::string name;
  std::string salt;
  std::string hash;
  std::uint32_t iterations = 0;
};

// CREATE LOGIN: keeps `login` (hex in emu_meta). EmuSchema 15025 when the name is taken.
void create_login(Db& db, const LoginRecord& login);
// The login of that name (without case), or nothing.
std::optional<LoginRecord> find_login(Db& db, std::string_view name);
// CREATE USER user FOR LOGIN login: the user a connection of that login acts as.
// EmuUnknownObject 15007 when no such login exists; the user must exist already.
void map_user_to_login(Db& db, std::string_view user, std::string_view login);
// The user mapped to `login`, else the user named as the login, else nothing (dbo).
std::optional<std::string> user_of_login(Db& db, std::string_view login);

// GRANT SELECT ON `securable` TO `principal`: `securable` is "object:<schema>.<name>" or
// "schema:<name>"; the principal a user or a role. EmuUnknownObject 15151 for an unknown one.
void grant_select(Db& db, std::string_view securable, std::string_view principal);
// Whether `user` (nothing: dbo) may SELECT from table `schema`.`name`: dbo and db_owner always;
// anyone else by a SELECT grant on the table or its schema to the user or a role it is in.
bool may_select(Db& db, const std::optional<std::string>& user, std::string_view schema, std::string_view name);
// Error 229 for `object` in `schema`, as SQL Server words it (EmuPermission).
[[noreturn]] void select_denied_in(std::string_view object, std::string_view database, std::string_view schema);

}  // namespace mssqlcdc::emu
