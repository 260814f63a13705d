// ranges.cpp: the change function's range checks (error 313) and the key columns, key values
// and SQL fragments of key-range reads.
#include "scan.hpp"

#include <algorithm>

#include "ascii.hpp"
#include "mssqlcdc/emu/log.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

[[noreturn]] void range_error(const Instance& in, const std::string& why) {
  throw Error(ErrorKind::EmuInvalidRange,
              "cdc.fn_cdc_get_all_changes_" + in.name + ": " + why +
                  " (error 313, an insufficient number of arguments was supplied); "
                  "check min_lsn and max_lsn and ask for a range between them",
              313);
}

}  // namespace

std::string normalize_row_filter(const std::string& f) {
  // The query functions test lower(rtrim(ltrim(@row_filter_option))): LTRIM and RTRIM remove
  // spaces only, so a tab or a newline around the option is refused (313).
  std::string s = f;
  while (!s.empty() && s.back() == ' ') s.pop_back();
  std::size_t b = 0;
  while (b < s.size() && s[b] == ' ') ++b;
  return ascii_lower(std::string_view(s).substr(b));
}

void check_change_range(Db& db, const Instance& in, const std::optional<Lsn>& from, const std::optional<Lsn>& to,
                        const std::string& row_filter) {
  const std::string f = normalize_row_filter(row_filter);
  if (f != "all" && f != "all update old")
    range_error(in, "row filter '" + row_filter + "' is not 'all' or 'all update old'");
  if (!from || !to) range_error(in, std::string(!from ? "from_lsn" : "to_lsn") + " is missing");
  if (*from < in.start_lsn) {
    range_error(in, "from_lsn " + from->to_string() + " is below min_lsn " + in.start_lsn.to_string());
  }
  auto st = db.prepare("SELECT max(start_lsn) FROM \"cdc.lsn_time_mapping\"");
  st.step();
  if (st.is_null(0)) range_error(in, "to_lsn " + to->to_string() + " is above max_lsn, and there is no entry yet");
  const Lsn max = lsn_from_blob(st.blob(0));
  if (max < *to) range_error(in, "to_lsn " + to->to_string() + " is above max_lsn " + max.to_string());
  if (*to < *from) range_error(in, "from_lsn " + from->to_string() + " is above to_lsn " + to->to_string());
}

std::vector<const Column*> key_columns_of(const Table& t, const std::optional<std::vector<std::string>>& names) {
  std::vector<const Column*> out;
  if (!names) {
    out = t.key();
    if (out.empty()) {
      throw Error(ErrorKind::InvalidArgument, t.full_name() + " is a heap without a primary key; pass key_columns");
    }
    return out;
  }
  if (names->empty())
    throw Error(ErrorKind::InvalidArgument, t.full_name() + ": key_columns must name at least one column");
  for (const auto& n : *names) {
    const Column* c = t.find(n);
    if (c == nullptr) {
      throw Error(ErrorKind::EmuUnknownObject,
                  t.full_name() + ": no column " + n + " (error 207); columns: " + t.column_list(), 207);
    }
    out.push_back(c);
  }
  return out;
}

std::string key_select(const std::vector<const Column*>& key) {
  std::string out;
  for (std::size_t i = 0; i < key.size(); ++i) out += (i ? ", " : "") + quote_ident(key[i]->name);
  return out;
}

std::string key_order(const std::vector<const Column*>& key, bool desc) {
  std::string out;
  for (std::size_t i = 0; i < key.size(); ++i)
    out += (i ? ", " : "") + quote_ident(key[i]->name) + (desc ? " DESC" : "");
  return out;
}

std::string placeholders(std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += i ? ", ?" : "?";
  return out;
}

std::string key_compare(const std::vector<const Column*>& key, const std::string& op, int first) {
  const bool not_null = std::all_of(key.begin(), key.end(), [](const Column* c) { return c->key_ordinal > 0; });
  auto param = [&](std::size_t i) {
    std::string p(1, '?');
    p += std::to_string(first + static_cast<int>(i));
    return p;
  };
  if (not_null) {
    // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on chained operator+.
    std::string out(1, '(');
    out += key_select(key);
    out += ") ";
    out += op;
    out += " (";
    for (std::size_t i = 0; i < key.size(); ++i) {
      if (i != 0) out += ", ";
      out += param(i);
    }
    out += ')';
    return out;
  }
  // Lexicographic with NULL first: k OP v  :=  k[0] strictly-beyond v[0]
  //   OR (k[0] IS v[0] AND the rest OP the rest); the last level decides on equality.
  const bool greater = op[0] == '>';
  const bool or_equal = op.size() == 2;
  std::string out = or_equal ? "1" : "0";
  for (std::size_t i = key.size(); i-- > 0;) {
    const std::string k = quote_ident(key[i]->name);
    const std::string v = param(i);
    const std::string beyond = greater ? "((" + k + " IS NOT NULL AND " + v + " IS NULL) OR " + k + " > " + v + ")"
                                       : "((" + k + " IS NULL AND " + v + " IS NOT NULL) OR " + k + " < " + v + ")";
    out = "(" + beyond + " OR (" + k + " IS " + v + " AND " + out + "))";
  }
  return out;
}

std::vector<Cell> key_cells(const Table& t, const std::vector<const Column*>& key, const Key& values,
                            std::string_view what) {
  if (values.size() != key.size()) {
    throw Error(ErrorKind::InvalidArgument, t.full_name() + ": " + std::string(what) + " has " +
                                                std::to_string(values.size()) + " values; the key has " +
                                                std::to_string(key.size()) + " columns (" + key_select(key) + ")");
  }
  std::vector<Cell> out;
  for (std::size_t i = 0; i < key.size(); ++i)
    out.push_back(coerce(values[i], key[i]->type, t.full_name() + "." + key[i]->name));
  return out;
}

}  // namespace mssqlcdc::emu
