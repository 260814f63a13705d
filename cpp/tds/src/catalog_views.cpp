// catalog_views.cpp: the catalog views (sys.columns, sys.partitions, cdc.change_tables...) over
// the object model, each built whole when a statement names it: they are small.
#include <algorithm>

#include "ddl_history.hpp"
#include "mssqlcdc/emu/zone.hpp"
#include "mssqlcdc/error.hpp"
#include "objects.hpp"
#include "stored.hpp"
#include "tsql.hpp"
#include "zones.hpp"

namespace mssqlcdc::tds {
namespace {

using Kind = SqlObject::Kind;
using Rows = std::vector<std::vector<Value>>;

const ColumnType kLsnT{SqlKind::Binary, 10};

Value text_or_null(const std::optional<std::string>& s) {
  if (!s) return std::monostate{};
  return *s;
}

std::string base_name(const emu::SqlType& t) {
  const std::string text = t.canonical();
  return text.substr(0, text.find('('));
}

std::unique_ptr<Relation> sys_columns(const ObjectModel& model) {
  std::vector<RelColumn> cols{{"object_id", kIntT, false},
                              {"name", kSysnameT, true},
                              {"column_id", kIntT, false},
                              {"system_type_id", kTinyIntT, false},
                              {"user_type_id", kIntT, false},
                              {"max_length", kSmallIntT, false},
                              {"precision", kTinyIntT, false},
                              {"scale", kTinyIntT, false},
                              {"collation_name", kSysnameT, true},
                              {"is_nullable", kBitT, true},
                              {"is_ansi_padded", kBitT, false},
                              {"is_rowguidcol", kBitT, false},
                              {"is_identity", kBitT, false},
                              {"is_computed", kBitT, false},
                              {"is_filestream", kBitT, false},
                              {"is_replicated", kBitT, true},
                              {"is_non_sql_subscribed", kBitT, true},
                              {"is_merge_published", kBitT, true},
                              {"is_dts_replicated", kBitT, true},
                              {"is_xml_document", kBitT, false},
                              {"xml_collection_id", kIntT, false},
                              {"default_object_id", kIntT, false},
                              {"rule_object_id", kIntT, false},
                              {"is_sparse", kBitT, true},
                              {"is_column_set", kBitT, true},
                              {"generated_always_type", kTinyIntT, true},
                              {"generated_always_type_desc", kDesc60T, true},
                              {"is_hidden", kBitT, true},
                              {"is_masked", kBitT, true}};
  Rows rows;
  for (const auto& o : model.objects()) {
    for (std::size_t i = 0; i < o.columns.size(); ++i) {
      const ObjectColumn& c = o.columns[i];
      const TypeFacts f = type_facts(c.type);
      const std::int64_t id = o.table != nullptr ? o.table->columns[i].column_id : static_cast<std::int64_t>(i + 1);
      const bool padded = f.collated || f.system_type_id == 173 || f.system_type_id == 165;
      rows.push_back({o.object_id,
                      c.name,
                      id,
                      std::int64_t{f.system_type_id},
                      std::int64_t{f.system_type_id},
                      std::int64_t{f.max_length},
                      std::int64_t{f.precision},
                      std::int64_t{f.scale},
                      c.type.collation != nullptr ? Value{c.type.collation->name()} : Value{},
                      c.nullable,
                      padded,
                      false,
                      o.table != nullptr && o.table->columns[i].is_identity,
                      o.table != nullptr && o.table->columns[i].computed != nullptr,
                      false,
                      false,
                      false,
                      false,
                      false,
                      false,
                      std::int64_t{0},
                      std::int64_t{0},
                      std::int64_t{0},
                      false,
                      false,
                      std::int64_t{0},
                      std::string("NOT_APPLICABLE"),
                      false,
                      false});
    }
  }
  return rows_relation(std::move(cols), std::move(rows));
}

std::unique_ptr<Relation> sys_partitions(const ObjectModel& model, emu::Reader& reader) {
  std::vector<RelColumn> cols{{"partition_id", kBigIntT, false},
                              {"object_id", kIntT, false},
                              {"index_id", kIntT, false},
                              {"partition_number", kIntT, false},
                              {"hobt_id", kBigIntT, false},
                              {"rows", kBigIntT, true},
                              {"filestream_filegroup_id", kSmallIntT, false},
                              {"data_compression", kTinyIntT, false},
                              {"data_compression_desc", kDesc60T, true}};
  Rows rows;
  for (const auto& o : model.objects()) {
    std::int64_t count = 0;
    std::int64_t index_id = 1;  // a clustered primary key; change tables have one too
    if (o.kind == Kind::UserTable) {
      count = reader.table_info(o.table->full_name()).row_count;
      if (o.table->key().empty()) index_id = 0;
    } else if (o.kind == Kind::ChangeTable) {
      count = reader.change_row_count(o.instance->name);
    } else {
      continue;
    }
    const std::int64_t partition = (o.object_id << 16) | index_id;
    rows.push_back({partition, o.object_id, index_id, std::int64_t{1}, partition, count, std::int64_t{0},
                    std::int64_t{0}, std::string("NONE")});
  }
  return rows_relation(std::move(cols), std::move(rows));
}

std::unique_ptr<Relation> sys_time_zone_info(emu::Reader& reader) {
  std::vector<RelColumn> cols{{"name", kSysnameT, false},
                              {"current_utc_offset", ColumnType{SqlKind::NVarChar, 12}, false},
                              {"is_currently_dst", kBitT, false}};
  const std::int64_t now = reader.now() / 1'000'000;
  Rows rows;
  for (const auto& z : known_zones()) {
    std::int64_t offset = 0;
    std::int64_t standard = 0;
    try {
      const auto tz = emu::TimeZone::load(z.iana);
      offset = tz.offset_at(now);
      // Standard time is the smaller of midwinter's and midsummer's offsets.
      standard = std::min(tz.offset_at(now - now % 31'557'600), tz.offset_at(now - now % 31'557'600 + 15'778'800));
    } catch (const Error&) {
      continue;  // a zone this system's tz database lacks is not listed
    }
    const std::int64_t m = (offset < 0 ? -offset : offset) / 60;
    // "+hh:mm", built by hand: GCC 12 at -O3 warns falsely (-Wrestrict) on chained operator+.
    std::string text(6, '0');
    text[0] = offset < 0 ? '-' : '+';
    text[1] = static_cast<char>('0' + m / 600);
    text[2] = static_cast<char>('0' + m / 60 % 10);
    text[3] = ':';
    text[4] = static_cast<char>('0' + m % 60 / 10);
    text[5] = static_cast<char>('0' + m % 10);
    rows.push_back({std::string(z.windows), text, offset != standard});
  }
  return rows_relation(std::move(cols), std::move(rows));
}

std::vector<RelColumn> object_columns() {
  return {
      {"name", kSysnameT, false},      {"object_id", kIntT, false},        {"principal_id", kIntT, true},
      {"schema_id", kIntT, false},     {"parent_object_id", kIntT, false}, {"type", ColumnType{SqlKind::Char, 2}, true},
      {"type_desc", kDesc60T, true},   {"create_date", kDateTimeT, false}, {"modify_date", kDateTimeT, false},
      {"is_ms_shipped", kBitT, false}, {"is_published", kBitT, false},     {"is_schema_published", kBitT, false}};
}

// sys.objects or sys.tables: the tables, and in sys.objects the CDC functions and the primary
// keys (system views are in sys.all_objects only).
std::unique_ptr<Relation> sys_objects(const ObjectModel& model, emu::Reader& reader, bool tables) {
  auto cols = object_columns();
  if (tables) {
    cols.push_back({"max_column_id_used", kIntT, false});
    cols.push_back({"is_tracked_by_cdc", kBitT, true});
  }
  // The file keeps no creation time of a table: its first instance's, else the clock's now.
  const std::int64_t now = emu::TimeZone::load(reader.server_time_zone()).to_local(reader.now());
  Rows rows;
  for (const auto& o : model.objects()) {
    if (o.kind == Kind::SystemView) continue;
    const bool table = o.kind == Kind::UserTable || o.kind == Kind::ChangeTable || o.kind == Kind::CdcTable;
    if (tables && !table) continue;
    std::int64_t created = now;
    bool tracked = false;
    for (const auto& p : model.objects()) {
      if (p.kind != Kind::ChangeTable) continue;
      const bool mine = o.instance == p.instance || (o.table != nullptr && p.instance->source_object_id == o.object_id);
      if (mine) {
        created = std::min(created, p.instance->create_date);
        tracked = tracked || o.table != nullptr;
      }
    }
    const Value date = micros_to_datetime2(created);
    std::vector<Value> row{o.name,
                           o.object_id,
                           std::monostate{},
                           model.schema_id(o.schema),
                           o.parent_object_id,
                           o.type(),
                           o.type_desc(),
                           date,
                           date,
                           o.ms_shipped(),
                           false,
                           false};
    if (tables) {
      row.emplace_back(static_cast<std::int64_t>(o.columns.size()));
      row.emplace_back(tracked);
    }
    rows.push_back(std::move(row));
  }
  return rows_relation(std::move(cols), std::move(rows));
}

std::unique_ptr<Relation> cdc_change_tables(const ObjectModel& model) {
  std::vector<RelColumn> cols{{"object_id", kIntT, false},
                              {"version", kIntT, true},
                              {"source_object_id", kIntT, true},
                              {"capture_instance", kSysnameT, false},
                              {"start_lsn", kLsnT, true},
                              {"end_lsn", kLsnT, true},
                              {"supports_net_changes", kBitT, false},
                              {"has_drop_pending", kBitT, true},
                              {"role_name", kSysnameT, true},
                              {"index_name", kSysnameT, true},
                              {"filegroup_name", kSysnameT, true},
                              {"create_date", kDateTimeT, true},
                              {"partition_switch", kBitT, false}};
  Rows rows;
  for (const auto& o : model.objects()) {
    if (o.kind != Kind::ChangeTable) continue;
    const emu::Instance& in = *o.instance;
    const SqlObject* source = model.by_id(in.source_object_id);
    std::optional<std::string> index;
    if (!in.index_columns.empty() && source != nullptr) index = "PK_" + source->name;
    rows.push_back({in.object_id, std::int64_t{0}, in.source_object_id, in.name,
                    in.established ? lsn_value(in.start_lsn) : Value{std::monostate{}}, std::monostate{},
                    !in.index_columns.empty(), false, std::monostate{}, text_or_null(index), std::monostate{},
                    micros_to_datetime2(in.create_date), false});
  }
  return rows_relation(std::move(cols), std::move(rows));
}

std::unique_ptr<Relation> cdc_captured_columns(const ObjectModel& model) {
  std::vector<RelColumn> cols{{"object_id", kIntT, false},
                              {"column_name", kSysnameT, false},
                              {"column_id", kIntT, true},
                              {"column_type", kSysnameT, true},
                              {"column_ordinal", kIntT, false},
                              {"is_computed", kBitT, true},
                              {"masking_function", ColumnType{SqlKind::NVarChar, 4000}, true}};
  Rows rows;
  for (const auto& o : model.objects()) {
    if (o.kind != Kind::ChangeTable) continue;
    for (const auto& c : o.instance->columns) {
      rows.push_back({o.object_id, c.name, c.column_id, base_name(c.type), std::int64_t{c.ordinal}, c.is_computed,
                      std::monostate{}});
    }
  }
  return rows_relation(std::move(cols), std::move(rows));
}

std::unique_ptr<Relation> cdc_index_columns(const ObjectModel& model) {
  std::vector<RelColumn> cols{{"object_id", kIntT, false},
                              {"column_name", kSysnameT, false},
                              {"index_ordinal", kTinyIntT, false},
                              {"column_id", kIntT, false}};
  Rows rows;
  for (const auto& o : model.objects()) {
    if (o.kind != Kind::ChangeTable) continue;
    const SqlObject* source = model.by_id(o.instance->source_object_id);
    for (std::size_t k = 0; k < o.instance->index_columns.size(); ++k) {
      const auto& name = o.instance->index_columns[k];
      const emu::Column* c = source != nullptr && source->table != nullptr ? source->table->find(name) : nullptr;
      rows.push_back({o.object_id, name, static_cast<std::int64_t>(k + 1),
                      c != nullptr ? Value{c->column_id} : Value{std::int64_t{0}}});
    }
  }
  return rows_relation(std::move(cols), std::move(rows));
}

}  // namespace

std::unique_ptr<Relation> system_view(const ObjectModel& model, const SqlObject& object, emu::Reader& reader) {
  const std::string name = lower(object.schema + "." + object.name);
  if (name == "sys.columns") return sys_columns(model);
  if (name == "sys.partitions") return sys_partitions(model, reader);
  if (name == "sys.time_zone_info") return sys_time_zone_info(reader);
  if (name == "sys.objects") return sys_objects(model, reader, false);
  if (name == "sys.tables") return sys_objects(model, reader, true);
  if (name == "cdc.change_tables") return cdc_change_tables(model);
  if (name == "cdc.captured_columns") return cdc_captured_columns(model);
  if (name == "cdc.index_columns") return cdc_index_columns(model);
  if (name == "cdc.ddl_history") return cdc_ddl_history(model, reader);
  if (name == "sys.schemas") {
    Rows rows;
    for (const auto& [schema, id] : model.schemas())
      rows.push_back({schema, id, id == 4 || id == 3 ? Value{std::int64_t{4}} : Value{std::int64_t{1}}});
    return rows_relation({{"name", kSysnameT, false}, {"schema_id", kIntT, false}, {"principal_id", kIntT, true}},
                         std::move(rows));
  }
  if (name == "sys.dm_exec_session_wait_stats") {
    // The emulator never waits on a client it can measure, so no session has wait statistics.
    return rows_relation({{"session_id", kSmallIntT, false},
                          {"wait_type", kDesc60T, false},
                          {"waiting_tasks_count", kBigIntT, false},
                          {"wait_time_ms", kBigIntT, false},
                          {"max_wait_time_ms", kBigIntT, false},
                          {"signal_wait_time_ms", kBigIntT, false}},
                         {});
  }
  return nullptr;
}

}  // namespace mssqlcdc::tds
