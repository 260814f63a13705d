// catalog.cpp: name resolution and the scalar functions that read the database. Each call reads
// the object list afresh (one read transaction), so a DDL change on another connection shows
// on the next statement, as on SQL Server.
#include "catalog.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "builtins.hpp"
#include "catalog_meta.hpp"
#include "catalog_stats.hpp"
#include "databases.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/emu/zone.hpp"
#include "mssqlcdc/error.hpp"
#include "objects.hpp"
#include "stored.hpp"
#include "tsql.hpp"
#include "update_mask.hpp"
#include "zones.hpp"

namespace mssqlcdc::tds {
namespace {

const ColumnType kLsnType{SqlKind::Binary, 10};
const ColumnType kIntType{SqlKind::Int};
const ColumnType kSysnameType{SqlKind::NVarChar, 128};
const ColumnType kDateTimeType{SqlKind::DateTime};

// schema and name of a one- or two-part name; an empty schema means dbo.
std::pair<std::string, std::string> schema_and_name(const ObjectName& name) {
  if (name.size() == 1) return {"dbo", name[0]};
  if (name.size() == 2) return {name[0].empty() ? "dbo" : name[0], name[1]};
  return {};
}

std::string trimmed(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

const std::string* text_arg(const TypedValue& v) { return std::get_if<std::string>(&v.value); }

std::optional<std::int64_t> int_arg(const TypedValue& v) {
  if (const auto* n = std::get_if<std::int64_t>(&v.value)) return *n;
  if (const auto* d = std::get_if<Decimal>(&v.value)) return static_cast<std::int64_t>(d->unscaled);
  return std::nullopt;
}

[[noreturn]] void invalid_argument(const std::string& fn, std::size_t i, const TypedValue& v) {
  throw Error(ErrorKind::Sql,
              "Argument data type " + type_name(v.type) + " is invalid for argument " + std::to_string(i + 1) + " of " +
                  fn + " function.",
              8116);
}

class EmulatorCatalog final : public Catalog {
 public:
  EmulatorCatalog(emu::Reader& reader, std::string database, std::string login, std::function<JobViews()> job_views)
      : reader_(reader), database_(database), names_{std::move(database), std::move(login), std::move(job_views)} {}

  std::unique_ptr<Relation> relation(const ObjectName& qualified) override {
    const ObjectName name = local_object_name(qualified, database_);
    if (lower(joined(name)) == "sys.databases") return sys_databases(database_);
    const auto [schema, object] = schema_and_name(name);
    if (object.empty()) return nullptr;
    const auto held_model = object_model(reader_);
    const ObjectModel& model = *held_model;
    if (lower(joined(name)) == "sys.stats") return sys_stats(model);
    if (auto meta = meta_relation(model, reader_, names_, name)) return meta;
    const SqlObject* o = model.find(schema, object);
    if (o == nullptr) return nullptr;
    switch (o->kind) {
      case SqlObject::Kind::UserTable: return user_table_relation(reader_, *o);
      case SqlObject::Kind::ChangeTable: return change_table_relation(reader_, *o);
      default: break;
    }
    if (lower(o->name) == "lsn_time_mapping") return mapping_relation(reader_);
    return system_view(model, *o, reader_);
  }

  std::unique_ptr<Relation> function(const ObjectName& qualified, const std::vector<TypedValue>& args) override {
    const ObjectName name = local_object_name(qualified, database_);
    if (name.size() == 2 && lower(name[0]) == "sys") {
      return stats_function(*object_model(reader_), reader_, lower(joined(name)), args);
    }
    if (name.size() != 2 || lower(name[0]) != "cdc") return nullptr;
    const std::string fn = lower(name[1]);
    static const std::string kAll = "fn_cdc_get_all_changes_";
    static const std::string kNet = "fn_cdc_get_net_changes_";
    const bool all = fn.starts_with(kAll);
    if (!all && !fn.starts_with(kNet)) return nullptr;
    const auto held_model = object_model(reader_);
    const ObjectModel& model = *held_model;
    const emu::Instance* in = model.instance(name[1].substr(kAll.size()));
    // Net changes exist only for an instance with a unique index, as supports_net_changes says.
    if (in == nullptr || (!all && in->index_columns.empty())) return nullptr;
    return change_function(reader_, *in, all ? ChangeFunction::All : ChangeFunction::Net, args);
  }

  std::optional<TypedValue> scalar(const ObjectName& name, const std::vector<TypedValue>& args) override {
    const std::string fn = lower(joined(local_object_name(name, database_)));
    const auto arity = [&](std::size_t lo, std::size_t hi) {
      if (args.size() < lo || args.size() > hi) {
        throw Error(ErrorKind::Sql,
                    "The " + fn + " function requires " + std::to_string(lo) +
                        (lo == hi ? "" : " to " + std::to_string(hi)) + " argument(s).",
                    174);
      }
    };
    const auto null_of = [](const ColumnType& t) { return TypedValue{t, std::monostate{}}; };
    if (fn == "sys.fn_cdc_get_max_lsn") {
      arity(0, 0);
      return TypedValue{kLsnType, lsn_value(reader_.max_lsn())};
    }
    if (fn == "sys.fn_cdc_get_min_lsn") {
      arity(1, 1);
      if (is_null(args[0].value)) return TypedValue{kLsnType, Bytes(10, 0)};
      const auto* text = text_arg(args[0]);
      if (text == nullptr) invalid_argument("fn_cdc_get_min_lsn", 0, args[0]);
      const auto m = reader_.min_lsn(*text);
      if (m.state == emu::MinLsn::State::NotEstablished) return null_of(kLsnType);
      return TypedValue{kLsnType, lsn_value(m.lsn)};
    }
    if (fn == "sys.fn_cdc_map_lsn_to_time") {
      arity(1, 1);
      const auto lsn = lsn_of(args[0].value);
      if (!lsn) return null_of(kDateTimeType);
      const auto t = reader_.lsn_to_time(*lsn);
      return t ? TypedValue{kDateTimeType, micros_to_datetime2(*t)} : null_of(kDateTimeType);
    }
    if (fn == "sys.fn_cdc_map_time_to_lsn") return map_time_to_lsn(args, arity);
    if (fn == "sys.fn_cdc_is_bit_set" || fn == "sys.fn_cdc_get_column_ordinal" || fn == "sys.fn_cdc_has_column_changed")
      return update_mask_function(fn, args, *object_model(reader_));
    if (fn == "sys.fn_cdc_increment_lsn" || fn == "sys.fn_cdc_decrement_lsn") {
      arity(1, 1);
      const auto lsn = lsn_of(args[0].value);
      if (!lsn) return null_of(kLsnType);
      try {
        return TypedValue{kLsnType, lsn_value(fn == "sys.fn_cdc_increment_lsn" ? lsn->increment() : lsn->decrement())};
      } catch (const Error&) {
        return null_of(kLsnType);  // past either end of the LSN range there is no next value
      }
    }
    if (auto v = meta_scalar(reader_, names_, fn, args)) return v;  // SERVERPROPERTY... (decision 1439)
    if (fn == "db_name") {
      arity(0, 1);
      if (args.empty()) return TypedValue{kSysnameType, database_};
      const auto id = int_arg(args[0]);
      const auto db = id ? database_name(*id, database_) : std::nullopt;
      return db ? TypedValue{kSysnameType, *db} : null_of(kSysnameType);
    }
    if (fn == "db_id") {
      arity(0, 1);
      if (args.empty()) return TypedValue{kIntType, *database_id(database_, database_)};
      const auto* text = text_arg(args[0]);
      const auto id = text != nullptr ? database_id(trimmed(*text), database_) : std::nullopt;
      return id ? TypedValue{kIntType, *id} : null_of(kIntType);
    }
    if (fn == "object_id") {
      arity(1, 2);
      const auto* text = text_arg(args[0]);
      if (text == nullptr) return null_of(kIntType);
      const auto held_model = object_model(reader_);
      const ObjectModel& model = *held_model;
      const SqlObject* o = model.find_text(*text);
      const auto* type = args.size() == 2 ? text_arg(args[1]) : nullptr;
      if (o == nullptr || (type != nullptr && trimmed(lower(*type)) != trimmed(lower(o->type()))))
        return null_of(kIntType);
      return TypedValue{kIntType, o->object_id};
    }
    if (fn == "object_name" || fn == "object_schema_name") {
      arity(1, 2);
      const auto id = int_arg(args[0]);
      // The optional database_id: objects live only in the served database.
      if (args.size() == 2 && !is_null(args[1].value) && int_arg(args[1]) != database_id(database_, database_)) {
        return null_of(kSysnameType);
      }
      const auto held_model = object_model(reader_);
      const ObjectModel& model = *held_model;
      const SqlObject* o = id ? model.by_id(*id) : nullptr;
      if (o == nullptr) return null_of(kSysnameType);
      return TypedValue{kSysnameType, fn == "object_name" ? o->name : o->schema};
    }
    if (fn == "type_name") {
      arity(1, 1);
      const auto id = int_arg(args[0]);
      const auto type = id ? system_type_name(*id) : std::nullopt;
      return type ? TypedValue{kSysnameType, *type} : null_of(kSysnameType);
    }
    if (fn == "has_perms_by_name") return has_perms(args, arity);
    if (fn == "col_length") {
      arity(2, 2);
      const ColumnType kSmallInt{SqlKind::SmallInt};
      const auto* table = text_arg(args[0]);
      const auto* column = text_arg(args[1]);
      if (table == nullptr || column == nullptr) return null_of(kSmallInt);
      const auto held_model = object_model(reader_);
      const ObjectModel& model = *held_model;
      const SqlObject* o = model.find_text(*table);
      if (o == nullptr) return null_of(kSmallInt);
      for (const auto& c : o->columns) {
        if (emu::iequals(c.name, *column)) return TypedValue{kSmallInt, std::int64_t{type_facts(c.type).max_length}};
      }
      return null_of(kSmallInt);
    }
    if (fn == "current_timezone_id") {
      arity(0, 0);
      // A zone outside the table has no Windows name: NULL sends the backends to the UTC offset.
      const auto zone = windows_zone(reader_.server_time_zone());
      const ColumnType type{SqlKind::NVarChar, 256};
      return zone ? TypedValue{type, *zone} : null_of(type);
    }
    return clock(fn, arity);
  }

 private:
  template <typename Arity>
  std::optional<TypedValue> map_time_to_lsn(const std::vector<TypedValue>& args, Arity arity) {
    arity(2, 2);
    const auto* op = text_arg(args[0]);
    // The parameter is datetime: a text argument converts as CAST does (a date literal is the
    // common case), so it is never silently NULL; other types pass as they are.
    const TypedValue when = text_arg(args[1]) != nullptr ? convert(kDateTimeType, args[1], 0) : args[1];
    const auto* at = std::get_if<DateTime2>(&when.value);
    if (op == nullptr || at == nullptr) return TypedValue{kLsnType, std::monostate{}};
    const std::string rel = trimmed(lower(*op));
    using R = emu::Relation;
    std::optional<R> r;
    if (rel == "largest less than") r = R::LargestLessThan;
    if (rel == "largest less than or equal") r = R::LargestLessOrEqual;
    if (rel == "smallest greater than") r = R::SmallestGreaterThan;
    if (rel == "smallest greater than or equal") r = R::SmallestGreaterOrEqual;
    if (!r) return TypedValue{kLsnType, std::monostate{}};
    return TypedValue{kLsnType, lsn_value(reader_.time_to_lsn(*r, datetime2_to_micros(*at)))};
  }

  template <typename Arity>
  std::optional<TypedValue> has_perms(const std::vector<TypedValue>& args, Arity arity) {
    arity(3, 5);
    const ColumnType kInt{SqlKind::Int};
    const auto* cls = text_arg(args[1]);
    if (cls == nullptr) return TypedValue{kInt, std::monostate{}};
    const std::string c = lower(*cls);
    if (c == "database" || c == "server")
      return TypedValue{kInt, std::int64_t{1}};  // every user may connect and read the catalog
    if (c != "object" && c != "schema") return TypedValue{kInt, std::monostate{}};
    const auto* securable = text_arg(args[0]);
    if (securable == nullptr) return TypedValue{kInt, std::monostate{}};
    const auto held_model = object_model(reader_);
    const ObjectModel& model = *held_model;
    const SqlObject* object = c == "object" ? model.find_text(*securable) : nullptr;
    // A change table: SELECT only for db_owner or a member of the instance's gating role.
    if (object != nullptr && object->instance != nullptr && !reader_.may_read(object->instance->name)) {
      return TypedValue{kInt, std::int64_t{0}};
    }
    // A user or change table: SELECT only with a grant (decision 1366); check_select raises 229.
    if (object != nullptr && (object->table != nullptr || object->instance != nullptr)) {
      try {
        reader_.check_select(object->schema, object->name);
      } catch (const Error& e) {
        if (e.number() != 229) throw;
        return TypedValue{kInt, std::int64_t{0}};
      }
    }
    const bool exists = c == "object" ? object != nullptr : model.schema_id(*securable) != 0;
    // A securable that does not resolve makes the check fail, which SQL Server answers with NULL.
    return TypedValue{kInt, exists ? Value{std::int64_t{1}} : Value{}};
  }

  template <typename Arity>
  std::optional<TypedValue> clock(const std::string& fn, Arity arity) {
    const bool known = fn == "sysdatetimeoffset" || fn == "sysdatetime" || fn == "sysutcdatetime" || fn == "getdate" ||
                       fn == "getutcdate";
    if (!known) return std::nullopt;
    arity(0, 0);
    const std::int64_t utc = reader_.now();
    const auto zone = emu::TimeZone::load(reader_.server_time_zone());
    const std::int64_t local = zone.to_local(utc);
    if (fn == "sysdatetimeoffset") {
      const auto offset = static_cast<std::int16_t>(zone.offset_at(utc / 1'000'000) / 60);
      return TypedValue{ColumnType{SqlKind::DateTimeOffset, 0, 0, 7}, DateTimeOffset{micros_to_datetime2(utc), offset}};
    }
    if (fn == "sysdatetime") return TypedValue{ColumnType{SqlKind::DateTime2, 0, 0, 7}, micros_to_datetime2(local)};
    if (fn == "sysutcdatetime") return TypedValue{ColumnType{SqlKind::DateTime2, 0, 0, 7}, micros_to_datetime2(utc)};
    return TypedValue{kDateTimeType, micros_to_datetime2(emu::round_to_tick(fn == "getdate" ? local : utc))};
  }

  emu::Reader& reader_;
  std::string database_;
  SessionNames names_;
};

}  // namespace

std::unique_ptr<Catalog> emulator_catalog(emu::Reader& reader, std::string database, std::string login,
                                          std::function<JobViews()> job_views) {
  return std::make_unique<EmulatorCatalog>(reader, std::move(database), std::move(login), std::move(job_views));
}

}  // namespace mssqlcdc::tds
