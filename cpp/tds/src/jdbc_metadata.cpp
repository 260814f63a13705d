// jdbc_metadata.cpp: sp_tables, sp_columns, sp_columns_100 and sp_pkeys over the object model.
// Result columns and codes follow Microsoft's pages:
// https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sp-tables-transact-sql
// https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sp-columns-transact-sql
// https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sp-pkeys-transact-sql
// DATA_TYPE is the ODBC 3 type code. User tables are TABLE; the change tables and CDC's own
// tables, which SQL Server marks as shipped by Microsoft, are SYSTEM TABLE (decision 1442).
#include <algorithm>
#include <cctype>
#include <cstdint>

#include "builtins.hpp"
#include "jdbc_metadata.hpp"
#include "mssqlcdc/emu/catalog.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "objects.hpp"
#include "stored.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {
namespace {

using Base = emu::Base;

const ColumnType kVarChar32T{SqlKind::VarChar, 32};
const ColumnType kVarChar254T{SqlKind::VarChar, 254};
const ColumnType kNVarChar128T{SqlKind::NVarChar, 128};
const ColumnType kNVarChar4000T{SqlKind::NVarChar, 4000};
const ColumnType kNVarCharMaxT{SqlKind::NVarChar, kMax};

ResultSet result(std::vector<std::pair<const char*, ColumnType>> columns) {
  ResultSet rs;
  for (auto& [name, type] : columns) rs.columns.push_back(Column{name, type, true});
  return rs;
}

bool matches(const std::optional<std::string>& filter, const std::string& value, bool use_pattern) {
  if (!filter) return true;
  return use_pattern ? like(value, *filter) : emu::iequals(value, *filter);
}

void check_qualifier(const MetadataFilter& filter, const std::string& database) {
  if (filter.table_qualifier && !filter.table_qualifier->empty() && !emu::iequals(*filter.table_qualifier, database)) {
    sql_error(15250, "The database name component of the object qualifier must be the name of the current database.");
  }
}

// One column of a table as sp_columns describes it.
struct Described {
  std::int64_t data_type = 0;  // ODBC 3 code
  std::optional<std::int64_t> precision;
  std::optional<std::int64_t> length;
  std::optional<std::int64_t> scale;
  std::optional<std::int64_t> radix;
  std::int64_t sql_data_type = 0;
  std::optional<std::int64_t> datetime_sub;
  std::optional<std::int64_t> octet_length;
};

constexpr std::int64_t kLongMax = 2147483647;

std::int64_t fraction_width(int digits) { return digits > 0 ? digits + 1 : 0; }

Described describe(const emu::SqlType& t, bool version_100) {
  const TypeFacts facts = type_facts(t);
  const std::int64_t bytes = facts.max_length;
  Described d;
  const auto exact = [&](std::int64_t code, std::int64_t precision, std::int64_t length, std::int64_t scale) {
    d.data_type = code;
    d.precision = precision;
    d.length = length;
    d.scale = scale;
    d.radix = 10;
  };
  const auto temporal = [&](std::int64_t code, std::int64_t sub, std::int64_t precision,
                            std::optional<std::int64_t> scale) {
    d.data_type = code;
    d.sql_data_type = code >= 91 && code <= 93 ? 9 : code;
    d.datetime_sub = code >= 91 && code <= 93 ? std::optional<std::int64_t>{sub} : std::nullopt;
    d.precision = precision;
    d.length = bytes;
    d.scale = scale;
    if (!version_100 && code != 93) {  // sp_columns shows the newer date types as nvarchar
      d.data_type = -9;
      d.sql_data_type = -9;
      d.datetime_sub = std::nullopt;
      d.length = precision * 2;
      d.octet_length = precision * 2;
    }
  };
  const auto character = [&](std::int64_t code, std::int64_t chars, std::int64_t octets) {
    d.data_type = code;
    d.precision = chars;
    d.length = octets;
    d.octet_length = octets;
  };
  switch (t.base) {
    case Base::Bit: d.data_type = -7, d.precision = 1, d.length = 1, d.scale = 0; break;
    case Base::TinyInt: exact(-6, 3, 1, 0); break;
    case Base::SmallInt: exact(5, 5, 2, 0); break;
    case Base::Int: exact(4, 10, 4, 0); break;
    case Base::BigInt: exact(-5, 19, 8, 0); break;
    case Base::Decimal: exact(3, t.precision, t.precision + 2, t.scale); break;
    case Base::Numeric: exact(2, t.precision, t.precision + 2, t.scale); break;
    case Base::Money: exact(3, 19, 21, 4); break;
    case Base::SmallMoney: exact(3, 10, 12, 4); break;
    case Base::Real: d.data_type = 7, d.precision = 7, d.length = 4, d.radix = 10; break;
    case Base::Float: d.data_type = 6, d.precision = 15, d.length = 8, d.radix = 10; break;
    case Base::Date: temporal(91, 1, 10, std::nullopt); break;
    case Base::Time: temporal(-154, 0, 8 + fraction_width(t.precision), t.precision); break;
    case Base::DateTime: temporal(93, 3, 23, 3); break;
    case Base::SmallDateTime: temporal(93, 3, 16, 0); break;
    case Base::DateTime2: temporal(93, 3, 19 + fraction_width(t.precision), t.precision); break;
    case Base::DateTimeOffset: temporal(-155, 0, 26 + fraction_width(t.precision), t.precision); break;
    case Base::Char: character(1, t.length, t.length); break;
    case Base::VarChar: character(12, t.is_max() ? kLongMax : t.length, t.is_max() ? kLongMax : t.length); break;
    case Base::NChar: character(-8, t.length, 2 * std::int64_t{t.length}); break;
    case Base::NVarChar:
      character(-9, t.is_max() ? kLongMax / 2 : t.length, t.is_max() ? kLongMax : 2 * std::int64_t{t.length});
      break;
    case Base::Text: character(-1, kLongMax, kLongMax); break;
    case Base::NText: character(-10, kLongMax / 2, kLongMax); break;
    case Base::Xml: character(-152, 0, kLongMax); break;
    case Base::UniqueIdentifier: d.data_type = -11, d.precision = 36, d.length = 16; break;
    case Base::Binary: d.data_type = -2, d.precision = t.length, d.length = t.length; break;
    case Base::VarBinary:
      d.data_type = -3, d.precision = t.is_max() ? kLongMax : t.length, d.length = d.precision;
      break;
    case Base::Image: d.data_type = -4, d.precision = kLongMax, d.length = kLongMax; break;
    case Base::RowVersion: d.data_type = -2, d.precision = 8, d.length = 8; break;
    case Base::SqlVariant: d.data_type = -150, d.precision = 8000, d.length = 8016; break;
    case Base::HierarchyId:
    case Base::Geometry:
    case Base::Geography: d.data_type = -151, d.precision = kLongMax, d.length = kLongMax; break;
  }
  if (d.sql_data_type == 0) d.sql_data_type = d.data_type;
  return d;
}

std::string base_name(const emu::SqlType& t) {
  const std::string text = t.canonical();
  return text.substr(0, text.find('('));
}

Value optional_value(const std::optional<std::int64_t>& v) {
  if (!v) return std::monostate{};
  return *v;
}

// The tables the filter selects, in the order the procedures list them.
std::vector<const SqlObject*> tables(const ObjectModel& model, const MetadataFilter& filter) {
  std::vector<const SqlObject*> out;
  for (const auto& o : model.objects()) {
    if (o.kind == SqlObject::Kind::SystemView) continue;
    if (!matches(filter.table_name, o.name, filter.use_pattern)) continue;
    if (!matches(filter.table_owner, o.schema, filter.use_pattern)) continue;
    out.push_back(&o);
  }
  std::sort(out.begin(), out.end(), [](const SqlObject* a, const SqlObject* b) {
    return std::pair(lower(a->schema), lower(a->name)) < std::pair(lower(b->schema), lower(b->name));
  });
  return out;
}

}  // namespace

std::vector<ResultSet> sp_tables(emu::Reader& reader, const std::string& database, const MetadataFilter& filter) {
  check_qualifier(filter, database);
  ResultSet rs = result({{"TABLE_QUALIFIER", kSysnameT},
                         {"TABLE_OWNER", kSysnameT},
                         {"TABLE_NAME", kSysnameT},
                         {"TABLE_TYPE", kVarChar32T},
                         {"REMARKS", kVarChar254T}});
  // @table_type: a list of quoted types, "'TABLE','VIEW'"; absent means every type.
  std::vector<std::string> wanted;
  if (filter.table_type) {
    std::string current;
    for (const char c : *filter.table_type + ",") {
      if (c == ',') {
        if (!current.empty()) wanted.push_back(current);
        current.clear();
      } else if (c != '\'' && c != '"' && c != ' ') {
        current += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      }
    }
  }
  const auto held_model = object_model(reader);
  const ObjectModel& model = *held_model;
  std::vector<std::vector<Value>> table_rows;
  std::vector<std::vector<Value>> system_rows;
  for (const SqlObject* o : tables(model, filter)) {
    const std::string type = o->kind == SqlObject::Kind::UserTable ? "TABLE" : "SYSTEM TABLE";
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), type) == wanted.end()) continue;
    auto& rows = o->kind == SqlObject::Kind::UserTable ? table_rows : system_rows;
    rows.push_back({database, o->schema, o->name, type, std::monostate{}});
  }
  // Ordered by TABLE_TYPE, TABLE_QUALIFIER, TABLE_OWNER and TABLE_NAME.
  for (auto& row : system_rows) rs.rows.push_back(std::move(row));
  for (auto& row : table_rows) rs.rows.push_back(std::move(row));
  return {std::move(rs)};
}

std::vector<ResultSet> sp_columns(emu::Reader& reader, const std::string& database, const MetadataFilter& filter,
                                  bool version_100) {
  check_qualifier(filter, database);
  std::vector<std::pair<const char*, ColumnType>> columns{{"TABLE_QUALIFIER", kSysnameT},
                                                          {"TABLE_OWNER", kSysnameT},
                                                          {"TABLE_NAME", kSysnameT},
                                                          {"COLUMN_NAME", kSysnameT},
                                                          {"DATA_TYPE", kSmallIntT},
                                                          {"TYPE_NAME", kSysnameT},
                                                          {"PRECISION", kIntT},
                                                          {"LENGTH", kIntT},
                                                          {"SCALE", kSmallIntT},
                                                          {"RADIX", kSmallIntT},
                                                          {"NULLABLE", kSmallIntT},
                                                          {"REMARKS", kVarChar254T},
                                                          {"COLUMN_DEF", kNVarChar4000T},
                                                          {"SQL_DATA_TYPE", kSmallIntT},
                                                          {"SQL_DATETIME_SUB", kSmallIntT},
                                                          {"CHAR_OCTET_LENGTH", kIntT},
                                                          {"ORDINAL_POSITION", kIntT},
                                                          {"IS_NULLABLE", kVarChar254T}};
  if (version_100) {
    const std::vector<std::pair<const char*, ColumnType>> added{{"SS_IS_SPARSE", kSmallIntT},
                                                                {"SS_IS_COLUMN_SET", kSmallIntT},
                                                                {"SS_IS_COMPUTED", kSmallIntT},
                                                                {"SS_IS_IDENTITY", kSmallIntT},
                                                                {"SS_UDT_CATALOG_NAME", kNVarChar128T},
                                                                {"SS_UDT_SCHEMA_NAME", kNVarChar128T},
                                                                {"SS_UDT_ASSEMBLY_TYPE_NAME", kNVarCharMaxT},
                                                                {"SS_XML_SCHEMACOLLECTION_CATALOG_NAME", kNVarChar128T},
                                                                {"SS_XML_SCHEMACOLLECTION_SCHEMA_NAME", kNVarChar128T},
                                                                {"SS_XML_SCHEMACOLLECTION_NAME", kNVarChar128T}};
    columns.insert(columns.end(), added.begin(), added.end());
  }
  columns.emplace_back("SS_DATA_TYPE", kTinyIntT);
  ResultSet rs = result(std::move(columns));
  const auto held_model = object_model(reader);
  const ObjectModel& model = *held_model;
  for (const SqlObject* o : tables(model, filter)) {
    for (std::size_t i = 0; i < o->columns.size(); ++i) {
      const ObjectColumn& c = o->columns[i];
      if (!matches(filter.column_name, c.name, filter.use_pattern)) continue;
      const emu::Column* stored = o->table != nullptr ? o->table->find(c.name) : nullptr;
      const bool identity = stored != nullptr && stored->is_identity;
      const bool computed = stored != nullptr && stored->computed != nullptr;
      const std::int64_t ordinal = stored != nullptr ? stored->column_id : static_cast<std::int64_t>(i + 1);
      const Described d = describe(c.type, version_100);
      std::vector<Value> row{database,
                             o->schema,
                             o->name,
                             c.name,
                             d.data_type,
                             base_name(c.type) + (identity ? " identity" : ""),
                             optional_value(d.precision),
                             optional_value(d.length),
                             optional_value(d.scale),
                             optional_value(d.radix),
                             std::int64_t{c.nullable ? 1 : 0},
                             std::monostate{},
                             std::monostate{},
                             d.sql_data_type,
                             optional_value(d.datetime_sub),
                             optional_value(d.octet_length),
                             ordinal,
                             std::string(c.nullable ? "YES" : "NO")};
      if (version_100) {
        const std::vector<Value> added{std::int64_t{0},
                                       std::int64_t{0},
                                       std::int64_t{computed ? 1 : 0},
                                       std::int64_t{identity ? 1 : 0},
                                       std::monostate{},
                                       std::monostate{},
                                       std::monostate{},
                                       std::monostate{},
                                       std::monostate{},
                                       std::monostate{}};
        row.insert(row.end(), added.begin(), added.end());
      }
      row.emplace_back(std::monostate{});  // SS_DATA_TYPE: the pre-2008 TDS type, not modelled
      rs.rows.push_back(std::move(row));
    }
  }
  return {std::move(rs)};
}

std::vector<ResultSet> sp_pkeys(emu::Reader& reader, const std::string& database, const MetadataFilter& filter) {
  check_qualifier(filter, database);
  ResultSet rs = result({{"TABLE_QUALIFIER", kSysnameT},
                         {"TABLE_OWNER", kSysnameT},
                         {"TABLE_NAME", kSysnameT},
                         {"COLUMN_NAME", kSysnameT},
                         {"KEY_SEQ", kSmallIntT},
                         {"PK_NAME", kSysnameT}});
  // sp_pkeys takes names, not patterns.
  MetadataFilter exact = filter;
  exact.use_pattern = false;
  const auto held_model = object_model(reader);
  const ObjectModel& model = *held_model;
  for (const SqlObject* o : tables(model, exact)) {
    if (o->table == nullptr) continue;
    for (const emu::Column* c : o->table->key()) {
      rs.rows.push_back({database, o->schema, o->name, c->name, std::int64_t{c->key_ordinal}, "PK_" + o->name});
    }
  }
  return {std::move(rs)};
}

}  // namespace mssqlcdc::tds
