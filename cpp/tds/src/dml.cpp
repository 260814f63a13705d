// dml.cpp: INSERT, UPDATE and DELETE over the wire, each one emulator commit, or a write of the
// connection's open transaction (procedures.hpp, transactions.cpp). A WHERE that names the whole
// key changes that row; any other WHERE finds its rows' keys through the query engine first.
#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/error.hpp"
#include "mssqlcdc/utc_time.hpp"
#include "procedures.hpp"
#include "scalar_assign.hpp"
#include "stored.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {
namespace {

[[noreturn]] void sql_error(int number, const std::string& text) { throw Error(ErrorKind::Sql, text, number); }

[[noreturn]] void syntax_error_at(const std::vector<SqlToken>& tokens, std::size_t at) {
  sql_error(102, "Incorrect syntax near '" + (at < tokens.size() ? tokens[at].text : std::string(";")) + "'.");
}

constexpr std::uint16_t kCmdInsert = 0xC3;
constexpr std::uint16_t kCmdDelete = 0xC4;
constexpr std::uint16_t kCmdUpdate = 0xC5;
constexpr std::int64_t kMicrosPerDay = 86'400'000'000;

// The statement being read: its tokens, a position, and the table it writes.
struct Statement {
  const std::vector<SqlToken>& tokens;
  const Params& params;
  std::size_t at = 0;
  emu::Table table;
  std::string object;                          // database.schema.table, as SQL Server's messages name it
  std::string verb;                            // INSERT, UPDATE: ends the 515 message
  const QueryRows* query = nullptr;            // runs a SELECT: how a WHERE that is not the key finds rows
  std::size_t target_from = 0, target_to = 0;  // the target's tokens, for that SELECT

  [[nodiscard]] bool at_end() const { return at >= tokens.size(); }
  [[nodiscard]] bool word(std::string_view w) const { return !at_end() && tokens[at].is(w); }
  [[nodiscard]] bool symbol(char c) const { return !at_end() && tokens[at].is_symbol(c); }
  void expect_word(std::string_view w) {
    if (!word(w)) syntax_error_at(tokens, at);
    ++at;
  }
  void expect_symbol(char c) {
    if (!symbol(c)) syntax_error_at(tokens, at);
    ++at;
  }
};

// The target: table, schema.table or database.schema.table; 208 for anything else.
void read_target(Statement& s, emu::Db& db, const std::string& database) {
  if (s.at_end() || !s.tokens[s.at].is_name()) syntax_error_at(s.tokens, s.at);
  std::vector<std::string> parts{s.tokens[s.at++].text};
  while (s.symbol('.') && s.at + 1 < s.tokens.size() && s.tokens[s.at + 1].is_name()) {
    parts.push_back(s.tokens[s.at + 1].text);
    s.at += 2;
  }
  std::string written;
  for (const auto& p : parts) written += (written.empty() ? "" : ".") + p;
  const bool other_db = parts.size() == 3 && !emu::iequals(parts[0], database);
  std::optional<emu::Table> t;
  if (parts.size() <= 3 && !other_db) {
    const std::string name = parts.size() == 1 ? parts[0] : parts[parts.size() - 2] + "." + parts.back();
    try {
      t = emu::find_table(db, name);
    } catch (const Error&) {
      t.reset();  // a name the emulator cannot hold names no table either
    }
  }
  if (!t) sql_error(208, "Invalid object name '" + written + "'.");
  s.table = std::move(*t);
  s.object = database + "." + s.table.full_name();
}

const emu::Column& column(const Statement& s, const SqlToken& name) {
  const emu::Column* c = name.is_name() ? s.table.find(name.text) : nullptr;
  if (c == nullptr) sql_error(207, "Invalid column name '" + name.text + "'.");
  return *c;
}

// Characters as the column counts them: UTF-16 units for n-types, code points for the others.
std::size_t text_length(const std::string& s, bool national) {
  if (national) return utf16_units(s);
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string first_chars(const std::string& s, std::size_t n) {
  std::size_t i = 0;
  for (std::size_t seen = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && seen++ == n) break;
  }
  return s.substr(0, i);
}

// SQL Server's implicit conversion of a character literal to a date and time: ISO 8601 forms.
std::optional<std::int64_t> text_ticks(std::string text) {
  // hh:mm[:ss[.fffffff]] alone is a time on 1900-01-01, the types' default date.
  if (text.size() >= 5 && text[2] == ':') text = "1900-01-01T" + text + (text.size() == 5 ? ":00" : "");
  if (text.size() == 10) text += "T00:00:00";
  if (text.size() > 10 && text[10] == ' ') text[10] = 'T';
  // Up to seven fractional digits (100 ns), as datetime2 takes them; the rest is whole seconds.
  std::int64_t fraction = 0;
  if (text.size() > 19 && text[19] == '.') {
    std::size_t end = 20;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    const std::string digits = text.substr(20, end - 20);
    if (digits.empty() || digits.size() > 7) return std::nullopt;
    fraction = std::stoll((digits + "000000").substr(0, 7));
    text.erase(19, end - 19);
  }
  const auto millis = utc::parse_millis(text, utc::Zone::Forbidden);
  if (!millis) return std::nullopt;
  return *millis * 10'000 + fraction;
}

// 16 bytes in SQL Server's wire order (the first three groups little-endian) as GUID text.
std::string guid_text(const Bytes& b) {
  static const int order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (int k = 0; k < 16; ++k) {
    if (k == 4 || k == 6 || k == 8 || k == 10) out += '-';
    const std::uint8_t x = b[static_cast<std::size_t>(order[k])];
    out += hex[x >> 4];
    out += hex[x & 15];
  }
  return out;
}

std::string decimal_text(__int128 unscaled, int scale) {
  const bool negative = unscaled < 0;
  unsigned __int128 u = negative ? static_cast<unsigned __int128>(-unscaled) : static_cast<unsigned __int128>(unscaled);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  } while (u != 0);
  if (scale > 0) {
    if (digits.size() <= static_cast<std::size_t>(scale))
      digits.insert(0, static_cast<std::size_t>(scale) + 1 - digits.size(), '0');
    digits.insert(digits.size() - static_cast<std::size_t>(scale), 1, '.');
  }
  return (negative ? "-" : "") + digits;
}

// The column types whose values SQL Server's implicit conversion makes (decision 1451); the
// others (xml, sql_variant, rowversion and the opaque types) go to the emulator as written.
bool converts_into(emu::Base base) {
  using B = emu::Base;
  return base != B::Xml && base != B::RowVersion && base != B::SqlVariant && base != B::HierarchyId &&
         base != B::Geometry && base != B::Geography;
}

// A wire value as the emulator's caller value for column `c`: converted to the column's type
// as SQL Server's INSERT and UPDATE convert (245, 248, 8114, 8115, 257, 206...), with 2628 for
// text or bytes longer than the column; the emulator's coercion checks the rest.
emu::Value to_emu(const Statement& s, const emu::Column& c, const TypedValue& written) {
  const TypedValue v = converts_into(c.type.base) ? assigned(column_type(c.type), written) : written;
  using B = emu::Base;
  using K = emu::Value::Kind;
  const B base = c.type.base;
  const bool temporal = base == B::Date || base == B::Time || base == B::DateTime || base == B::SmallDateTime ||
                        base == B::DateTime2 || base == B::DateTimeOffset;
  const bool character = base == B::Char || base == B::VarChar || base == B::NChar || base == B::NVarChar ||
                         base == B::Text || base == B::NText;
  emu::Value out;
  const auto as_time = [&](emu::Micros t) {
    out.kind = base == B::Date ? K::Date : base == B::Time ? K::Time : K::DateTime;
    const std::int64_t day = t >= 0 ? t / kMicrosPerDay : -((-t + kMicrosPerDay - 1) / kMicrosPerDay);
    out.i = base == B::Date ? day : base == B::Time ? t - day * kMicrosPerDay : t;
  };
  if (const auto* i = std::get_if<std::int64_t>(&v.value)) {
    out.kind = character ? K::Text : K::Int;
    out.i = *i;
    if (character) out.s = std::to_string(*i);
  } else if (const auto* b = std::get_if<bool>(&v.value)) {
    out.kind = K::Bool;
    out.i = *b ? 1 : 0;
  } else if (const auto* d = std::get_if<Decimal>(&v.value)) {
    out.kind = base == B::Float || base == B::Real ? K::Float : K::Decimal;
    out.s = decimal_text(d->unscaled, v.type.scale);
    out.f = std::stod(out.s);
  } else if (const auto* f = std::get_if<double>(&v.value)) {
    out.kind = K::Float;
    out.f = *f;
  } else if (const auto* bytes = std::get_if<Bytes>(&v.value)) {
    if (base == B::UniqueIdentifier && bytes->size() == 16) {
      out.kind = K::Text;
      out.s = guid_text(*bytes);
    } else {
      out.kind = K::Bytes;
      out.s.assign(bytes->begin(), bytes->end());
    }
  } else if (const auto* text = std::get_if<std::string>(&v.value)) {
    out.kind = K::Text;
    out.s = *text;
    if (temporal) {
      const auto t = text_ticks(*text);
      if (!t) sql_error(241, "Conversion failed when converting date and/or time from character string.");
      as_time(emu::ticks_to_micros(*t));
      if (base != B::Date) out.sub_ticks = emu::ticks_beyond_micros(*t);
    }
  } else if (const auto* dt = std::get_if<DateTime2>(&v.value)) {
    // Whole microseconds, then the 100-ns ticks beyond them for the types that keep them.
    const std::int64_t ticks = datetime2_to_ticks(*dt);
    as_time(emu::ticks_to_micros(ticks));
    if (base != B::Date) out.sub_ticks = emu::ticks_beyond_micros(ticks);
  } else if (const auto* dto = std::get_if<DateTimeOffset>(&v.value)) {
    const std::int64_t ticks = datetime2_to_ticks(dto->utc);
    out.kind = K::DateTimeTz;
    out.i = emu::ticks_to_micros(ticks);
    out.sub_ticks = emu::ticks_beyond_micros(ticks);
  }
  const bool sized = c.type.length > 0 && (character || base == B::Binary || base == B::VarBinary);
  if (sized && (out.kind == K::Text || out.kind == K::Bytes)) {
    const bool national = base == B::NChar || base == B::NVarChar;
    const std::size_t n = out.kind == K::Bytes ? out.s.size() : text_length(out.s, national);
    if (n > static_cast<std::size_t>(c.type.length)) {
      const auto limit = static_cast<std::size_t>(c.type.length);
      const std::string cut = out.kind == K::Bytes ? out.s.substr(0, limit) : first_chars(out.s, limit);
      sql_error(2628, "String or binary data would be truncated in table '" + s.object + "', column '" + c.name +
                          "'. Truncated value: '" + cut + "'.");
    }
  }
  return out;
}

[[noreturn]] void null_into(const Statement& s, const emu::Column& c) {
  sql_error(515, "Cannot insert the value NULL into column '" + c.name + "', table '" + s.object +
                     "'; column does not allow nulls. " + s.verb + " fails.");
}

using Pairs = std::vector<std::pair<const emu::Column*, TypedValue>>;

// col = operand [AND col = operand]...: the key (or a heap's filter) of the one row to change;
// nullopt when the WHERE clause is something else (or absent) on a table with a key, which
// matching_keys() then answers. `s.at` is left where it was in that case.
std::optional<Pairs> where_key(Statement& s) {
  const std::size_t start = s.at;
  const auto other = [&]() -> std::optional<Pairs> {
    if (s.table.heap) {
      sql_error(50000, "The emulator's TDS front end changes rows of the keyless table " + s.table.full_name() +
                           " by column = value [AND ...] only: write the WHERE clause so, or change the rows "
                           "with Emulator.commit.");
    }
    s.at = start;
    return std::nullopt;
  };
  if (!s.word("WHERE")) return other();
  ++s.at;
  Pairs out;
  while (true) {
    if (s.at_end()) syntax_error_at(s.tokens, s.at);
    if (!s.tokens[s.at].is_name() || s.at + 1 >= s.tokens.size() || !s.tokens[s.at + 1].is_symbol('=')) return other();
    const emu::Column* c = s.table.find(s.tokens[s.at].text);
    if (c == nullptr) return other();  // the SELECT names the unknown column (207)
    s.at += 2;
    const std::size_t value_at = s.at;
    TypedValue v;
    try {
      v = operand(s.tokens, s.at, s.params);
    } catch (const Error&) {
      s.at = value_at;
      return other();  // an expression, not an operand
    }
    out.emplace_back(c, std::move(v));
    if (s.at_end()) break;
    if (!s.word("AND")) return other();
    ++s.at;
  }
  if (!s.table.heap) {
    const auto key = s.table.key();
    const bool whole_key =
        out.size() == key.size() && std::all_of(key.begin(), key.end(), [&](const emu::Column* k) {
          return std::count_if(out.begin(), out.end(), [&](const auto& p) { return p.first == k; }) == 1;
        });
    if (!whole_key) return other();
  }
  return out;
}

// The keys of the rows a WHERE clause (from `s.at` to the end; none: every row) selects, read by
// the query engine as `SELECT key FROM target WHERE ...`, so any condition a SELECT takes works.
// `computed` (SET values that read the row's columns) are selected after the key, in order,
// and come back after the key's pairs, named by their column.
std::vector<Pairs> matching_keys(
    Statement& s, const std::vector<std::pair<const emu::Column*, std::vector<SqlToken>>>& computed = {}) {
  const auto key = s.table.key();
  std::vector<SqlToken> select{SqlToken{TokenKind::Word, "SELECT"}};
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (i > 0) select.push_back(SqlToken{TokenKind::Symbol, ","});
    select.push_back(SqlToken{TokenKind::QuotedName, key[i]->name});
  }
  for (const auto& [c, e] : computed) {
    select.push_back(SqlToken{TokenKind::Symbol, ","});
    select.insert(select.end(), e.begin(), e.end());
  }
  select.push_back(SqlToken{TokenKind::Word, "FROM"});
  select.insert(select.end(), s.tokens.begin() + static_cast<std::ptrdiff_t>(s.target_from),
                s.tokens.begin() + static_cast<std::ptrdiff_t>(s.target_to));
  select.insert(select.end(), s.tokens.begin() + static_cast<std::ptrdiff_t>(s.at), s.tokens.end());
  s.at = s.tokens.size();
  std::vector<Pairs> out;
  for (auto& row : (*s.query)(select)) {
    Pairs k;
    for (std::size_t i = 0; i < key.size(); ++i) k.emplace_back(key[i], std::move(row[i]));
    for (std::size_t i = 0; i < computed.size(); ++i) k.emplace_back(computed[i].first, std::move(row[key.size() + i]));
    out.push_back(std::move(k));
  }
  return out;
}

bool same(const emu::Value& a, const emu::Value& b) {
  return a.kind == b.kind && a.i == b.i && a.s == b.s && a.f == b.f;
}

bool any_null(const std::vector<std::pair<const emu::Column*, TypedValue>>& where) {
  return std::any_of(where.begin(), where.end(), [](const auto& p) { return is_null(p.second.value); });
}

emu::Row row_of(const Statement& s, const std::vector<std::pair<const emu::Column*, TypedValue>>& values) {
  emu::Row row;
  for (const auto& [c, v] : values) row.emplace_back(c->name, to_emu(s, *c, v));
  return row;
}

// SQL Server's 2627 names the key values without the column names the emulator's message has.
std::string duplicate_key(const std::string& emulator_message) {
  const auto from = emulator_message.find("with key (");
  const auto to = emulator_message.find(") already exists");
  if (from == std::string::npos || to == std::string::npos) return "";
  std::string out;
  std::string part;
  const std::string inner = emulator_message.substr(from + 10, to - from - 10);
  std::size_t start = 0;
  while (start <= inner.size()) {
    const auto comma = inner.find(", ", start);
    part = inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    part = part.substr(part.find('=') + 1);
    if (part.size() >= 2 && part.front() == '\'' && part.back() == '\'') part = part.substr(1, part.size() - 2);
    out += (out.empty() ? "" : ", ") + part;
    if (comma == std::string::npos) break;
    start = comma + 2;
  }
  return out;
}

// Commits the changes as one transaction, or writes them in the open one; false when the row
// they name is not there (the statement then changes nothing, and SQL Server reports 0 rows).
bool commit(Storage& storage, const Statement& s, const std::vector<emu::Change>& changes) {
  try {
    storage.write(changes);
    return true;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::EmuConstraint && e.number() == 0) return false;  // no row with that key
    if (e.number() == 2627) {
      sql_error(2627, "Violation of PRIMARY KEY constraint 'PK_" + s.table.name +
                          "'. Cannot insert duplicate key in object '" + s.table.full_name() +
                          "'. The duplicate key value is (" + duplicate_key(e.what()) + ").");
    }
    if (e.number() == 544) {
      sql_error(544, "Cannot insert explicit value for identity column in table '" + s.table.name +
                         "' when IDENTITY_INSERT is set to OFF.");
    }
    if (e.number() == 271) {
      const std::string text = e.what();  // SQL Server's text is the part before " (error 271)"
      const auto from = text.find("The column");
      sql_error(271, text.substr(from, text.find(" (error", from) - from) + ".");
    }
    if (e.number() == 8102 && s.table.identity) {
      sql_error(8102, "Cannot update identity column '" + s.table.by_id(s.table.identity->column_id)->name + "'.");
    }
    if (e.number() == 515) {
      const std::string text = e.what();  // SQL Server's text sits between the table name and " (error 515)"
      const auto from = text.find("Cannot insert the value NULL");
      if (from != std::string::npos) sql_error(515, text.substr(from, text.find(" (error", from) - from));
    }
    if (e.number() != 0) sql_error(e.number(), e.what());
    sql_error(e.kind() == ErrorKind::Type ? 8114 : 50000, e.what());
  }
}

// The insert of one row; a key column left out or NULL is error 515 (an identity fills itself).
emu::Change insert_of(const Statement& s, const Pairs& values) {
  for (const emu::Column* k : s.table.key()) {
    if (k->is_identity) continue;
    const auto it = std::find_if(values.begin(), values.end(), [&](const auto& p) { return p.first == k; });
    if (it == values.end() || is_null(it->second.value)) null_into(s, *k);
  }
  return emu::Change{emu::Change::Kind::Insert, s.table.full_name(), row_of(s, values), std::nullopt};
}

// INSERT ... SELECT: the query runs to its end first and its rows are inserted after, in one
// transaction, so a SELECT that reads the target sees none of the statement's own inserts (as
// SQL Server's plans guarantee for INSERT ... SELECT from the same table).
WriteCount insert_selected(Storage& storage, Statement& s, const std::vector<const emu::Column*>& columns) {
  const std::vector<SqlToken> select(s.tokens.begin() + static_cast<std::ptrdiff_t>(s.at), s.tokens.end());
  s.at = s.tokens.size();
  std::vector<emu::Change> changes;
  for (auto& row : (*s.query)(select)) {
    if (row.size() < columns.size()) {
      sql_error(120,
                "The select list for the INSERT statement contains fewer items than the insert list. The number "
                "of SELECT values must match the number of INSERT columns.");
    }
    if (row.size() > columns.size()) {
      sql_error(121,
                "The select list for the INSERT statement contains more items than the insert list. The number "
                "of SELECT values must match the number of INSERT columns.");
    }
    Pairs values;
    for (std::size_t i = 0; i < columns.size(); ++i) values.emplace_back(columns[i], std::move(row[i]));
    changes.push_back(insert_of(s, values));
  }
  if (!changes.empty()) (void)commit(storage, s, changes);
  return WriteCount{changes.size(), kCmdInsert};
}

WriteCount insert(Storage& storage, Statement& s) {
  s.verb = "INSERT";
  std::vector<const emu::Column*> columns;
  if (s.symbol('(')) {
    ++s.at;
    do {
      if (s.at_end()) syntax_error_at(s.tokens, s.at);
      columns.push_back(&column(s, s.tokens[s.at++]));
    } while (s.symbol(',') && ++s.at != 0);
    s.expect_symbol(')');
  } else {
    for (const auto& c : s.table.columns) {
      // The server fills rowversion and identity columns.
      if (c.type.base != emu::Base::RowVersion && !c.is_identity && !c.computed) columns.push_back(&c);
    }
  }
  if (s.word("SELECT")) return insert_selected(storage, s, columns);
  s.expect_word("VALUES");
  std::vector<emu::Change> changes;
  do {
    s.expect_symbol('(');
    std::vector<std::pair<const emu::Column*, TypedValue>> values;
    do {
      TypedValue v = operand(s.tokens, s.at, s.params);
      if (values.size() == columns.size()) {
        sql_error(110,
                  "There are fewer columns in the INSERT statement than values specified in the VALUES clause. "
                  "The number of values in the VALUES clause must match the number of columns specified in the "
                  "INSERT statement.");
      }
      values.emplace_back(columns[values.size()], std::move(v));
    } while (s.symbol(',') && ++s.at != 0);
    s.expect_symbol(')');
    if (values.size() < columns.size()) {
      sql_error(109,
                "There are more columns in the INSERT statement than values specified in the VALUES clause. "
                "The number of values in the VALUES clause must match the number of columns specified in the "
                "INSERT statement.");
    }
    changes.push_back(insert_of(s, values));
  } while (s.symbol(',') && ++s.at != 0);
  if (!s.at_end()) syntax_error_at(s.tokens, s.at);
  (void)commit(storage, s, changes);
  return WriteCount{changes.size(), kCmdInsert};
}

// The change that sets `set` on the row whose key (or a heap's filter) is `where`.
emu::Change update_of(const Statement& s, const Pairs& set, const Pairs& where) {
  emu::Change change{emu::Change::Kind::Update, s.table.full_name(), {}, std::nullopt};
  if (s.table.heap) {
    change.row = row_of(s, set);
    change.old_key = row_of(s, where);
    return change;
  }
  // The row is named by its key; a key column SET to another value moves the row, which the
  // emulator takes as the new key with the old one.
  auto key = where;
  Pairs others;
  bool moves = false;
  for (const auto& [c, v] : set) {
    if (c->key_ordinal == 0) {
      others.emplace_back(c, v);
      continue;
    }
    if (is_null(v.value)) null_into(s, *c);
    auto it = std::find_if(key.begin(), key.end(), [&](const auto& p) { return p.first == c; });
    if (!same(to_emu(s, *c, v), to_emu(s, *c, it->second))) moves = true;
    it->second = v;
  }
  key.insert(key.end(), others.begin(), others.end());
  change.row = row_of(s, key);
  if (moves) change.old_key = row_of(s, where);
  return change;
}

WriteCount update(Storage& storage, Statement& s) {
  s.verb = "UPDATE";
  s.expect_word("SET");
  Pairs set;
  std::vector<std::pair<const emu::Column*, std::vector<SqlToken>>> computed;  // read the row's columns
  do {
    if (s.at_end()) syntax_error_at(s.tokens, s.at);
    const emu::Column& c = column(s, s.tokens[s.at++]);
    s.expect_symbol('=');
    if (s.symbol('(')) {  // left parenthesized by write_values.cpp: computed per row below
      const std::size_t from = s.at;
      for (int depth = 0; !s.at_end(); ++s.at) {
        if (s.tokens[s.at].is_symbol('(')) ++depth;
        if (s.tokens[s.at].is_symbol(')') && --depth == 0) break;
      }
      if (s.at_end()) syntax_error_at(s.tokens, s.at);
      ++s.at;
      computed.emplace_back(&c, std::vector<SqlToken>(s.tokens.begin() + static_cast<std::ptrdiff_t>(from),
                                                      s.tokens.begin() + static_cast<std::ptrdiff_t>(s.at)));
      continue;
    }
    set.emplace_back(&c, operand(s.tokens, s.at, s.params));
  } while (s.symbol(',') && ++s.at != 0);
  if (!computed.empty()) {
    if (s.table.heap) {
      sql_error(50000,
                "The emulator's TDS front end cannot compute SET values from the columns of the keyless "
                "table " +
                    s.table.full_name() + ": set constants, or change the rows with Emulator.commit.");
    }
    std::vector<emu::Change> changes;
    for (auto& row : matching_keys(s, computed)) {
      const auto key_end = row.begin() + static_cast<std::ptrdiff_t>(s.table.key().size());
      Pairs where(row.begin(), key_end);
      Pairs values = set;
      values.insert(values.end(), key_end, row.end());
      changes.push_back(update_of(s, values, where));
    }
    if (!changes.empty()) (void)commit(storage, s, changes);
    return WriteCount{changes.size(), kCmdUpdate};
  }
  if (const auto where = where_key(s)) {
    if (any_null(*where)) return WriteCount{0, kCmdUpdate};  // = NULL matches no row
    return WriteCount{commit(storage, s, {update_of(s, set, *where)}) ? 1U : 0U, kCmdUpdate};
  }
  // Any other WHERE: every matching row changes in one transaction, as one statement does.
  std::vector<emu::Change> changes;
  for (const auto& key : matching_keys(s)) changes.push_back(update_of(s, set, key));
  if (!changes.empty()) (void)commit(storage, s, changes);
  return WriteCount{changes.size(), kCmdUpdate};
}

WriteCount remove(Storage& storage, Statement& s) {
  if (const auto where = where_key(s)) {
    if (any_null(*where)) return WriteCount{0, kCmdDelete};
    const emu::Change change{emu::Change::Kind::Delete, s.table.full_name(), row_of(s, *where), std::nullopt};
    return WriteCount{commit(storage, s, {change}) ? 1U : 0U, kCmdDelete};
  }
  std::vector<emu::Change> changes;
  for (const auto& key : matching_keys(s))
    changes.push_back(emu::Change{emu::Change::Kind::Delete, s.table.full_name(), row_of(s, key), std::nullopt});
  if (!changes.empty()) (void)commit(storage, s, changes);
  return WriteCount{changes.size(), kCmdDelete};
}

}  // namespace

WriteCount run_write(Storage& storage, const std::vector<SqlToken>& tokens, const Params& params,
                     const std::string& database, const QueryRows& query) {
  Statement s{tokens, params, 1, {}, {}, {}};
  s.query = &query;
  const SqlToken& head = tokens.front();
  if (head.is("INSERT")) {
    if (s.word("INTO")) ++s.at;
  } else if (head.is("DELETE")) {
    if (s.word("FROM")) ++s.at;
  }
  s.target_from = s.at;
  read_target(s, storage.writer().db(), database);
  s.target_to = s.at;
  if (head.is("INSERT")) return insert(storage, s);
  if (head.is("UPDATE")) return update(storage, s);
  return remove(storage, s);
}

}  // namespace mssqlcdc::tds
