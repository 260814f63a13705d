// objects.hpp: the emulator's tables and capture instances as SQL Server objects, with the ids,
// schemas and columns that sys.objects, sys.columns, OBJECT_ID and COL_LENGTH show, and the
// relations the emulator catalog (catalog.hpp) serves over them. A model is built from one read
// of the file, so it never shows a half-made DDL change, and is shared by every statement until
// the catalog changes (object_model).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mssqlcdc/emu/reader.hpp"
#include "relations.hpp"

namespace mssqlcdc::tds {

struct ObjectColumn {
  std::string name;
  emu::SqlType type;
  bool nullable = true;
};

struct SqlObject {
  // Function: an instance's cdc.fn_cdc_get_all_changes_<ci> or _net_changes_<ci>; PrimaryKey: a
  // user table's PK_<table> constraint (its `table` set, `parent_object_id` the table's id).
  enum class Kind : std::uint8_t { UserTable, ChangeTable, CdcTable, SystemView, Function, PrimaryKey };
  std::int64_t object_id = 0;
  std::string schema;
  std::string name;
  Kind kind = Kind::UserTable;
  const emu::Table* table = nullptr;        // UserTable
  const emu::Instance* instance = nullptr;  // ChangeTable
  std::vector<ObjectColumn> columns;        // user and change tables
  std::int64_t parent_object_id = 0;        // PrimaryKey

  [[nodiscard]] bool ms_shipped() const { return kind != Kind::UserTable && kind != Kind::PrimaryKey; }
  // sys.objects' type, char(2): U, V, IF (the CDC functions are inline table-valued), PK.
  [[nodiscard]] std::string type() const {
    switch (kind) {
      case Kind::SystemView: return "V ";
      case Kind::Function: return "IF";
      case Kind::PrimaryKey: return "PK";
      default: return "U ";
    }
  }
  // sys.objects' type_desc for type().
  [[nodiscard]] std::string type_desc() const {
    switch (kind) {
      case Kind::SystemView: return "VIEW";
      case Kind::Function: return "SQL_INLINE_TABLE_VALUED_FUNCTION";
      case Kind::PrimaryKey: return "PRIMARY_KEY_CONSTRAINT";
      default: return "USER_TABLE";
    }
  }
};

class ObjectModel {
 public:
  explicit ObjectModel(emu::Objects objects);
  explicit ObjectModel(std::shared_ptr<const emu::Objects> objects);
  ObjectModel(const ObjectModel&) = delete;
  ObjectModel& operator=(const ObjectModel&) = delete;

  // Case-insensitive; an empty schema means dbo.
  [[nodiscard]] const SqlObject* find(std::string_view schema, std::string_view name) const;
  // "dbo.orders", "[cdc].[dbo_orders_CT]", "shop.dbo.orders": the text OBJECT_ID takes.
  [[nodiscard]] const SqlObject* find_text(std::string_view text) const;
  [[nodiscard]] const SqlObject* by_id(std::int64_t object_id) const;
  [[nodiscard]] const std::vector<SqlObject>& objects() const { return objects_; }
  [[nodiscard]] const emu::Instance* instance(std::string_view capture_instance) const;
  // dbo 1, guest 2, INFORMATION_SCHEMA 3, sys 4, cdc 5, then the tables' other schemas by name.
  [[nodiscard]] std::int64_t schema_id(std::string_view schema) const;
  [[nodiscard]] std::vector<std::pair<std::string, std::int64_t>> schemas() const;

 private:
  friend std::shared_ptr<const ObjectModel> object_model(emu::Reader& reader);
  std::shared_ptr<const emu::Objects> source_;
  std::vector<SqlObject> objects_;
  // Indexes into objects_, the first object of each id and each folded schema.name, so a
  // lookup per row of a catalog view does not scan every object.
  std::unordered_map<std::int64_t, std::size_t> by_id_;
  std::unordered_map<std::string, std::size_t> by_name_;
};

// The model of `reader`'s catalog as it stands: built once per catalog state in this process
// and shared, so a statement's cost does not grow with the tables the file holds. Hold the
// pointer while using the model.
[[nodiscard]] std::shared_ptr<const ObjectModel> object_model(emu::Reader& reader);

// A table's clustered index as sys.indexes, sp_helpindex and sp_statistics show it (decision
// 1439): a user table's primary key PK_<table>, a change table's <ci>_CT_clustered_idx on
// __$start_lsn, __$command_id, __$seqval, __$operation; nullopt for a heap or another object.
struct ClusteredIndex {
  std::string name;
  std::vector<std::string> keys;  // in key order
  bool primary_key = false;
};
[[nodiscard]] std::optional<ClusteredIndex> clustered_index(const SqlObject& object);

// The column types the catalog views share: int, bigint, smallint, tinyint, bit, sysname
// (nvarchar(128)), a *_desc column (nvarchar(60)) and datetime.
inline const ColumnType kIntT{SqlKind::Int};
inline const ColumnType kBigIntT{SqlKind::BigInt};
inline const ColumnType kSmallIntT{SqlKind::SmallInt};
inline const ColumnType kTinyIntT{SqlKind::TinyInt};
inline const ColumnType kBitT{SqlKind::Bit};
inline const ColumnType kSysnameT{SqlKind::NVarChar, 128};
inline const ColumnType kDesc60T{SqlKind::NVarChar, 60};
inline const ColumnType kDateTimeT{SqlKind::DateTime};

// A relation whose rows are all known, for the small catalog views.
[[nodiscard]] std::unique_ptr<Relation> rows_relation(std::vector<RelColumn> columns,
                                                      std::vector<std::vector<Value>> rows,
                                                      std::vector<std::string> ordered_by = {});

// The catalog views and CDC system tables (sys.columns, cdc.change_tables...) that are not
// change tables or user tables; nullptr for the others. Row counts and times come from `reader`.
[[nodiscard]] std::unique_ptr<Relation> system_view(const ObjectModel& model, const SqlObject& object,
                                                    emu::Reader& reader);

// The streamed relations (catalog_rows.cpp): one stored row in memory at a time, a range hint on
// the ordering column (start_lsn, __$start_lsn, an integer key's first column) read as an
// index range.
[[nodiscard]] std::unique_ptr<Relation> mapping_relation(emu::Reader& reader);
[[nodiscard]] std::unique_ptr<Relation> change_table_relation(emu::Reader& reader, const SqlObject& change_table);
[[nodiscard]] std::unique_ptr<Relation> user_table_relation(emu::Reader& reader, const SqlObject& table);

// cdc.fn_cdc_get_all_changes_<ci> and cdc.fn_cdc_get_net_changes_<ci> called with `args`.
// Throws Error(Sql) 313 for a range or row filter SQL Server refuses, 8144 for too many args.
enum class ChangeFunction : std::uint8_t { All, Net };
[[nodiscard]] std::unique_ptr<Relation> change_function(emu::Reader& reader, const emu::Instance& instance,
                                                        ChangeFunction which, const std::vector<TypedValue>& args);

}  // namespace mssqlcdc::tds
