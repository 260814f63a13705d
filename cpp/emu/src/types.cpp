// types.cpp: the type grammar, canonical names, families and Arrow types.
#include "mssqlcdc/emu/types.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <utility>

#include "ascii.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

struct Named {
  std::string_view name;
  Base base;
};

constexpr std::array<Named, 35> kNames{{
    {"bit", Base::Bit},
    {"tinyint", Base::TinyInt},
    {"smallint", Base::SmallInt},
    {"int", Base::Int},
    {"bigint", Base::BigInt},
    {"decimal", Base::Decimal},
    {"numeric", Base::Numeric},
    {"money", Base::Money},
    {"smallmoney", Base::SmallMoney},
    {"real", Base::Real},
    {"float", Base::Float},
    {"date", Base::Date},
    {"time", Base::Time},
    {"datetime", Base::DateTime},
    {"smalldatetime", Base::SmallDateTime},
    {"datetime2", Base::DateTime2},
    {"datetimeoffset", Base::DateTimeOffset},
    {"char", Base::Char},
    {"varchar", Base::VarChar},
    {"nchar", Base::NChar},
    {"nvarchar", Base::NVarChar},
    {"text", Base::Text},
    {"ntext", Base::NText},
    {"uniqueidentifier", Base::UniqueIdentifier},
    {"binary", Base::Binary},
    {"varbinary", Base::VarBinary},
    {"image", Base::Image},
    {"rowversion", Base::RowVersion},
    {"xml", Base::Xml},
    {"timestamp", Base::RowVersion},
    {"integer", Base::Int},
    {"sql_variant", Base::SqlVariant},
    {"hierarchyid", Base::HierarchyId},
    {"geometry", Base::Geometry},
    {"geography", Base::Geography},
}};

std::string_view base_name(Base b) {
  for (const auto& n : kNames) {
    if (n.base == b) return n.name;
  }
  return "?";
}

[[noreturn]] void bad_type(std::string_view text, std::string_view why) {
  throw Error(ErrorKind::EmuSchema, "type '" + std::string(text) + "' is not valid: " + std::string(why) +
                                        "; use a SQL Server type such as int, decimal(18,2), nvarchar(40)");
}

}  // namespace

namespace {

// Splits "type COLLATE name" into its type text and the collation's name ("" without one).
// A COLLATE with nothing after it is an error of its own, not an unreadable type.
std::pair<std::string_view, std::string> split_collate(std::string_view text) {
  const std::string low = ascii_lower(text);
  for (std::size_t p = low.find("collate"); p != std::string::npos; p = low.find("collate", p + 1)) {
    const bool before = p == 0 || std::isspace(static_cast<unsigned char>(low[p - 1])) || low[p - 1] == ')';
    const bool at_end = p + 7 == low.size();
    const bool after = at_end || std::isspace(static_cast<unsigned char>(low[p + 7]));
    if (!before || !after) continue;
    std::string name = ascii_trim(text.substr(p + 7));
    if (name.empty()) {
      throw Error(ErrorKind::EmuSchema, "type '" + std::string(text) +
                                            "' ends in COLLATE without a collation name; name one, such as "
                                            "COLLATE Latin1_General_CS_AS, or leave COLLATE out");
    }
    return {text.substr(0, p), std::move(name)};
  }
  return {text, std::string()};
}

}  // namespace

SqlType SqlType::parse(std::string_view full_text) {
  const auto split = split_collate(full_text);
  const std::string_view text = split.first;
  const std::string& collation_name = split.second;
  std::string t;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c)))
      t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  const auto paren = t.find('(');
  const std::string name = t.substr(0, paren);
  std::string args;
  if (paren != std::string::npos) {
    if (t.back() != ')') bad_type(text, "unbalanced parentheses");
    args = t.substr(paren + 1, t.size() - paren - 2);
    if (args.empty()) bad_type(text, "empty parentheses");
  }
  const auto it = std::find_if(kNames.begin(), kNames.end(), [&](const Named& n) { return n.name == name; });
  if (it == kNames.end()) {
    bad_type(text, "unknown or unsupported type name '" + name + "' (user types are not supported)");
  }
  SqlType st;
  st.base = it->base;
  auto number = [&](const std::string& s) {
    if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      bad_type(text, "'" + s + "' is not a number");
    }
    return std::stoi(s);
  };
  switch (st.base) {
    case Base::Char:
    case Base::VarChar:
    case Base::NChar:
    case Base::NVarChar:
    case Base::Binary:
    case Base::VarBinary: {
      const bool national = st.base == Base::NChar || st.base == Base::NVarChar;
      const bool var = st.base == Base::VarChar || st.base == Base::NVarChar || st.base == Base::VarBinary;
      if (args.empty()) {
        st.length = 1;
      } else if (args == "max") {
        if (!var) bad_type(text, "only varchar, nvarchar and varbinary take (max)");
        st.length = -1;
      } else {
        st.length = number(args);
        const int limit = national ? 4000 : 8000;
        if (st.length < 1 || st.length > limit)
          bad_type(text, "length must be 1.." + std::to_string(limit) + " or max");
      }
      break;
    }
    case Base::Decimal:
    case Base::Numeric: {
      st.precision = 18;
      if (!args.empty()) {
        const auto comma = args.find(',');
        st.precision = number(args.substr(0, comma));
        st.scale = comma == std::string::npos ? 0 : number(args.substr(comma + 1));
      }
      if (st.precision < 1 || st.precision > 38) bad_type(text, "precision must be 1..38");
      if (st.scale < 0 || st.scale > st.precision) bad_type(text, "scale must be 0..precision");
      break;
    }
    case Base::Float: {
      const int n = args.empty() ? 53 : number(args);
      if (n < 1 || n > 53) bad_type(text, "float(n) takes n = 1..53");
      if (n <= 24) st.base = Base::Real;
      break;
    }
    case Base::Time:
    case Base::DateTime2:
    case Base::DateTimeOffset: {
      st.precision = args.empty() ? 7 : number(args);
      if (st.precision > 7) bad_type(text, "fractional seconds precision must be 0..7");
      break;
    }
    default:
      if (!args.empty()) bad_type(text, "type '" + name + "' takes no arguments");
  }
  if (st.base == Base::Money) st.precision = 19, st.scale = 4;
  if (st.base == Base::SmallMoney) st.precision = 10, st.scale = 4;
  if (st.family() == Family::Character) st.collation = &Collation::database_default();
  if (!collation_name.empty()) {
    if (st.family() != Family::Character) {
      throw Error(ErrorKind::EmuSchema, "COLLATE " + collation_name + " is given for type " + st.canonical() +
                                            ", which has no collation; only char, varchar, nchar, nvarchar, "
                                            "text and ntext take COLLATE: leave it out");
    }
    st.collation = Collation::find(collation_name);
    if (st.collation == nullptr) {
      throw Error(ErrorKind::EmuSchema, "collation '" + collation_name +
                                            "' is not one the emulator models; use one of " +
                                            Collation::supported_names());
    }
  }
  return st;
}

std::string SqlType::declared() const {
  return collation != nullptr ? canonical() + " COLLATE " + collation->name() : canonical();
}

std::string SqlType::canonical() const {
  std::string name(base_name(base));
  switch (base) {
    case Base::Char:
    case Base::VarChar:
    case Base::NChar:
    case Base::NVarChar:
    case Base::Binary:
    case Base::VarBinary: return name + "(" + (length < 0 ? std::string("max") : std::to_string(length)) + ")";
    case Base::Decimal:
    case Base::Numeric: return name + "(" + std::to_string(precision) + "," + std::to_string(scale) + ")";
    case Base::Time:
    case Base::DateTime2:
    case Base::DateTimeOffset: return name + "(" + std::to_string(precision) + ")";
    default: return name;
  }
}

Family SqlType::family() const {
  switch (base) {
    case Base::Bit: return Family::Bit;
    case Base::TinyInt:
    case Base::SmallInt:
    case Base::Int:
    case Base::BigInt: return Family::Integer;
    case Base::Decimal:
    case Base::Numeric:
    case Base::Money:
    case Base::SmallMoney: return Family::Exact;
    case Base::Real:
    case Base::Float: return Family::Approximate;
    case Base::Date:
    case Base::Time:
    case Base::DateTime:
    case Base::SmallDateTime:
    case Base::DateTime2:
    case Base::DateTimeOffset: return Family::Temporal;
    case Base::Char:
    case Base::VarChar:
    case Base::NChar:
    case Base::NVarChar:
    case Base::Text:
    case Base::NText: return Family::Character;
    case Base::UniqueIdentifier: return Family::Guid;
    case Base::Binary:
    case Base::VarBinary:
    case Base::Image: return Family::Binary;
    case Base::RowVersion: return Family::RowVersion;
    case Base::Xml: return Family::Xml;
    case Base::SqlVariant:
    case Base::HierarchyId:
    case Base::Geometry:
    case Base::Geography: return Family::Opaque;
  }
  return Family::Binary;
}

bool SqlType::is_old_lob() const { return base == Base::Text || base == Base::NText || base == Base::Image; }
// xml is a large value (max_text_repl_size, no key), but the change table's NULL rule for
// operation 3 names only the three (max) types, so it is not is_max().
bool SqlType::is_lob() const { return is_old_lob() || length == -1 || base == Base::Xml; }

std::string SqlType::arrow_format() const {
  switch (base) {
    case Base::Bit: return "b";
    case Base::TinyInt:
    case Base::SmallInt: return "s";
    case Base::Int: return "i";
    case Base::BigInt: return "l";
    case Base::Decimal:
    case Base::Numeric:
    case Base::Money:
    case Base::SmallMoney: return "d:" + std::to_string(precision) + "," + std::to_string(scale);
    case Base::Real: return "f";
    case Base::Float: return "g";
    case Base::Date: return "tdD";
    case Base::Time: return "ttn";  // 100-ns ticks fit nanoseconds whole (decision 1347)
    case Base::DateTime:
    case Base::SmallDateTime:
    case Base::DateTime2: return "tsu:";
    case Base::DateTimeOffset: return "tsu:UTC";
    case Base::Binary:
    case Base::VarBinary:
    case Base::Image:
    case Base::RowVersion:
    case Base::SqlVariant:
    case Base::HierarchyId:
    case Base::Geometry:
    case Base::Geography: return "z";
    default: return "u";
  }
}

std::string SqlType::arrow_name() const {
  switch (base) {
    case Base::Bit: return "bool";
    case Base::TinyInt:
    case Base::SmallInt: return "int16";
    case Base::Int: return "int32";
    case Base::BigInt: return "int64";
    case Base::Decimal:
    case Base::Numeric:
    case Base::Money:
    case Base::SmallMoney: return "decimal128(" + std::to_string(precision) + ", " + std::to_string(scale) + ")";
    case Base::Real: return "float";
    case Base::Float: return "double";
    case Base::Date: return "date32[day]";
    case Base::Time: return "time64[ns]";
    case Base::DateTime:
    case Base::SmallDateTime:
    case Base::DateTime2: return "timestamp[us]";
    case Base::DateTimeOffset: return "timestamp[us, tz=UTC]";
    case Base::Binary:
    case Base::VarBinary:
    case Base::Image:
    case Base::RowVersion:
    case Base::SqlVariant:
    case Base::HierarchyId:
    case Base::Geometry:
    case Base::Geography: return "binary";
    default: return "string";
  }
}

}  // namespace mssqlcdc::emu
