// identity.cpp: identity columns: the clause of a create_table type string, its definition in
// emu_meta and the next value an insert takes.
#include "mssqlcdc/emu/identity.hpp"

#include <limits>
#include <sstream>

#include "ascii.hpp"
#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

[[noreturn]] void bad_clause(const std::string& what, const std::string& text) {
  throw Error(ErrorKind::EmuSchema, what + ": '" + text +
                                        "' is not an identity clause; write 'int identity' or "
                                        "'int identity(seed, increment)' with whole numbers");
}

std::int64_t parse_whole(const std::string& text, const std::string& what, const std::string& clause) {
  const std::string t = ascii_trim(text);
  std::size_t pos = 0;
  long long v = 0;
  try {
    v = std::stoll(t, &pos);
  } catch (const std::exception&) {
    bad_clause(what, clause);
  }
  if (t.empty() || pos != t.size()) bad_clause(what, clause);
  return v;
}

std::pair<std::int64_t, std::int64_t> range_of(const SqlType& type) {
  switch (type.base) {
    case Base::TinyInt: return {0, 255};
    case Base::SmallInt: return {-32768, 32767};
    case Base::Int: return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
    default: return {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
  }
}

std::string key(std::int64_t table_id) { return "identity." + std::to_string(table_id); }
std::string last_key(std::int64_t table_id) { return "identity_last." + std::to_string(table_id); }

}  // namespace

std::optional<Identity> split_identity(std::string& type_text, const std::string& what) {
  const std::string low = ascii_lower(type_text);
  const auto at = low.find("identity");
  if (at == std::string::npos) return std::nullopt;
  const std::string clause = ascii_trim(type_text.substr(at));
  std::string rest = ascii_trim(low.substr(at + 8));
  Identity id;
  if (!rest.empty()) {
    if (rest.front() != '(' || rest.back() != ')') bad_clause(what, clause);
    rest = rest.substr(1, rest.size() - 2);
    const auto comma = rest.find(',');
    // SQL Server takes both seed and increment or neither.
    if (comma == std::string::npos) bad_clause(what, clause);
    id.seed = parse_whole(rest.substr(0, comma), what, clause);
    id.increment = parse_whole(rest.substr(comma + 1), what, clause);
  }
  if (id.increment == 0) {
    throw Error(ErrorKind::EmuSchema, what +
                                          ": an identity increment of 0 gives every row the same value; use a "
                                          "nonzero increment");
  }
  type_text = ascii_trim(type_text.substr(0, at));
  return id;
}

void check_identity(const Identity& identity, const SqlType& type, const std::string& what) {
  const auto f = type.family();
  if (f != Family::Integer) {
    // decimal(p,0) and numeric(p,0) are identity types on SQL Server too; the emulator keeps
    // identity values in 64 bits, so it takes the integer types only.
    const std::string extra = f == Family::Exact ? " (decimal and numeric identities are not modelled)" : "";
    throw Error(ErrorKind::EmuSchema,
                what + ": an identity column must be tinyint, smallint, int or bigint, not " + type.canonical() +
                    extra + " (error 2749); change the column's type",
                2749);
  }
  const auto [lo, hi] = range_of(type);
  if (identity.seed < lo || identity.seed > hi || identity.increment < lo || identity.increment > hi) {
    throw Error(ErrorKind::EmuSchema, what + ": identity(" + std::to_string(identity.seed) + ", " +
                                          std::to_string(identity.increment) + ") does not fit " + type.canonical() +
                                          "; pick a seed and increment inside its range");
  }
}

void store_identity(Db& db, std::int64_t table_id, const Identity& identity) {
  meta_set(db, key(table_id),
           std::to_string(identity.column_id) + " " + std::to_string(identity.seed) + " " +
               std::to_string(identity.increment));
}

std::optional<Identity> load_identity(Db& db, std::int64_t table_id) {
  const auto stored = meta_get(db, key(table_id));
  if (!stored) return std::nullopt;
  Identity id;
  std::istringstream in(*stored);
  if (!(in >> id.column_id >> id.seed >> id.increment)) {
    throw Error(ErrorKind::Corrupt, db.path().string() + ": emulator metadata '" + key(table_id) + "' is malformed");
  }
  return id;
}

std::int64_t next_identity(Db& db, std::int64_t table_id, const Identity& identity, const SqlType& type,
                           const std::string& what) {
  const auto last = meta_get(db, last_key(table_id));
  const __int128 next = last ? static_cast<__int128>(std::stoll(*last)) + identity.increment : identity.seed;
  const auto [lo, hi] = range_of(type);
  if (next < lo || next > hi) {
    throw Error(ErrorKind::EmuConstraint,
                what + ": Arithmetic overflow error converting IDENTITY to data type " + type.canonical() +
                    " (error 8115); the identity has used up its type, widen the column",
                8115);
  }
  const auto value = static_cast<std::int64_t>(next);
  meta_set(db, last_key(table_id), std::to_string(value));
  return value;
}

}  // namespace mssqlcdc::emu
