// procedures_meta.cpp: sp_help, sp_helpindex, sp_statistics[_100] and sp_cdc_disable_db
// (decision 1440), over the object model the catalog views read, so they agree with sys.indexes.
#include "procedures_meta.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "builtins.hpp"
#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/emu/zone.hpp"
#include "mssqlcdc/error.hpp"
#include "objects.hpp"
#include "stored.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {
namespace {

using Kind = SqlObject::Kind;
using BoundArgs = std::map<std::string, TypedValue>;

const ColumnType kSysname{SqlKind::NVarChar, 128};
const ColumnType kSmallInt{SqlKind::SmallInt};
const ColumnType kInt{SqlKind::Int};

ColumnType varchar(std::uint16_t n) { return ColumnType{SqlKind::VarChar, n}; }
ColumnType nvarchar(std::uint16_t n) { return ColumnType{SqlKind::NVarChar, n}; }
ColumnType character(std::uint16_t n) { return ColumnType{SqlKind::Char, n}; }

ResultSet result(std::vector<std::pair<const char*, ColumnType>> columns) {
  ResultSet rs;
  for (auto& [name, type] : columns) rs.columns.push_back(Column{name, type, true});
  return rs;
}

std::optional<std::string> text(const BoundArgs& args, const std::string& name) {
  const auto it = args.find(name);
  if (it == args.end() || is_null(it->second.value)) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(&it->second.value)) return *s;
  if (const auto* i = std::get_if<std::int64_t>(&it->second.value)) return std::to_string(*i);
  sql_error(206, "Operand type clash: " + type_name(it->second.type) + " is incompatible with nvarchar");
}

[[noreturn]] void not_found(const std::string& written, const Storage& storage) {
  sql_error(15009, "The object '" + written + "' does not exist in database '" + storage.database() +
                       "' or is invalid for this operation.");
}

std::string joined_keys(const ClusteredIndex& ix) {
  std::string out;
  for (const auto& k : ix.keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

std::string description(const ClusteredIndex& ix) {
  return std::string("clustered, unique") + (ix.primary_key ? ", primary key" : "") + " located on PRIMARY";
}

std::int64_t row_count(Storage& storage, const SqlObject& o) {
  if (o.kind == Kind::UserTable) return storage.reader().table_info(o.table->full_name()).row_count;
  if (o.kind == Kind::ChangeTable) return storage.reader().change_row_count(o.instance->name);
  return 0;
}

// ---- sp_helpindex ------------------------------------------------------------------------

std::vector<ResultSet> helpindex_sets(const SqlObject& o) {
  const auto ix = clustered_index(o);
  if (!ix) return {};  // SQL Server prints that the object has no indexes, with no result set
  ResultSet rs =
      result({{"index_name", kSysname}, {"index_description", varchar(210)}, {"index_keys", nvarchar(2078)}});
  rs.rows.push_back({ix->name, description(*ix), joined_keys(*ix)});
  return {std::move(rs)};
}

std::vector<ResultSet> helpindex(Storage& storage, const BoundArgs& args) {
  const std::string written = text(args, "@objname").value_or("");
  const auto held_model = object_model(storage.reader());
  const ObjectModel& model = *held_model;
  const SqlObject* o = model.find_text(written);
  if (o == nullptr || (o->kind != Kind::UserTable && o->kind != Kind::ChangeTable && o->kind != Kind::CdcTable)) {
    not_found(written, storage);
  }
  return helpindex_sets(*o);
}

// ---- sp_help -----------------------------------------------------------------------------

std::string object_type(const SqlObject& o) {
  switch (o.kind) {
    case Kind::UserTable: return "user table";
    case Kind::ChangeTable:
    case Kind::CdcTable: return "system table";
    case Kind::SystemView: return "view";
    case Kind::Function: return "inline function";
    case Kind::PrimaryKey: return "primary key cns";
  }
  return "user table";
}

std::vector<ResultSet> help_all(const ObjectModel& model) {
  ResultSet objects = result({{"Name", nvarchar(128)}, {"Owner", nvarchar(128)}, {"Object_type", nvarchar(31)}});
  for (const auto& o : model.objects()) {
    if (o.kind == Kind::SystemView) continue;
    objects.rows.push_back({o.name, o.schema, object_type(o)});
  }
  ResultSet types = result({{"User_type", kSysname},
                            {"Storage_type", kSysname},
                            {"Length", kSmallInt},
                            {"Prec", kInt},
                            {"Scale", kInt},
                            {"Nullable", varchar(35)},
                            {"Default_name", nvarchar(776)},
                            {"Rule_name", nvarchar(776)},
                            {"Collation", kSysname}});
  return {std::move(objects), std::move(types)};  // the emulator has no user-defined types
}

std::string right5(const std::optional<std::int64_t>& n) {
  std::string s = n ? std::to_string(*n) : std::string();
  return std::string(s.size() < 5 ? 5 - s.size() : 0, ' ') + s;
}

bool has_precision(emu::Base b) {
  using B = emu::Base;
  return b == B::TinyInt || b == B::SmallInt || b == B::Int || b == B::BigInt || b == B::Decimal || b == B::Numeric ||
         b == B::Money || b == B::SmallMoney || b == B::Real || b == B::Float;
}

std::vector<ResultSet> help_object(Storage& storage, const SqlObject& o) {
  std::vector<ResultSet> sets;
  ResultSet head = result({{"Name", nvarchar(128)},
                           {"Owner", nvarchar(128)},
                           {"Type", nvarchar(31)},
                           {"Created_datetime", ColumnType{SqlKind::DateTime}}});
  // As sys.objects: the first capture instance's creation, else now (the file keeps no time).
  std::int64_t created = emu::TimeZone::load(storage.reader().server_time_zone()).to_local(storage.reader().now());
  const auto held_catalog = storage.reader().catalog();
  for (const auto& in : held_catalog->instances) {
    if (in.source_object_id == o.object_id || (o.instance != nullptr && o.instance->name == in.name)) {
      created = std::min(created, in.create_date);
    }
  }
  head.rows.push_back({o.name, o.schema, object_type(o), micros_to_datetime2(created)});
  sets.push_back(std::move(head));
  if (o.kind != Kind::UserTable && o.kind != Kind::ChangeTable) return sets;

  ResultSet cols = result({{"Column_name", nvarchar(128)},
                           {"Type", nvarchar(128)},
                           {"Computed", varchar(35)},
                           {"Length", kInt},
                           {"Prec", character(5)},
                           {"Scale", character(5)},
                           {"Nullable", varchar(35)},
                           {"TrimTrailingBlanks", varchar(35)},
                           {"FixedLenNullInSource", varchar(35)},
                           {"Collation", kSysname}});
  for (std::size_t i = 0; i < o.columns.size(); ++i) {
    const ObjectColumn& c = o.columns[i];
    const TypeFacts f = type_facts(c.type);
    const bool computed = o.table != nullptr && o.table->columns[i].computed != nullptr;
    const bool precise = has_precision(c.type.base);
    const std::string collation = c.type.collation_name();
    const bool character_type = !collation.empty();
    const bool fixed =
        c.type.base == emu::Base::Char || c.type.base == emu::Base::NChar || c.type.base == emu::Base::Binary;
    const bool padded_type = character_type || c.type.base == emu::Base::Binary || c.type.base == emu::Base::VarBinary;
    const std::string base = c.type.canonical().substr(0, c.type.canonical().find('('));
    cols.rows.push_back({c.name, base, std::string(computed ? "yes" : "no"), std::int64_t{f.max_length},
                         right5(precise ? std::optional<std::int64_t>(f.precision) : std::nullopt),
                         right5(precise ? std::optional<std::int64_t>(f.scale) : std::nullopt),
                         std::string(c.nullable ? "yes" : "no"), std::string(padded_type ? "no" : "(n/a)"),
                         std::string(padded_type ? (fixed && c.nullable ? "yes" : "no") : "(n/a)"),
                         character_type ? Value{collation} : Value{}});
  }
  sets.push_back(std::move(cols));

  ResultSet identity = result({{"Identity", nvarchar(128)},
                               {"Seed", ColumnType{SqlKind::Decimal, 17, 38, 0}},
                               {"Increment", ColumnType{SqlKind::Decimal, 17, 38, 0}},
                               {"Not For Replication", kInt}});
  const emu::Column* id_column = nullptr;
  if (o.table != nullptr && o.table->identity) id_column = o.table->by_id(o.table->identity->column_id);
  if (id_column != nullptr) {
    identity.rows.push_back(
        {id_column->name, Decimal{o.table->identity->seed}, Decimal{o.table->identity->increment}, std::int64_t{0}});
  } else {
    identity.rows.push_back(
        {std::string("No identity column defined."), std::monostate{}, std::monostate{}, std::monostate{}});
  }
  sets.push_back(std::move(identity));

  ResultSet guid = result({{"RowGuidCol", kSysname}});
  guid.rows.push_back({std::string("No rowguidcol column defined.")});
  sets.push_back(std::move(guid));

  ResultSet filegroup = result({{"Data_located_on_filegroup", kSysname}});
  filegroup.rows.push_back({std::string("PRIMARY")});
  sets.push_back(std::move(filegroup));

  for (auto& s : helpindex_sets(o)) sets.push_back(std::move(s));

  if (const auto ix = clustered_index(o); ix && ix->primary_key) {
    ResultSet constraints = result({{"constraint_type", nvarchar(146)},
                                    {"constraint_name", nvarchar(128)},
                                    {"delete_action", nvarchar(9)},
                                    {"update_action", nvarchar(9)},
                                    {"status_enabled", varchar(8)},
                                    {"status_for_replication", varchar(19)},
                                    {"constraint_keys", nvarchar(2078)}});
    constraints.rows.push_back({std::string("PRIMARY KEY (clustered)"), ix->name, std::string("(n/a)"),
                                std::string("(n/a)"), std::string("(n/a)"), std::string("(n/a)"), joined_keys(*ix)});
    sets.push_back(std::move(constraints));
  }
  return sets;
}

std::vector<ResultSet> help(Storage& storage, const BoundArgs& args) {
  const auto held_model = object_model(storage.reader());
  const ObjectModel& model = *held_model;
  const auto written = text(args, "@objname");
  if (!written) return help_all(model);
  const SqlObject* o = model.find_text(*written);
  if (o == nullptr) not_found(*written, storage);
  return help_object(storage, *o);
}

// ---- sp_statistics -----------------------------------------------------------------------

std::vector<ResultSet> statistics(Storage& storage, const BoundArgs& args) {
  ResultSet rs = result({{"TABLE_QUALIFIER", kSysname},
                         {"TABLE_OWNER", kSysname},
                         {"TABLE_NAME", kSysname},
                         {"NON_UNIQUE", kSmallInt},
                         {"INDEX_QUALIFIER", kSysname},
                         {"INDEX_NAME", kSysname},
                         {"TYPE", kSmallInt},
                         {"SEQ_IN_INDEX", kSmallInt},
                         {"COLUMN_NAME", kSysname},
                         {"COLLATION", character(1)},
                         {"CARDINALITY", kInt},
                         {"PAGES", kInt},
                         {"FILTER_CONDITION", varchar(128)}});
  const auto qualifier = text(args, "@table_qualifier");
  if (qualifier && !emu::iequals(*qualifier, storage.database())) {
    sql_error(15250, "The database name component of the object qualifier must be the name of the current database.");
  }
  const std::string name = text(args, "@table_name").value_or("");
  const auto owner = text(args, "@table_owner");
  const std::string index_pattern = text(args, "@index_name").value_or("%");
  const auto held_model = object_model(storage.reader());
  const ObjectModel& model = *held_model;
  const SqlObject* o = model.find(owner.value_or("dbo"), name);
  if (o == nullptr && !owner) {
    for (const auto& candidate : model.objects()) {
      if (emu::iequals(candidate.name, name) &&
          (candidate.kind == Kind::UserTable || candidate.kind == Kind::ChangeTable)) {
        o = &candidate;
        break;
      }
    }
  }
  if (o == nullptr || (o->kind != Kind::UserTable && o->kind != Kind::ChangeTable)) return {std::move(rs)};
  const std::int64_t rows = row_count(storage, *o);
  // The emulator keeps no pages: an estimate of 8 KB pages holding 100 rows each.
  const std::int64_t pages = rows == 0 ? 0 : rows / 100 + 1;
  rs.rows.push_back({storage.database(), o->schema, o->name, std::monostate{}, std::monostate{}, std::monostate{},
                     std::int64_t{0}, std::monostate{}, std::monostate{}, std::monostate{}, rows, pages,
                     std::monostate{}});
  // Every index the emulator has is clustered and unique, so @is_unique = 'Y' keeps them all.
  if (const auto ix = clustered_index(*o); ix && like(ix->name, index_pattern)) {
    for (std::size_t k = 0; k < ix->keys.size(); ++k) {
      rs.rows.push_back({storage.database(), o->schema, o->name, std::int64_t{0}, o->name, ix->name, std::int64_t{1},
                         static_cast<std::int64_t>(k + 1), ix->keys[k], std::string("A"), rows, pages,
                         std::monostate{}});
    }
  }
  return {std::move(rs)};
}

// ---- sp_cdc_disable_db -------------------------------------------------------------------

// Disables every capture instance. The emulator's database stays enabled for CDC, as it always
// is: sp_cdc_enable_table works on it afterwards without sp_cdc_enable_db.
std::vector<ResultSet> disable_db(Storage& storage, const BoundArgs& /*args*/) {
  std::vector<std::string> names;
  const auto held_catalog = storage.reader().catalog();
  for (const auto& in : held_catalog->instances) names.push_back(in.name);
  for (const auto& n : names) storage.writer().disable_cdc(n);
  return {};
}

using Param = ProcParam;

struct MetaProcedure {
  const char* name;
  std::vector<Param> params;
  std::function<std::vector<ResultSet>(Storage&, const BoundArgs&)> run;
};

const std::vector<MetaProcedure>& meta_procedures() {
  static const std::vector<Param> kStatistics{{"@table_name", true},       {"@table_owner", false},
                                              {"@table_qualifier", false}, {"@index_name", false},
                                              {"@is_unique", false},       {"@accuracy", false}};
  static const std::vector<MetaProcedure> all = {
      {"sp_help", {{"@objname", false}}, help},   {"sp_helpindex", {{"@objname", true}}, helpindex},
      {"sp_statistics", kStatistics, statistics}, {"sp_statistics_100", kStatistics, statistics},
      {"sp_cdc_disable_db", {}, disable_db},
  };
  return all;
}

// The parts of a procedure's name, lower-case and unquoted: ODBC's SQLStatistics sends
// "[sys].sp_statistics_100".
std::vector<std::string> name_parts(const std::string& written) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t dot; (dot = written.find('.', start)) != std::string::npos; start = dot + 1) {
    parts.push_back(lower(written.substr(start, dot - start)));
  }
  parts.push_back(lower(written.substr(start)));
  for (auto& p : parts) {
    const bool quoted =
        p.size() >= 2 && ((p.front() == '[' && p.back() == ']') || (p.front() == '"' && p.back() == '"'));
    if (quoted) p = p.substr(1, p.size() - 2);
  }
  return parts;
}

const MetaProcedure* find(const std::string& written) {
  const std::vector<std::string> parts = name_parts(written);
  if (parts.size() > 3 || (parts.size() >= 2 && parts[parts.size() - 2] != "sys")) return nullptr;
  for (const MetaProcedure& p : meta_procedures()) {
    if (parts.back() == p.name) return &p;
  }
  return nullptr;
}

// The binding rule of every procedure (procedures.hpp): positional first, then by name.
BoundArgs bind(const MetaProcedure& proc, const std::vector<ProcArg>& args) {
  return bind_arguments(proc.name, proc.params, args);
}

}  // namespace

std::optional<std::vector<ResultSet>> run_meta_procedure(Storage& storage, const ProcCall& call) {
  const MetaProcedure* proc = find(call.procedure);
  if (proc == nullptr) return std::nullopt;
  const BoundArgs args = bind(*proc, call.args);
  try {
    return proc->run(storage, args);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Sql) throw;
    sql_error(e.number() != 0 ? e.number() : e.kind() == ErrorKind::EmuUnknownObject ? 22981 : 50000, e.what());
  }
}

}  // namespace mssqlcdc::tds
