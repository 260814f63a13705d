// catalog_stats.cpp: sys.stats, sys.dm_db_stats_histogram and sys.dm_db_stats_properties over
// the statistics the emulator keeps (decision 1448).
#include "catalog_stats.hpp"

#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "objects.hpp"
#include "stored.hpp"

namespace mssqlcdc::tds {
namespace {

using Rows = std::vector<std::vector<Value>>;

const ColumnType kRealT{SqlKind::Real};

// The user table of `object_id` with a primary key whose statistics `stats_id` names, or nullptr.
const SqlObject* keyed_table(const ObjectModel& model, const std::vector<TypedValue>& args) {
  const auto* id = std::get_if<std::int64_t>(&args[0].value);
  const auto* stats = std::get_if<std::int64_t>(&args[1].value);
  if (id == nullptr || stats == nullptr || *stats != 1) return nullptr;
  const SqlObject* o = model.by_id(*id);
  if (o == nullptr || o->kind != SqlObject::Kind::UserTable || o->table == nullptr || o->table->heap) return nullptr;
  return o;
}

}  // namespace

std::unique_ptr<Relation> sys_stats(const ObjectModel& model) {
  Rows rows;
  for (const auto& o : model.objects()) {
    if (o.kind != SqlObject::Kind::UserTable || o.table == nullptr || o.table->heap) continue;
    rows.push_back({o.object_id, std::string("PK_" + o.name), std::int64_t{1}, false, false, false, false,
                    std::monostate{}, false, false, false, std::int64_t{0}, std::string("Normal"), false});
  }
  return rows_relation({{"object_id", kIntT, false},
                        {"name", kSysnameT, true},
                        {"stats_id", kIntT, false},
                        {"auto_created", kBitT, true},
                        {"user_created", kBitT, true},
                        {"no_recompute", kBitT, true},
                        {"has_filter", kBitT, true},
                        {"filter_definition", ColumnType{SqlKind::NVarChar, kMax}, true},
                        {"is_temporary", kBitT, true},
                        {"is_incremental", kBitT, true},
                        {"has_persisted_sample", kBitT, true},
                        {"stats_generation_method", kIntT, false},
                        {"stats_generation_method_desc", ColumnType{SqlKind::VarChar, 255}, false},
                        {"auto_drop", kBitT, true}},
                       std::move(rows));
}

std::unique_ptr<Relation> stats_function(const ObjectModel& model, emu::Reader& reader, const std::string& fn,
                                         const std::vector<TypedValue>& args) {
  const bool histogram = fn == "sys.dm_db_stats_histogram";
  if (!histogram && fn != "sys.dm_db_stats_properties") return nullptr;
  if (args.size() != 2) {
    throw Error(ErrorKind::Sql, "The " + fn.substr(4) + " function requires 2 argument(s).", 174);
  }
  const SqlObject* o = keyed_table(model, args);
  const auto stats = o == nullptr ? std::nullopt : reader.statistics(o->table->full_name());
  Rows rows;
  if (histogram) {
    const auto& type = o == nullptr ? emu::SqlType{} : o->table->key()[0]->type;
    if (stats) {
      std::int64_t number = 0;
      for (const auto& s : stats->histogram) {
        rows.push_back({o->object_id, std::int64_t{1}, ++number, cell_value(s.range_hi_key, type), s.range_rows,
                        s.eq_rows, s.distinct_range_rows, s.avg_range_rows});
      }
    }
    return rows_relation({{"object_id", kIntT, false},
                          {"stats_id", kIntT, false},
                          {"step_number", kIntT, false},
                          {"range_high_key", o == nullptr ? kIntT : column_type(type), true},
                          {"range_rows", kRealT, false},
                          {"equal_rows", kRealT, false},
                          {"distinct_range_rows", kBigIntT, false},
                          {"average_range_rows", kRealT, false}},
                         std::move(rows), {"step_number"});
  }
  if (stats) {
    rows.push_back({o->object_id, std::int64_t{1}, micros_to_datetime2(stats->last_updated), stats->rows,
                    stats->rows_sampled, static_cast<std::int64_t>(stats->histogram.size()), stats->rows,
                    stats->modification_counter, std::monostate{}});
  }
  return rows_relation({{"object_id", kIntT, false},
                        {"stats_id", kIntT, false},
                        {"last_updated", ColumnType{SqlKind::DateTime2, 0, 0, 7}, true},
                        {"rows", kBigIntT, true},
                        {"rows_sampled", kBigIntT, true},
                        {"steps", kIntT, true},
                        {"unfiltered_rows", kBigIntT, true},
                        {"modification_counter", kBigIntT, true},
                        {"persisted_sample_percent", ColumnType{SqlKind::Float}, true}},
                       std::move(rows));
}

}  // namespace mssqlcdc::tds
