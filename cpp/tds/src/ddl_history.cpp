// ddl_history.cpp: see ddl_history.hpp (decision 1436).
#include "ddl_history.hpp"

#include "mssqlcdc/emu/reader.hpp"
#include "stored.hpp"

namespace mssqlcdc::tds {

std::unique_ptr<Relation> cdc_ddl_history(const ObjectModel& model, emu::Reader& reader) {
  const ColumnType kInt{SqlKind::Int};
  std::vector<RelColumn> cols{{"source_object_id", kInt, true},
                              {"object_id", kInt, false},
                              {"required_column_update", ColumnType{SqlKind::Bit}, true},
                              {"ddl_command", ColumnType{SqlKind::NVarChar, kMax, 0, 0, false}, true},
                              {"ddl_lsn", ColumnType{SqlKind::Binary, 10}, false},
                              {"ddl_time", ColumnType{SqlKind::DateTime}, true}};
  std::vector<std::vector<Value>> rows;
  for (const auto& o : model.objects()) {
    if (o.kind != SqlObject::Kind::ChangeTable) continue;
    for (const emu::DdlEntry& e : reader.ddl_history(o.instance->name, Lsn::zero(), Lsn::max())) {
      rows.push_back({o.instance->source_object_id, o.object_id, e.required_column_update, e.ddl_command,
                      lsn_value(e.ddl_lsn), micros_to_datetime2(e.ddl_time)});
    }
  }
  return rows_relation(std::move(cols), std::move(rows));
}

}  // namespace mssqlcdc::tds
