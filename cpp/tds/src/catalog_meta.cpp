// catalog_meta.cpp: INFORMATION_SCHEMA, sys.indexes, sys.index_columns, CDC's monitoring views
// and the server and session functions (decision 1439), over the object model of one statement.
#include "catalog_meta.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "builtins.hpp"
#include "jobs.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/emu/zone.hpp"
#include "mssqlcdc/error.hpp"
#include "objects.hpp"
#include "stored.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {
namespace {

using Kind = SqlObject::Kind;
using Rows = std::vector<std::vector<Value>>;
using B = emu::Base;

ColumnType varchar(std::uint16_t n) { return ColumnType{SqlKind::VarChar, n}; }
ColumnType nvarchar(std::uint16_t n) { return ColumnType{SqlKind::NVarChar, n}; }

// The primary key's name, as sp_cdc_help_change_data_capture and cdc.change_tables name it.
std::string key_name(const SqlObject& table) { return "PK_" + table.name; }

std::int64_t column_id_of(const SqlObject& o, const std::string& name) {
  for (std::size_t i = 0; i < o.columns.size(); ++i) {
    if (emu::iequals(o.columns[i].name, name)) {
      return o.table != nullptr ? o.table->columns[i].column_id : static_cast<std::int64_t>(i + 1);
    }
  }
  return 0;
}

// ---- INFORMATION_SCHEMA -------------------------------------------------------------------

std::unique_ptr<Relation> schemata(const ObjectModel& model, const SessionNames& names) {
  Rows rows;
  for (const auto& [schema, id] : model.schemas()) {
    // Each fixed schema is owned by the principal of its name; the tables' own schemas by dbo.
    const std::string owner = id <= 5 ? schema : std::string("dbo");
    rows.push_back({names.database, schema, owner, std::monostate{}, std::monostate{}, std::string("iso_1")});
  }
  return rows_relation({{"CATALOG_NAME", nvarchar(128), true},
                        {"SCHEMA_NAME", nvarchar(128), false},
                        {"SCHEMA_OWNER", nvarchar(128), true},
                        {"DEFAULT_CHARACTER_SET_CATALOG", varchar(6), true},
                        {"DEFAULT_CHARACTER_SET_SCHEMA", varchar(3), true},
                        {"DEFAULT_CHARACTER_SET_NAME", kSysnameT, true}},
                       std::move(rows));
}

bool is_table(const SqlObject& o) {
  return o.kind == Kind::UserTable || o.kind == Kind::ChangeTable || o.kind == Kind::CdcTable;
}

std::unique_ptr<Relation> tables(const ObjectModel& model, const SessionNames& names) {
  Rows rows;
  for (const auto& o : model.objects()) {
    if (is_table(o)) rows.push_back({names.database, o.schema, o.name, std::string("BASE TABLE")});
  }
  return rows_relation({{"TABLE_CATALOG", nvarchar(128), true},
                        {"TABLE_SCHEMA", nvarchar(128), true},
                        {"TABLE_NAME", kSysnameT, false},
                        {"TABLE_TYPE", varchar(10), true}},
                       std::move(rows));
}

// What INFORMATION_SCHEMA.COLUMNS says of a type: lengths, numeric precision and radix.
struct SchemaFacts {
  std::optional<std::int64_t> chars, octets, precision, radix, scale, datetime_precision;
  std::optional<std::string> charset;
};

SchemaFacts schema_facts(const emu::SqlType& t) {
  const NumericFacts n = numeric_facts(t);
  SchemaFacts f{std::nullopt, std::nullopt, n.precision, n.radix, n.scale, n.datetime_precision, std::nullopt};
  const auto text = [&](std::int64_t bytes_per_char, const char* charset) {
    f.chars = t.is_max() ? -1 : t.length;
    f.octets = t.is_max() ? -1 : t.length * bytes_per_char;
    f.charset = charset;
  };
  switch (t.base) {
    case B::Char:
    case B::VarChar: text(1, "iso_1"); break;
    case B::NChar:
    case B::NVarChar: text(2, "UNICODE"); break;
    case B::Binary:
    case B::VarBinary:
      f.chars = t.is_max() ? -1 : t.length;
      f.octets = f.chars;
      break;
    case B::Text:
      f.chars = f.octets = 2147483647;
      f.charset = "iso_1";
      break;
    case B::NText:
      f.chars = 1073741823;
      f.octets = 2147483646;
      f.charset = "UNICODE";
      break;
    case B::Image: f.chars = f.octets = 2147483647; break;
    default: break;
  }
  return f;
}

Value opt(const std::optional<std::int64_t>& v) { return v ? Value{*v} : Value{}; }
Value opt(const std::optional<std::string>& v) { return v ? Value{*v} : Value{}; }

std::unique_ptr<Relation> columns(const ObjectModel& model, const SessionNames& names) {
  Rows rows;
  for (const auto& o : model.objects()) {
    if (!is_table(o)) continue;
    for (std::size_t i = 0; i < o.columns.size(); ++i) {
      const ObjectColumn& c = o.columns[i];
      const SchemaFacts f = schema_facts(c.type);
      const std::string base = c.type.canonical().substr(0, c.type.canonical().find('('));
      const std::string collation = c.type.collation_name();
      rows.push_back({names.database,
                      o.schema,
                      o.name,
                      c.name,
                      column_id_of(o, c.name),
                      std::monostate{},
                      std::string(c.nullable ? "YES" : "NO"),
                      base,
                      opt(f.chars),
                      opt(f.octets),
                      opt(f.precision),
                      opt(f.radix),
                      opt(f.scale),
                      opt(f.datetime_precision),
                      std::monostate{},
                      std::monostate{},
                      opt(f.charset),
                      std::monostate{},
                      std::monostate{},
                      collation.empty() ? Value{} : Value{collation},
                      std::monostate{},
                      std::monostate{},
                      std::monostate{}});
    }
  }
  return rows_relation({{"TABLE_CATALOG", nvarchar(128), true},
                        {"TABLE_SCHEMA", nvarchar(128), true},
                        {"TABLE_NAME", kSysnameT, false},
                        {"COLUMN_NAME", kSysnameT, true},
                        {"ORDINAL_POSITION", kIntT, true},
                        {"COLUMN_DEFAULT", nvarchar(4000), true},
                        {"IS_NULLABLE", varchar(3), true},
                        {"DATA_TYPE", nvarchar(128), true},
                        {"CHARACTER_MAXIMUM_LENGTH", kIntT, true},
                        {"CHARACTER_OCTET_LENGTH", kIntT, true},
                        {"NUMERIC_PRECISION", kTinyIntT, true},
                        {"NUMERIC_PRECISION_RADIX", kSmallIntT, true},
                        {"NUMERIC_SCALE", kIntT, true},
                        {"DATETIME_PRECISION", kSmallIntT, true},
                        {"CHARACTER_SET_CATALOG", kSysnameT, true},
                        {"CHARACTER_SET_SCHEMA", kSysnameT, true},
                        {"CHARACTER_SET_NAME", kSysnameT, true},
                        {"COLLATION_CATALOG", kSysnameT, true},
                        {"COLLATION_SCHEMA", kSysnameT, true},
                        {"COLLATION_NAME", kSysnameT, true},
                        {"DOMAIN_CATALOG", kSysnameT, true},
                        {"DOMAIN_SCHEMA", kSysnameT, true},
                        {"DOMAIN_NAME", kSysnameT, true}},
                       std::move(rows));
}

std::unique_ptr<Relation> table_constraints(const ObjectModel& model, const SessionNames& names) {
  Rows rows;
  for (const auto& o : model.objects()) {
    if (o.kind != Kind::UserTable || o.table->key().empty()) continue;
    rows.push_back({names.database, o.schema, key_name(o), names.database, o.schema, o.name, std::string("PRIMARY KEY"),
                    std::string("NO"), std::string("NO")});
  }
  return rows_relation({{"CONSTRAINT_CATALOG", nvarchar(128), true},
                        {"CONSTRAINT_SCHEMA", nvarchar(128), true},
                        {"CONSTRAINT_NAME", kSysnameT, false},
                        {"TABLE_CATALOG", nvarchar(128), true},
                        {"TABLE_SCHEMA", nvarchar(128), true},
                        {"TABLE_NAME", kSysnameT, false},
                        {"CONSTRAINT_TYPE", varchar(11), true},
                        {"IS_DEFERRABLE", varchar(2), false},
                        {"INITIALLY_DEFERRED", varchar(2), false}},
                       std::move(rows));
}

std::unique_ptr<Relation> key_column_usage(const ObjectModel& model, const SessionNames& names) {
  Rows rows;
  for (const auto& o : model.objects()) {
    if (o.kind != Kind::UserTable) continue;
    const auto key = o.table->key();
    for (std::size_t k = 0; k < key.size(); ++k) {
      rows.push_back({names.database, o.schema, key_name(o), names.database, o.schema, o.name, key[k]->name,
                      static_cast<std::int64_t>(k + 1)});
    }
  }
  return rows_relation({{"CONSTRAINT_CATALOG", nvarchar(128), true},
                        {"CONSTRAINT_SCHEMA", nvarchar(128), true},
                        {"CONSTRAINT_NAME", kSysnameT, false},
                        {"TABLE_CATALOG", nvarchar(128), true},
                        {"TABLE_SCHEMA", nvarchar(128), true},
                        {"TABLE_NAME", kSysnameT, false},
                        {"COLUMN_NAME", kSysnameT, true},
                        {"ORDINAL_POSITION", kIntT, false}},
                       std::move(rows));
}

// ---- sys.indexes and sys.index_columns ---------------------------------------------------

// One index of a table: a user table's clustered primary key (or its heap), a change table's
// clustered index.
struct IndexRow {
  const SqlObject* table;
  std::optional<std::string> name;  // NULL for a heap
  std::int64_t index_id;            // 0 heap, 1 clustered
  bool primary_key;
  std::vector<std::string> key;
};

std::vector<IndexRow> index_rows(const ObjectModel& model) {
  std::vector<IndexRow> out;
  for (const auto& o : model.objects()) {
    if (auto ix = clustered_index(o)) {
      out.push_back({&o, ix->name, 1, ix->primary_key, std::move(ix->keys)});
    } else if (o.kind == Kind::UserTable) {
      out.push_back({&o, std::nullopt, 0, false, {}});  // a heap
    }
  }
  return out;
}

std::unique_ptr<Relation> sys_indexes(const ObjectModel& model) {
  Rows rows;
  for (const auto& ix : index_rows(model)) {
    const bool heap = ix.index_id == 0;
    rows.push_back({ix.table->object_id,
                    ix.name ? Value{*ix.name} : Value{},
                    ix.index_id,
                    ix.index_id,
                    std::string(heap ? "HEAP" : "CLUSTERED"),
                    !heap,
                    std::int64_t{1},
                    false,
                    ix.primary_key,
                    false,
                    std::int64_t{0},
                    false,
                    false,
                    false,
                    false,
                    true,
                    true,
                    false,
                    std::monostate{},
                    std::monostate{},
                    false,
                    false,
                    false});
  }
  return rows_relation({{"object_id", kIntT, false},
                        {"name", kSysnameT, true},
                        {"index_id", kIntT, false},
                        {"type", kTinyIntT, false},
                        {"type_desc", kDesc60T, true},
                        {"is_unique", kBitT, true},
                        {"data_space_id", kIntT, true},
                        {"ignore_dup_key", kBitT, true},
                        {"is_primary_key", kBitT, true},
                        {"is_unique_constraint", kBitT, true},
                        {"fill_factor", kTinyIntT, false},
                        {"is_padded", kBitT, true},
                        {"is_disabled", kBitT, true},
                        {"is_hypothetical", kBitT, true},
                        {"is_ignored_in_optimization", kBitT, true},
                        {"allow_row_locks", kBitT, true},
                        {"allow_page_locks", kBitT, true},
                        {"has_filter", kBitT, true},
                        {"filter_definition", nvarchar(kMax), true},
                        {"compression_delay", kIntT, true},
                        {"suppress_dup_key_messages", kBitT, true},
                        {"auto_created", kBitT, true},
                        {"optimize_for_sequential_key", kBitT, true}},
                       std::move(rows));
}

std::unique_ptr<Relation> sys_index_columns(const ObjectModel& model) {
  Rows rows;
  for (const auto& ix : index_rows(model)) {
    for (std::size_t k = 0; k < ix.key.size(); ++k) {
      const auto n = static_cast<std::int64_t>(k + 1);
      // Built value by value: GCC 12 warns falsely (-Wmaybe-uninitialized) on this row's braces.
      auto& row = rows.emplace_back();
      for (const std::int64_t v :
           {ix.table->object_id, ix.index_id, n, column_id_of(*ix.table, ix.key[k]), n, std::int64_t{0}})
        row.emplace_back(v);
      row.emplace_back(false);
      row.emplace_back(false);
      row.emplace_back(std::int64_t{0});
    }
  }
  return rows_relation({{"object_id", kIntT, false},
                        {"index_id", kIntT, false},
                        {"index_column_id", kIntT, false},
                        {"column_id", kIntT, false},
                        {"key_ordinal", kTinyIntT, false},
                        {"partition_ordinal", kTinyIntT, false},
                        {"is_descending_key", kBitT, true},
                        {"is_included_column", kBitT, true},
                        {"column_store_order_ordinal", kTinyIntT, false}},
                       std::move(rows));
}

// ---- CDC monitoring ----------------------------------------------------------------------

// "0x0000002700000090000B" as the view writes an LSN: "00000027:00000090:000B"; NULL for none.
Value scan_lsn(const std::string& hex) {
  if (hex.size() != 22) return std::monostate{};
  return hex.substr(2, 8) + ":" + hex.substr(10, 8) + ":" + hex.substr(18, 4);
}

// The capture cycles the job procedures ran (jobs.hpp), after the aggregate row (session_id 0)
// SQL Server shows once a session has run. Capture at commit (immediate mode) and in-process
// cycles are no log scan sessions and are not listed. The emulator never fails a scan, so
// sys.dm_cdc_errors has SQL Server's columns and no rows.
std::unique_ptr<Relation> log_scan_sessions(emu::Reader& reader, const SessionNames& names) {
  const auto sessions = names.job_views ? names.job_views().sessions : std::vector<ScanSession>{};
  const auto zone = emu::TimeZone::load(reader.server_time_zone());
  const auto local = [&](std::int64_t utc) -> Value { return micros_to_datetime2(zone.to_local(utc)); };
  Rows rows;
  const auto row = [&](std::int64_t id, std::int64_t start, std::int64_t end, std::string phase, std::int64_t trans,
                       const std::string& first_lsn, const std::string& last_lsn, std::int64_t empty) {
    const std::int64_t seconds = (end - start) / 1'000'000;
    std::vector<Value> r;
    r.emplace_back(id);
    r.push_back(local(start));
    r.push_back(local(end));
    r.emplace_back(seconds);
    r.emplace_back(std::move(phase));
    r.emplace_back(std::int64_t{0});
    r.push_back(scan_lsn(first_lsn));
    r.push_back(scan_lsn(last_lsn));
    r.push_back(scan_lsn(last_lsn));
    r.emplace_back(trans);
    r.push_back(scan_lsn(last_lsn));
    r.push_back(local(end));
    r.emplace_back(trans);
    r.emplace_back(std::int64_t{0});
    r.emplace_back(trans);
    r.push_back(scan_lsn(first_lsn));
    r.push_back(scan_lsn(last_lsn));
    r.push_back(local(end));
    r.emplace_back(std::int64_t{0});
    r.emplace_back(empty);
    r.emplace_back(std::int64_t{0});
    rows.push_back(std::move(r));
  };
  if (!sessions.empty()) {
    std::int64_t trans = 0;
    std::int64_t seconds = 0;
    std::int64_t empty = 0;
    for (const auto& s : sessions) {
      trans += s.tran_count;
      seconds += s.end_utc - s.start_utc;
      empty += s.tran_count == 0 ? 1 : 0;
    }
    const auto& last = sessions.back();
    row(0, sessions.front().start_utc, sessions.front().start_utc + seconds, "Aggregate", trans, last.start_lsn,
        last.end_lsn, empty);
    for (const auto& s : sessions) {
      row(s.session_id, s.start_utc, s.end_utc, "Done", s.tran_count, s.start_lsn, s.end_lsn, s.tran_count == 0);
    }
  }
  return rows_relation({{"session_id", kIntT, true},
                        {"start_time", kDateTimeT, true},
                        {"end_time", kDateTimeT, true},
                        {"duration", kIntT, true},
                        {"scan_phase", nvarchar(200), true},
                        {"error_count", kIntT, true},
                        {"start_lsn", nvarchar(23), true},
                        {"current_lsn", nvarchar(23), true},
                        {"end_lsn", nvarchar(23), true},
                        {"tran_count", kBigIntT, true},
                        {"last_commit_lsn", nvarchar(23), true},
                        {"last_commit_time", kDateTimeT, true},
                        {"log_record_count", kBigIntT, true},
                        {"schema_change_count", kIntT, true},
                        {"command_count", kBigIntT, true},
                        {"first_begin_cdc_lsn", nvarchar(23), true},
                        {"last_commit_cdc_lsn", nvarchar(23), true},
                        {"last_commit_cdc_time", kDateTimeT, true},
                        {"latency", kIntT, true},
                        {"empty_scan_count", kIntT, true},
                        {"failed_sessions_count", kIntT, true}},
                       std::move(rows));
}

std::unique_ptr<Relation> cdc_errors() {
  return rows_relation({{"session_id", kIntT, true},
                        {"phase_number", kIntT, true},
                        {"entry_time", kDateTimeT, true},
                        {"error_number", kIntT, true},
                        {"error_severity", kIntT, true},
                        {"error_state", kIntT, true},
                        {"error_message", nvarchar(1024), true},
                        {"start_lsn", nvarchar(23), true},
                        {"begin_lsn", nvarchar(23), true},
                        {"sequence_value", nvarchar(23), true}},
                       {});
}

// msdb.dbo.cdc_jobs: sp_cdc_help_jobs' rows in the table's column order. The emulator serves
// one database, whose id is 5, the first a user database takes.
std::unique_ptr<Relation> cdc_jobs(const SessionNames& names) {
  Rows rows;
  if (names.job_views) {
    // help_jobs: job_id, job_type, job_name, maxtrans, maxscans, continuous, pollinginterval,
    // retention, threshold.
    for (auto& r : names.job_views().jobs) {
      rows.push_back({std::int64_t{5}, r[1], r[0], r[3], r[4], r[5], r[6], r[7], r[8]});
    }
  }
  return rows_relation({{"database_id", kIntT, false},
                        {"job_type", nvarchar(20), false},
                        {"job_id", ColumnType{SqlKind::UniqueIdentifier, 16}, true},
                        {"maxtrans", kIntT, true},
                        {"maxscans", kIntT, true},
                        {"continuous", kBitT, true},
                        {"pollinginterval", kBigIntT, true},
                        {"retention", kBigIntT, true},
                        {"threshold", kBigIntT, true}},
                       std::move(rows));
}

// ---- scalar functions --------------------------------------------------------------------

void arity(const std::string& fn, const std::vector<TypedValue>& args, std::size_t lo, std::size_t hi) {
  if (args.size() < lo || args.size() > hi) {
    throw Error(ErrorKind::Sql,
                "The " + fn + " function requires " + std::to_string(lo) +
                    (lo == hi ? "" : " to " + std::to_string(hi)) + " argument(s).",
                174);
  }
}

std::optional<std::int64_t> int_of(const TypedValue& v) {
  if (const auto* n = std::get_if<std::int64_t>(&v.value)) return *n;
  if (const auto* d = std::get_if<Decimal>(&v.value)) return static_cast<std::int64_t>(d->unscaled);
  return std::nullopt;
}

TypedValue sysname(std::optional<std::string> s) {
  return s ? TypedValue{kSysnameT, std::move(*s)} : TypedValue{kSysnameT, std::monostate{}};
}

}  // namespace

std::optional<ClusteredIndex> clustered_index(const SqlObject& object) {
  if (object.kind == Kind::UserTable) {
    ClusteredIndex ix{key_name(object), {}, true};
    for (const auto* c : object.table->key()) ix.keys.push_back(c->name);
    if (ix.keys.empty()) return std::nullopt;
    return ix;
  }
  if (object.kind == Kind::ChangeTable) {
    ClusteredIndex ix{
        object.instance->name + "_CT_clustered_idx", {"__$start_lsn", "__$seqval", "__$operation"}, false};
    if (object.instance->has_command_id) ix.keys.insert(ix.keys.begin() + 1, "__$command_id");
    return ix;
  }
  return std::nullopt;
}

TypedValue server_property(const std::string& property) {
  struct Text {
    const char* name;
    const char* value;
  };
  // SQL Server 2022 RTM Developer edition, 64-bit, the default instance; the build matches
  // @@VERSION's, and the names that are free text say that this server is the emulator.
  static constexpr std::array<Text, 14> kText{{
      {"productversion", "16.0.1000.6"},
      {"productmajorversion", "16"},
      {"productminorversion", "0"},
      {"productbuild", "1000"},
      {"productlevel", "RTM"},
      {"edition", "Developer Edition (64-bit)"},
      {"servername", "mssql-cdc-emulator"},
      {"machinename", "mssql-cdc-emulator"},
      {"computernamephysicalnetbios", "mssql-cdc-emulator"},
      {"collation", "SQL_Latin1_General_CP1_CI_AS"},
      {"sqlcharsetname", "iso_1"},
      {"sqlsortordername", "nocase_iso"},
      {"buildclrversion", "v4.0.30319"},
      {"resourceversion", "16.00.1000"},
  }};
  struct Number {
    const char* name;
    std::int64_t value;
  };
  static constexpr std::array<Number, 19> kNumbers{{
      {"engineedition", 3},  // Enterprise: what Developer and Evaluation report
      {"editionid", -2117995310},
      {"ishadrenabled", 0},
      {"isclustered", 0},
      {"isintegratedsecurityonly", 0},
      {"isfulltextinstalled", 0},
      {"issingleuser", 0},
      {"islocaldb", 0},
      {"isxtpsupported", 1},
      {"ispolybaseinstalled", 0},
      {"isadvancedanalyticsinstalled", 0},
      {"isexternalauthenticationonly", 0},
      {"filestreamconfiguredlevel", 0},
      {"filestreameffectivelevel", 0},
      {"lcid", 1033},
      {"sqlcharset", 1},
      {"sqlsortorder", 52},
      {"comparisonstyle", 196609},
      {"processid", 1},
  }};
  const std::string key = lower(property);
  for (const auto& t : kText) {
    if (key == t.name) return TypedValue{nvarchar(128), std::string(t.value)};
  }
  for (const auto& n : kNumbers) {
    if (key == n.name) return TypedValue{key == "editionid" ? kBigIntT : kIntT, n.value};
  }
  return TypedValue{nvarchar(128), std::monostate{}};  // InstanceName of a default instance too
}

std::unique_ptr<Relation> meta_relation(const ObjectModel& model, emu::Reader& reader, const SessionNames& names,
                                        const ObjectName& name) {
  if (name.size() != 2) return nullptr;
  const std::string schema = lower(name[0]);
  const std::string view = lower(name[1]);
  if (schema == "msdb.dbo") return view == "cdc_jobs" ? cdc_jobs(names) : nullptr;
  if (schema == "information_schema") {
    if (view == "schemata") return schemata(model, names);
    if (view == "tables") return tables(model, names);
    if (view == "columns") return columns(model, names);
    if (view == "table_constraints") return table_constraints(model, names);
    if (view == "key_column_usage") return key_column_usage(model, names);
    return nullptr;
  }
  if (schema != "sys") return nullptr;
  if (view == "indexes") return sys_indexes(model);
  if (view == "index_columns") return sys_index_columns(model);
  if (view == "dm_cdc_log_scan_sessions") return log_scan_sessions(reader, names);
  if (view == "dm_cdc_errors") return cdc_errors();
  return nullptr;
}

std::optional<TypedValue> meta_scalar(emu::Reader& reader, const SessionNames& names, const std::string& fn,
                                      const std::vector<TypedValue>& args) {
  if (fn == "serverproperty") {
    arity(fn, args, 1, 1);
    const auto* text = std::get_if<std::string>(&args[0].value);
    return text != nullptr ? server_property(*text) : TypedValue{nvarchar(128), std::monostate{}};
  }
  if (fn == "schema_id") {
    arity(fn, args, 0, 1);
    if (args.empty()) return TypedValue{kIntT, std::int64_t{1}};  // the default schema: dbo
    const auto* text = std::get_if<std::string>(&args[0].value);
    const std::int64_t id = text != nullptr ? object_model(reader)->schema_id(*text) : 0;
    return id != 0 ? TypedValue{kIntT, id} : TypedValue{kIntT, std::monostate{}};
  }
  if (fn == "schema_name") {
    arity(fn, args, 0, 1);
    const std::int64_t id = args.empty() ? 1 : int_of(args[0]).value_or(0);
    for (const auto& [schema, sid] : object_model(reader)->schemas()) {
      if (sid == id) return sysname(schema);
    }
    return sysname(std::nullopt);
  }
  if (fn == "suser_sname" || fn == "suser_name" || fn == "system_user" || fn == "original_login") {
    arity(fn, args, 0, fn == "suser_sname" || fn == "suser_name" ? 1 : 0);
    if (!args.empty()) return sysname(std::nullopt);  // the emulator keeps no SIDs
    return sysname(names.login.empty() ? std::string("sa") : names.login);
  }
  if (fn == "user_name" || fn == "current_user") {
    arity(fn, args, 0, fn == "user_name" ? 1 : 0);
    const std::string user = reader.user().value_or("dbo");
    if (args.empty()) return sysname(user);
    const auto id = int_of(args[0]);
    if (id == 1) return sysname(std::string("dbo"));
    if (id == 2) return sysname(std::string("guest"));
    return sysname(std::nullopt);
  }
  return std::nullopt;
}

}  // namespace mssqlcdc::tds
