#include "procedures.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <utility>

#include "ddl.hpp"
#include "jdbc_metadata.hpp"
#include "jobs.hpp"
#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "procedures_meta.hpp"
#include "stored.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {
namespace {

[[noreturn]] void sql_error(int number, const std::string& text) { throw Error(ErrorKind::Sql, text, number); }

[[noreturn]] void syntax_error_at(const std::vector<SqlToken>& tokens, std::size_t at) {
  sql_error(102, "Incorrect syntax near '" + (at < tokens.size() ? tokens[at].text : std::string(";")) + "'.");
}

// SQL Server answers an unknown capture instance or table, and one the caller may not read,
// with the same error, so a caller learns nothing about objects it cannot see.
[[noreturn]] void no_such_object() { sql_error(22981, "Object does not exist or access is denied."); }

const ColumnType kSysname{SqlKind::NVarChar, 128, 0, 0, false};
const ColumnType kText{SqlKind::NVarChar, kMax, 0, 0, false};
const ColumnType kInt{SqlKind::Int};
const ColumnType kBit{SqlKind::Bit};
const ColumnType kLsn{SqlKind::Binary, 10, 0, 0, false};
const ColumnType kDateTime{SqlKind::DateTime, 0, 0, 3, false};

Value text_or_null(const std::optional<std::string>& s) {
  if (!s) return std::monostate{};
  return *s;
}

std::pair<std::string, std::string> schema_and_table(const std::string& full) {
  const auto dot = full.find('.');
  return {full.substr(0, dot), full.substr(dot + 1)};
}

std::string bracket_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "[" : ", [") + n + "]";
  return out;
}

ResultSet result(std::vector<std::pair<const char*, ColumnType>> columns) {
  ResultSet rs;
  for (auto& [name, type] : columns) rs.columns.push_back(Column{name, type, true});
  return rs;
}

// The arguments of one call after binding: present when the caller passed them (NULL included).
class Args {
 public:
  explicit Args(std::map<std::string, TypedValue> values) : values_(std::move(values)) {}
  [[nodiscard]] const TypedValue* find(const std::string& name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }
  // sysname and nvarchar arguments; SQL Server converts numbers passed to them implicitly.
  [[nodiscard]] std::optional<std::string> text(const std::string& name) const {
    const TypedValue* v = find(name);
    if (v == nullptr || is_null(v->value)) return std::nullopt;
    if (const auto* s = std::get_if<std::string>(&v->value)) return *s;
    if (const auto* i = std::get_if<std::int64_t>(&v->value)) return std::to_string(*i);
    sql_error(206, "Operand type clash: " + type_name(v->type) + " is incompatible with nvarchar");
  }
  // int, bigint and bit arguments; SQL Server converts digits passed as text implicitly.
  [[nodiscard]] std::optional<std::int64_t> integer(const std::string& name) const {
    const TypedValue* v = find(name);
    if (v == nullptr || is_null(v->value)) return std::nullopt;
    if (const auto* i = std::get_if<std::int64_t>(&v->value)) return *i;
    if (const auto* b = std::get_if<bool>(&v->value)) return *b ? 1 : 0;
    if (const auto* s = std::get_if<std::string>(&v->value)) {
      try {
        std::size_t used = 0;
        const long long n = std::stoll(*s, &used);
        if (used == s->size()) return n;
      } catch (const std::logic_error&) {}
    }
    sql_error(8114, "Error converting data type " + type_name(v->type) + " to bigint.");
  }

 private:
  std::map<std::string, TypedValue> values_;
};

// The storage's catalog row of one capture instance, for the columns the reader does not give.
struct ChangeTable {
  std::int64_t object_id = 0;
  std::int64_t source_object_id = 0;
  bool has_drop_pending = false;
  std::optional<std::string> role_name;
  std::optional<std::string> index_name;
};

ChangeTable change_table(emu::Engine& engine, const std::string& capture_instance) {
  auto st = engine.db().prepare(
      "SELECT object_id, source_object_id, has_drop_pending, role_name, index_name FROM \"cdc.change_tables\" "
      "WHERE capture_instance = ?");
  st.bind(1, std::string_view(capture_instance));
  if (!st.step()) no_such_object();
  ChangeTable out{st.i64(0), st.i64(1), st.i64(2) != 0, std::nullopt, std::nullopt};
  if (!st.is_null(3)) out.role_name = st.text(3);
  if (!st.is_null(4)) out.index_name = st.text(4);
  return out;
}

// Resolves a capture instance through the reader, as the help procedures see it.
emu::InstanceInfo instance(emu::Reader& reader, const std::optional<std::string>& name) {
  if (!name) no_such_object();
  try {
    return reader.resolve_instance(*name);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::EmuUnknownObject) no_such_object();
    throw;
  }
}

std::vector<ResultSet> help_change_data_capture(Storage& storage, const Args& args) {
  const auto schema = args.text("@source_schema");
  const auto name = args.text("@source_name");
  if (schema.has_value() != name.has_value()) no_such_object();  // both, or neither
  emu::Reader& reader = storage.reader();
  std::vector<std::string> tables = reader.tables();
  if (schema) {
    const std::string wanted = *schema + "." + *name;
    const auto it = std::find_if(tables.begin(), tables.end(), [&](const auto& t) { return emu::iequals(t, wanted); });
    if (it == tables.end()) no_such_object();
    tables = {*it};
  }
  ResultSet rs = result({{"source_schema", kSysname},
                         {"source_table", kSysname},
                         {"capture_instance", kSysname},
                         {"object_id", kInt},
                         {"source_object_id", kInt},
                         {"start_lsn", kLsn},
                         {"end_lsn", kLsn},
                         {"supports_net_changes", kBit},
                         {"has_drop_pending", kBit},
                         {"role_name", kSysname},
                         {"index_name", kSysname},
                         {"filegroup_name", kSysname},
                         {"create_date", kDateTime},
                         {"index_column_list", kText},
                         {"captured_column_list", kText}});
  for (const auto& table : tables) {
    for (const emu::InstanceInfo& in : reader.capture_instances(table)) {
      const auto [source_schema, source_table] = schema_and_table(in.table);
      const ChangeTable ct = change_table(storage.writer(), in.name);
      std::vector<std::string> captured;
      for (const auto& c : reader.captured_columns(in.name)) captured.push_back(c.name);
      rs.rows.push_back({source_schema, source_table, in.name, ct.object_id, ct.source_object_id,
                         in.established ? lsn_value(in.start_lsn) : Value{std::monostate{}}, std::monostate{},
                         !in.index_columns.empty(), ct.has_drop_pending, text_or_null(ct.role_name),
                         text_or_null(ct.index_name), std::monostate{}, micros_to_datetime2(in.create_date),
                         bracket_list(in.index_columns), bracket_list(captured)});
    }
  }
  return {std::move(rs)};
}

// INFORMATION_SCHEMA's description of a type, as sp_cdc_get_captured_columns reports it.
struct SchemaFacts {
  std::optional<std::int64_t> max_length, precision, radix, scale, datetime_precision;
};

SchemaFacts schema_facts(const emu::SqlType& t) {
  using B = emu::Base;
  const NumericFacts n = numeric_facts(t);
  SchemaFacts f{std::nullopt, n.precision, n.radix, n.scale, n.datetime_precision};
  switch (t.base) {
    case B::Char:
    case B::VarChar:
    case B::NChar:
    case B::NVarChar:
    case B::Binary:
    case B::VarBinary: f.max_length = t.length; break;
    case B::Text:
    case B::Image: f.max_length = 2147483647; break;
    case B::NText: f.max_length = 1073741823; break;
    default: break;
  }
  return f;
}

Value opt_int(const std::optional<std::int64_t>& v) {
  if (!v) return std::monostate{};
  return *v;
}

// A per-instance procedure's result: its rows start with the instance's schema, table and name.
struct InstanceRows {
  emu::InstanceInfo info;
  std::vector<Value> head;
  ResultSet rs;
};

InstanceRows instance_rows(Storage& storage, const Args& args, std::vector<std::pair<const char*, ColumnType>> more) {
  emu::InstanceInfo in = instance(storage.reader(), args.text("@capture_instance"));
  const auto [source_schema, source_table] = schema_and_table(in.table);
  more.insert(more.begin(), {{"source_schema", kSysname}, {"source_table", kSysname}, {"capture_instance", kSysname}});
  std::vector<Value> head{source_schema, source_table, in.name};
  return InstanceRows{std::move(in), std::move(head), result(std::move(more))};
}

std::vector<ResultSet> get_captured_columns(Storage& storage, const Args& args) {
  InstanceRows out = instance_rows(storage, args,
                                   {{"column_name", kSysname},
                                    {"column_id", kInt},
                                    {"column_ordinal", kInt},
                                    {"data_type", kSysname},
                                    {"character_maximum_length", kInt},
                                    {"numeric_precision", ColumnType{SqlKind::TinyInt}},
                                    {"numeric_precision_radix", ColumnType{SqlKind::SmallInt}},
                                    {"numeric_scale", kInt},
                                    {"datetime_precision", ColumnType{SqlKind::SmallInt}}});
  for (const emu::ColumnInfo& c : storage.reader().captured_columns(out.info.name)) {
    const emu::SqlType type = emu::SqlType::parse(c.sql_type);
    const std::string canonical = type.canonical();
    const SchemaFacts f = schema_facts(type);
    std::vector<Value> row = out.head;
    row.insert(row.end(), {c.name, c.column_id, std::int64_t{c.ordinal}, canonical.substr(0, canonical.find('(')),
                           opt_int(f.max_length), opt_int(f.precision), opt_int(f.radix), opt_int(f.scale),
                           opt_int(f.datetime_precision)});
    out.rs.rows.push_back(std::move(row));
  }
  return {std::move(out.rs)};
}

std::vector<ResultSet> get_ddl_history(Storage& storage, const Args& args) {
  InstanceRows out = instance_rows(
      storage, args,
      {{"required_column_update", kBit}, {"ddl_command", kText}, {"ddl_lsn", kLsn}, {"ddl_time", kDateTime}});
  for (const emu::DdlEntry& e : storage.reader().ddl_history(out.info.name, Lsn::zero(), Lsn::max())) {
    std::vector<Value> row = out.head;
    row.insert(row.end(),
               {e.required_column_update, e.ddl_command, lsn_value(e.ddl_lsn), micros_to_datetime2(e.ddl_time)});
    out.rs.rows.push_back(std::move(row));
  }
  return {std::move(out.rs)};
}

// @captured_column_list: names separated by commas, each bare, [bracketed] or "quoted".
std::vector<std::string> column_list(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  char close = 0;
  bool quoted = false;
  for (const char c : text) {
    if (close != 0) {
      if (c == close) close = 0;
      else current += c;
    } else if (c == '[' || c == '"') {
      close = c == '[' ? ']' : '"';
      quoted = true;
    } else if (c == ',') {
      out.push_back(current);
      current.clear();
      quoted = false;
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      current += c;
    }
  }
  if (!current.empty() || quoted || !out.empty()) out.push_back(current);
  return out;
}

// The emulator's refusals keep their explanation; those without a SQL Server number get the
// number SQL Server gives the same case, or 50000 where it has none for it.
[[noreturn]] void rethrow_as_sql(const Error& e) {
  if (e.kind() == ErrorKind::Sql) throw;
  int number = e.number();
  if (number == 0) number = e.kind() == ErrorKind::EmuUnknownObject ? 22981 : 50000;
  sql_error(number, e.what());
}

template <typename Fn>
void write(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    rethrow_as_sql(e);
  }
}

std::vector<ResultSet> enable_table(Storage& storage, const Args& args) {
  const auto schema = args.text("@source_schema");
  const auto name = args.text("@source_name");
  if (!schema || !name) no_such_object();
  // @role_name gates the instance (created when missing, decision 1280); the emulator keeps no
  // filegroups or alternative unique indexes: the primary key identifies rows.
  std::optional<std::vector<std::string>> columns;
  if (const auto list = args.text("@captured_column_list")) columns = column_list(*list);
  std::optional<bool> net;
  if (const auto n = args.integer("@supports_net_changes")) net = *n != 0;
  check_enable_table(storage, *schema, *name, net, args.text("@index_name"), columns);
  write([&] {
    (void)storage.writer().enable_cdc(*schema + "." + *name, args.text("@capture_instance"), columns,
                                      args.text("@role_name"));
  });
  return {};
}

std::vector<ResultSet> disable_table(Storage& storage, const Args& args) {
  const auto schema = args.text("@source_schema");
  const auto name = args.text("@source_name");
  const auto ci = args.text("@capture_instance");
  if (!schema || !name || !ci) no_such_object();
  const std::string table = *schema + "." + *name;
  std::vector<std::string> names;
  write([&] {
    for (const auto& in : storage.reader().capture_instances(table)) names.push_back(in.name);
  });
  if (!emu::iequals(*ci, "all")) {
    const auto it = std::find_if(names.begin(), names.end(), [&](const auto& n) { return emu::iequals(n, *ci); });
    if (it == names.end()) no_such_object();
    names = {*it};
  }
  write([&] {
    for (const auto& n : names) storage.writer().disable_cdc(n);
  });
  return {};
}

// The parts of a name as sp_rename takes it: "dbo.orders.qty", "[dbo].[orders]", brackets off.
std::vector<std::string> name_parts(const std::string& text) {
  std::vector<std::string> out(1);
  bool bracket = false;
  for (const char c : text) {
    if (bracket) {
      if (c == ']') bracket = false;
      else out.back() += c;
    } else if (c == '[') {
      bracket = true;
    } else if (c == '.') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

// sp_rename of a table or a column (decision 1261); SQL Server's numbers and texts for the
// refusals a CDC table meets.
std::vector<ResultSet> rename(Storage& storage, const Args& args) {
  const auto objname = args.text("@objname");
  const auto newname = args.text("@newname");
  if (!objname || !newname) sql_error(15223, "Error: The input parameter '@objname' is not allowed to be null.");
  const std::string type = lower(args.text("@objtype").value_or(""));
  auto parts = name_parts(*objname);
  const bool column = type == "column";
  if (!column && !type.empty() && type != "object") {
    sql_error(15249, "Error: Explicit @objtype '" + *args.text("@objtype") + "' is unrecognized.");
  }
  if (parts.size() == (column ? 2U : 1U)) parts.insert(parts.begin(), "dbo");
  if (parts.size() != (column ? 3U : 2U) ||
      std::any_of(parts.begin(), parts.end(), [](const auto& p) { return p.empty(); })) {
    sql_error(15248, "Either the parameter @objname is ambiguous or the claimed @objtype (" +
                         std::string(column ? "COLUMN" : "(null)") + ") is wrong.");
  }
  const std::string table = parts[0] + "." + parts[1];
  try {
    if (column) {
      storage.writer().rename_column(table, parts[2], *newname);
    } else {
      storage.writer().rename_table(table, *newname);
    }
  } catch (const Error& e) {
    if (e.number() == 4928) sql_error(4928, "Cannot alter column '" + parts[2] + "' because it is 'REPLICATED'.");
    if (e.number() == 15335) {
      sql_error(15335, "Error: The new name '" + *newname + "' is already in use as a " +
                           (column ? "COLUMN" : "OBJECT") + " name and would cause a duplicate that is not permitted.");
    }
    if (e.number() == 15248 || e.kind() == ErrorKind::EmuUnknownObject) {
      sql_error(15248, "Either the parameter @objname is ambiguous or the claimed @objtype (" +
                           std::string(column ? "COLUMN" : "(null)") + ") is wrong.");
    }
    rethrow_as_sql(e);
  }
  return {};
}

std::vector<ResultSet> cleanup_change_table(Storage& storage, const Args& args) {
  const emu::InstanceInfo in = instance(storage.reader(), args.text("@capture_instance"));
  const TypedValue* mark = args.find("@low_water_mark");
  Lsn low = in.start_lsn;  // NULL: clean below the current mark
  if (mark != nullptr && !is_null(mark->value)) {
    const auto lsn = lsn_of(mark->value);
    if (!lsn) {
      sql_error(257, "Implicit conversion from data type " + type_name(mark->type) +
                         " to binary is not allowed. Use the CONVERT function to run this query.");
    }
    low = *lsn;
  }
  if (const TypedValue* t = args.find("@threshold"); t != nullptr && !is_null(t->value)) {
    const auto* n = std::get_if<std::int64_t>(&t->value);
    if (n == nullptr || *n <= 0)
      sql_error(
          22850,
          "The threshold value specified for the Change Data Capture cleanup process must be greater than 0. When "
          "creating or modifying the cleanup job, specify a positive threshold value. If this error is encountered "
          "when executing the sys.sp_cdc_cleanup_change_table stored procedure, reset the threshold value associated "
          "with the job to a non-negative value by using the sp_cdc_change_job stored procedure.");
  }
  write([&] { storage.writer().cleanup(in.name, low); });
  return {};
}

// The emulator's database always has CDC enabled, so enabling it again changes nothing, as
// SQL Server's own sp_cdc_enable_db does on an enabled database.
std::vector<ResultSet> enable_db(Storage& /*storage*/, const Args& /*args*/) { return {}; }

// The job procedures (jobs.cpp): @job_type and the numeric arguments present and not NULL.
JobCall job_call(const Args& args, std::initializer_list<const char*> numbers) {
  JobCall call{args.text("@job_type"), {}};
  for (const char* name : numbers) {
    if (const auto v = args.integer(name)) call.values[name] = *v;
  }
  return call;
}

std::vector<ResultSet> help_jobs_proc(Storage& storage, const Args& /*args*/) {
  return help_jobs(storage.writer(), storage.database());
}

std::vector<ResultSet> change_job_proc(Storage& storage, const Args& args) {
  const JobCall call =
      job_call(args, {"@maxtrans", "@maxscans", "@continuous", "@pollinginterval", "@retention", "@threshold"});
  write([&] { change_job(storage.writer(), call); });
  return {};
}

std::vector<ResultSet> start_job_proc(Storage& storage, const Args& args) {
  write([&] { start_job(storage.writer(), job_call(args, {})); });
  return {};
}

std::vector<ResultSet> stop_job_proc(Storage& storage, const Args& args) {
  write([&] { stop_job(storage.writer(), job_call(args, {})); });
  return {};
}

std::vector<ResultSet> scan_proc(Storage& storage, const Args& args) {
  const JobCall call = job_call(args, {"@maxtrans", "@maxscans", "@continuous", "@pollinginterval"});
  write([&] { scan(storage.writer(), call); });
  return {};
}

// sp_updatestats [@resample]: rebuilds the statistics that have changes since their build or
// were never built, each by a full scan (decision 1448).
std::vector<ResultSet> updatestats_proc(Storage& storage, const Args&) {
  write([&] { storage.reader().update_all_statistics(); });
  return {};
}

// The JDBC metadata procedures (jdbc_metadata.cpp).
MetadataFilter metadata_filter(const Args& args) {
  return {args.text("@table_name"),  args.text("@table_owner"), args.text("@table_qualifier"),
          args.text("@column_name"), args.text("@table_type"),  args.integer("@fusepattern").value_or(1) != 0};
}

std::vector<ResultSet> tables_proc(Storage& storage, const Args& args) {
  return sp_tables(storage.reader(), storage.database(), metadata_filter(args));
}

std::vector<ResultSet> columns_proc(Storage& storage, const Args& args) {
  return sp_columns(storage.reader(), storage.database(), metadata_filter(args), false);
}

std::vector<ResultSet> columns_100_proc(Storage& storage, const Args& args) {
  return sp_columns(storage.reader(), storage.database(), metadata_filter(args), true);
}

std::vector<ResultSet> pkeys_proc(Storage& storage, const Args& args) {
  return sp_pkeys(storage.reader(), storage.database(), metadata_filter(args));
}

using Param = ProcParam;

struct Procedure {
  const char* name;
  std::vector<Param> params;  // in SQL Server's declared order, for positional arguments
  std::function<std::vector<ResultSet>(Storage&, const Args&)> run;
};

const std::vector<Procedure>& procedures() {
  static const std::vector<Procedure> all = {
      {"sp_cdc_help_change_data_capture",
       {{"@source_schema", false}, {"@source_name", false}},
       help_change_data_capture},
      {"sp_cdc_get_captured_columns", {{"@capture_instance", true}}, get_captured_columns},
      {"sp_cdc_get_ddl_history", {{"@capture_instance", true}}, get_ddl_history},
      {"sp_cdc_enable_table",
       {{"@source_schema", true},
        {"@source_name", true},
        {"@role_name", true},
        {"@capture_instance", false},
        {"@supports_net_changes", false},
        {"@index_name", false},
        {"@captured_column_list", false},
        {"@filegroup_name", false},
        {"@allow_partition_switch", false}},
       enable_table},
      {"sp_cdc_disable_table",
       {{"@source_schema", true}, {"@source_name", true}, {"@capture_instance", true}},
       disable_table},
      {"sp_cdc_cleanup_change_table",
       {{"@capture_instance", true}, {"@low_water_mark", true}, {"@threshold", false}},
       cleanup_change_table},
      {"sp_cdc_enable_db", {}, enable_db},
      {"sp_rename", {{"@objname", true}, {"@newname", true}, {"@objtype", false}}, rename},
      {"sp_cdc_help_jobs", {}, help_jobs_proc},
      {"sp_cdc_change_job",
       {{"@job_type", false},
        {"@maxtrans", false},
        {"@maxscans", false},
        {"@continuous", false},
        {"@pollinginterval", false},
        {"@retention", false},
        {"@threshold", false}},
       change_job_proc},
      {"sp_cdc_start_job", {{"@job_type", false}}, start_job_proc},
      {"sp_cdc_stop_job", {{"@job_type", false}}, stop_job_proc},
      {"sp_tables",
       {{"@table_name", false},
        {"@table_owner", false},
        {"@table_qualifier", false},
        {"@table_type", false},
        {"@fusepattern", false}},
       tables_proc},
      {"sp_columns",
       {{"@table_name", true},
        {"@table_owner", false},
        {"@table_qualifier", false},
        {"@column_name", false},
        {"@odbcver", false}},
       columns_proc},
      {"sp_columns_100",
       {{"@table_name", true},
        {"@table_owner", false},
        {"@table_qualifier", false},
        {"@column_name", false},
        {"@namescope", false},
        {"@odbcver", false},
        {"@fusepattern", false}},
       columns_100_proc},
      {"sp_pkeys", {{"@table_name", true}, {"@table_owner", false}, {"@table_qualifier", false}}, pkeys_proc},
      {"sp_cdc_scan",
       {{"@maxtrans", false}, {"@maxscans", false}, {"@continuous", false}, {"@pollinginterval", false}},
       scan_proc},
      {"sp_updatestats", {{"@resample", false}}, updatestats_proc},
  };
  return all;
}

// System procedures live in sys and resolve from any database: `sp_x`, `sys.sp_x`, `db.sys.sp_x`.
const Procedure* find_procedure(const std::string& written) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t dot; (dot = written.find('.', start)) != std::string::npos; start = dot + 1) {
    parts.push_back(lower(written.substr(start, dot - start)));
  }
  parts.push_back(lower(written.substr(start)));
  if (parts.size() > 3 || (parts.size() >= 2 && parts[parts.size() - 2] != "sys")) return nullptr;
  for (const Procedure& p : procedures()) {
    if (parts.back() == p.name) return &p;
  }
  return nullptr;
}

Args bind(const Procedure& proc, const std::vector<ProcArg>& args) {
  return Args(bind_arguments(proc.name, proc.params, args));
}

Bytes hex_bytes(const std::string& digits, const std::vector<SqlToken>& tokens, std::size_t at) {
  Bytes out;
  // An odd count of hex digits has an implied leading zero, as in SQL Server's 0x1 = 0x01.
  const std::string even = digits.size() % 2 == 0 ? digits : "0" + digits;
  for (std::size_t i = 0; i < even.size(); i += 2) {
    const auto hi = std::isxdigit(static_cast<unsigned char>(even[i]));
    const auto lo = std::isxdigit(static_cast<unsigned char>(even[i + 1]));
    if (hi == 0 || lo == 0) syntax_error_at(tokens, at);
    out.push_back(static_cast<std::uint8_t>(std::stoi(even.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// A numeric literal: 0x.. binary, integers as int or bigint, 1.50 as decimal(3,2), 1e3 as float.
TypedValue number_literal(const std::vector<SqlToken>& tokens, std::size_t at, bool negative) {
  const std::string& text = tokens[at].text;
  if (text.size() > 1 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    if (negative) syntax_error_at(tokens, at);
    Bytes b = hex_bytes(text.substr(2), tokens, at);
    const auto n = static_cast<std::uint16_t>(std::max<std::size_t>(1, b.size()));
    return {ColumnType{SqlKind::VarBinary, n, 0, 0, false}, std::move(b)};
  }
  try {
    if (text.find_first_of("eE") != std::string::npos) {
      const double d = std::stod(text);
      return {ColumnType{SqlKind::Float}, negative ? -d : d};
    }
    const auto dot = text.find('.');
    if (dot == std::string::npos) {
      std::size_t used = 0;
      const long long v = std::stoll(text, &used);
      if (used != text.size()) syntax_error_at(tokens, at);
      const long long s = negative ? -v : v;
      const bool small = s >= INT32_MIN && s <= INT32_MAX;
      return {ColumnType{small ? SqlKind::Int : SqlKind::BigInt}, static_cast<std::int64_t>(s)};
    }
    const std::string digits = text.substr(0, dot) + text.substr(dot + 1);
    if (digits.empty() || digits.size() > 38 || !std::all_of(digits.begin(), digits.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        })) {
      syntax_error_at(tokens, at);
    }
    __int128 unscaled = 0;
    for (const char c : digits) unscaled = unscaled * 10 + (c - '0');
    const auto scale = static_cast<std::uint8_t>(text.size() - dot - 1);
    const auto precision = static_cast<std::uint8_t>(std::max<std::size_t>(digits.size(), scale));
    return {ColumnType{SqlKind::Decimal, 17, precision, scale, false}, Decimal{negative ? -unscaled : unscaled}};
  } catch (const std::logic_error&) {
    syntax_error_at(tokens, at);
  }
}

}  // namespace

Storage::Storage(std::filesystem::path file, emu::Reader& reader, std::string database)
    : file_(std::move(file)), database_(std::move(database)), reader_(reader) {}

Storage::~Storage() = default;

emu::Engine& Storage::writer() {
  if (!writer_) writer_ = std::make_unique<emu::Engine>(file_);
  return *writer_;
}

TypedValue operand(const std::vector<SqlToken>& tokens, std::size_t& at, const Params& params) {
  if (at >= tokens.size()) syntax_error_at(tokens, at);
  const SqlToken& t = tokens[at];
  switch (t.kind) {
    case TokenKind::String:
    case TokenKind::UnicodeString: {
      ++at;
      const auto n = static_cast<std::uint16_t>(std::max<std::size_t>(1, utf16_units(t.text)));
      return {ColumnType{t.kind == TokenKind::String ? SqlKind::VarChar : SqlKind::NVarChar, n, 0, 0, false}, t.text};
    }
    case TokenKind::Number: return number_literal(tokens, at++, false);
    case TokenKind::Variable: {
      ++at;
      const auto it = params.find(lower(t.text));
      if (it == params.end()) sql_error(137, "Must declare the scalar variable \"" + t.text + "\".");
      return it->second;
    }
    case TokenKind::Symbol:
      if ((t.is_symbol('-') || t.is_symbol('+')) && at + 1 < tokens.size() &&
          tokens[at + 1].kind == TokenKind::Number) {
        at += 2;
        return number_literal(tokens, at - 1, t.is_symbol('-'));
      }
      break;
    case TokenKind::Word:
      if (t.is("NULL")) {
        ++at;
        return {ColumnType{SqlKind::Int}, std::monostate{}};
      }
      break;
    case TokenKind::QuotedName: break;
  }
  syntax_error_at(tokens, at);
}

ProcCall parse_exec(const std::vector<SqlToken>& tokens, std::size_t from, const Params& params) {
  std::size_t at = from;
  if (at >= tokens.size() || !tokens[at].is_name()) syntax_error_at(tokens, at);
  ProcCall call;
  call.procedure = tokens[at++].text;
  while (at + 1 < tokens.size() && tokens[at].is_symbol('.') && tokens[at + 1].is_name()) {
    call.procedure += "." + tokens[at + 1].text;
    at += 2;
  }
  if (at >= tokens.size()) return call;
  while (true) {
    ProcArg arg;
    if (tokens[at].kind == TokenKind::Variable && at + 1 < tokens.size() && tokens[at + 1].is_symbol('=')) {
      arg.name = lower(tokens[at].text);
      at += 2;
    }
    // Every optional parameter of these procedures defaults to NULL (@threshold's 5000 is the
    // emulator's own), so DEFAULT passes NULL.
    if (at < tokens.size() && tokens[at].is("DEFAULT")) {
      ++at;
      arg.value = TypedValue{ColumnType{SqlKind::Int}, std::monostate{}};
    } else {
      arg.value = operand(tokens, at, params);
    }
    if (at < tokens.size() && (tokens[at].is("OUTPUT") || tokens[at].is("OUT"))) ++at;
    call.args.push_back(std::move(arg));
    if (at >= tokens.size()) return call;
    if (!tokens[at].is_symbol(',')) syntax_error_at(tokens, at);
    ++at;
  }
}

std::vector<ResultSet> run_procedure(Storage& storage, const ProcCall& call) {
  const Procedure* proc = find_procedure(call.procedure);
  if (proc == nullptr) {
    if (auto sets = run_meta_procedure(storage, call)) return std::move(*sets);  // sp_help... (decision 1440)
    sql_error(2812, "Could not find stored procedure '" + call.procedure + "'.");
  }
  const Args args = bind(*proc, call.args);
  try {
    return proc->run(storage, args);
  } catch (const Error& e) {
    rethrow_as_sql(e);
  }
}

std::map<std::string, TypedValue> bind_arguments(std::string_view procedure, const std::vector<ProcParam>& params,
                                                 const std::vector<ProcArg>& args) {
  std::map<std::string, TypedValue> bound;
  bool named = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].name.empty()) {
      if (named) {
        sql_error(119, "Must pass parameter number " + std::to_string(i + 1) +
                           " and subsequent parameters as '@name = value'. After the form '@name = value' has "
                           "been used, all subsequent parameters must be passed in the form '@name = value'.");
      }
      if (i >= params.size()) {
        sql_error(8144, "Procedure or function " + std::string(procedure) + " has too many arguments specified.");
      }
      bound[params[i].name] = args[i].value;
      continue;
    }
    named = true;
    const std::string name = lower(args[i].name);
    const auto it = std::find_if(params.begin(), params.end(), [&](const ProcParam& p) { return name == p.name; });
    if (it == params.end()) {
      sql_error(8145, args[i].name + " is not a parameter for procedure " + std::string(procedure) + ".");
    }
    bound[name] = args[i].value;
  }
  for (const ProcParam& p : params) {
    if (p.required && bound.find(p.name) == bound.end()) {
      sql_error(201, "Procedure or function '" + std::string(procedure) + "' expects parameter '" + p.name +
                         "', which was not supplied.");
    }
  }
  return bound;
}

}  // namespace mssqlcdc::tds
