// security.hpp: the principal statements a least-privilege setup runs (docs/emulator.md):
// CREATE LOGIN name WITH PASSWORD = '...', CREATE USER name [FOR|FROM LOGIN login | WITHOUT
// LOGIN], GRANT SELECT ON [OBJECT::|SCHEMA::]name TO principal, and ALTER ROLE role ADD MEMBER
// user. Logins, users, grants and memberships are the emulator file's (emu/permissions.hpp); a
// login keeps only a salted PBKDF2-HMAC-SHA256 hash of its password, and no error or message
// quotes the password.
#pragma once

#include <vector>

#include "statements.hpp"

namespace mssqlcdc::tds {

struct SqlToken;
class Storage;

// Whether `tokens` is one of the statements above (its first words).
[[nodiscard]] bool is_security_statement(const std::vector<SqlToken>& tokens);

// Runs it as dbo, outside any transaction of the connection, with SQL Server's errors: 15025
// (a taken login), 15023 (a taken user), 15007 (no such login), 15151 (no such principal,
// object or schema), 15247 for a caller that is a database user, 102 for other syntax.
void run_security_statement(Storage& storage, const std::vector<SqlToken>& tokens, const Params& params);

}  // namespace mssqlcdc::tds
