// catalog_objects.cpp: the object model: ids, schemas, columns and name resolution.
#include <algorithm>
#include <array>
#include <cctype>
#include <deque>
#include <mutex>
#include <set>

#include "objects.hpp"

namespace mssqlcdc::tds {
namespace {

using Kind = SqlObject::Kind;

emu::SqlType sql_type(const char* text) { return emu::SqlType::parse(text); }

// The CDC system tables by fixed id: user objects start at 1000 in the emulator file.
struct CdcTable {
  const char* name;
  std::int64_t id;
};
constexpr std::array<CdcTable, 5> kCdcTables{{{"captured_columns", 101},
                                              {"change_tables", 102},
                                              {"ddl_history", 103},
                                              {"index_columns", 104},
                                              {"lsn_time_mapping", 105}}};
constexpr std::array<CdcTable, 7> kSysViews{{{"columns", -410},
                                             {"dm_exec_session_wait_stats", -412},
                                             {"objects", -385},
                                             {"partitions", -393},
                                             {"schemas", -397},
                                             {"tables", -386},
                                             {"time_zone_info", -414}}};

// The first id of the objects whose ids are derived (CDC functions), half of it the first of the
// primary keys'.
constexpr std::int64_t kDerivedIds = 1'600'000'000;

// Splits "a.[b.c].d" into its parts, unquoting [] and "" names; a part "" stays empty.
std::vector<std::string> name_parts(std::string_view text) {
  std::vector<std::string> parts(1);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '[' || c == '"') {
      const char close = c == '[' ? ']' : '"';
      for (++i; i < text.size(); ++i) {
        if (text[i] == close) {
          if (i + 1 < text.size() && text[i + 1] == close) {
            parts.back() += close;  // a doubled closing quote is one character
            ++i;
            continue;
          }
          break;
        }
        parts.back() += text[i];
      }
    } else if (c == '.') {
      parts.emplace_back();
    } else if (c != ' ' || !parts.back().empty()) {
      parts.back() += c;
    }
  }
  for (auto& p : parts) {
    while (!p.empty() && p.back() == ' ') p.pop_back();
  }
  return parts;
}

std::vector<ObjectColumn> change_table_columns(const emu::Instance& in) {
  std::vector<ObjectColumn> out{{"__$start_lsn", sql_type("binary(10)"), false},
                                {"__$end_lsn", sql_type("binary(10)"), true},
                                {"__$seqval", sql_type("binary(10)"), false},
                                {"__$operation", sql_type("int"), false},
                                {"__$update_mask", sql_type("varbinary(128)"), true}};
  for (const auto& c : in.columns) out.push_back({c.name, c.type, true});
  if (in.has_command_id) out.push_back({"__$command_id", sql_type("int"), true});
  return out;
}

// schema and name folded as emu::iequals compares, the key of ObjectModel's name index.
std::string folded_name(std::string_view schema, std::string_view name) {
  std::string out;
  out.reserve(schema.size() + name.size() + 1);
  for (const char c : schema) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  out += '\0';  // no identifier holds it, unlike '.'
  for (const char c : name) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

ObjectModel::ObjectModel(emu::Objects objects)
    : ObjectModel(std::make_shared<const emu::Objects>(std::move(objects))) {}

ObjectModel::ObjectModel(std::shared_ptr<const emu::Objects> objects) : source_(std::move(objects)) {
  for (const auto& t : source_->tables) {
    SqlObject o{t.object_id, t.schema, t.name, Kind::UserTable, &t, nullptr, {}};
    for (const auto& c : t.columns) o.columns.push_back({c.name, c.type, c.nullable});
    objects_.push_back(std::move(o));
  }
  for (const auto& in : source_->instances) {
    objects_.push_back(
        {in.object_id, "cdc", in.name + "_CT", Kind::ChangeTable, nullptr, &in, change_table_columns(in)});
  }
  for (const auto& c : kCdcTables) objects_.push_back({c.id, "cdc", c.name, Kind::CdcTable, nullptr, nullptr, {}});
  // The objects the file keeps no id for take ids derived from their owner's, above the ids
  // the file gives out (decision 1441).
  for (const auto& in : source_->instances) {
    const std::int64_t id = kDerivedIds + 2 * in.object_id;
    objects_.push_back({id, "cdc", "fn_cdc_get_all_changes_" + in.name, Kind::Function, nullptr, &in, {}});
    if (!in.index_columns.empty()) {
      objects_.push_back({id + 1, "cdc", "fn_cdc_get_net_changes_" + in.name, Kind::Function, nullptr, &in, {}});
    }
  }
  for (const auto& t : source_->tables) {
    if (t.key().empty()) continue;
    SqlObject pk{kDerivedIds / 2 + t.object_id, t.schema, "PK_" + t.name, Kind::PrimaryKey, &t, nullptr, {}};
    pk.parent_object_id = t.object_id;
    objects_.push_back(std::move(pk));
  }
  for (const auto& v : kSysViews) objects_.push_back({v.id, "sys", v.name, Kind::SystemView, nullptr, nullptr, {}});
  for (std::size_t i = 0; i < objects_.size(); ++i) {
    by_id_.emplace(objects_[i].object_id, i);
    by_name_.emplace(folded_name(objects_[i].schema, objects_[i].name), i);
  }
}

const SqlObject* ObjectModel::find(std::string_view schema, std::string_view name) const {
  const auto it = by_name_.find(folded_name(schema.empty() ? std::string_view("dbo") : schema, name));
  return it == by_name_.end() ? nullptr : &objects_[it->second];
}

const SqlObject* ObjectModel::find_text(std::string_view text) const {
  const auto parts = name_parts(text);
  if (parts.empty() || parts.size() > 4 || parts.back().empty()) return nullptr;
  return find(parts.size() >= 2 ? parts[parts.size() - 2] : std::string(), parts.back());
}

const SqlObject* ObjectModel::by_id(std::int64_t object_id) const {
  const auto it = by_id_.find(object_id);
  return it == by_id_.end() ? nullptr : &objects_[it->second];
}

const emu::Instance* ObjectModel::instance(std::string_view capture_instance) const {
  for (const auto& in : source_->instances) {
    if (emu::iequals(in.name, capture_instance)) return &in;
  }
  return nullptr;
}

std::vector<std::pair<std::string, std::int64_t>> ObjectModel::schemas() const {
  std::vector<std::pair<std::string, std::int64_t>> out{
      {"dbo", 1}, {"guest", 2}, {"INFORMATION_SCHEMA", 3}, {"sys", 4}, {"cdc", 5}};
  std::set<std::string> others;
  for (const auto& t : source_->tables) {
    if (std::none_of(out.begin(), out.end(), [&](const auto& s) { return emu::iequals(s.first, t.schema); }))
      others.insert(t.schema);
  }
  std::int64_t next = 6;
  for (const auto& s : others) out.emplace_back(s, next++);
  return out;
}

std::int64_t ObjectModel::schema_id(std::string_view schema) const {
  for (const auto& [name, id] : schemas()) {
    if (emu::iequals(name, schema)) return id;
  }
  return 0;
}

std::shared_ptr<const ObjectModel> object_model(emu::Reader& reader) {
  // The models of the catalog states loaded last, by the address of their objects, which each
  // model keeps alive while it is kept here. A few, for a process serving several files.
  static std::mutex mutex;
  static std::deque<std::shared_ptr<const ObjectModel>> recent;
  constexpr std::size_t kKept = 16;
  auto objects = reader.catalog();
  {
    const std::lock_guard lock(mutex);
    for (const auto& model : recent) {
      if (model->source_.get() == objects.get()) return model;
    }
  }
  // Built outside the lock, which other connections' statements wait on; two connections
  // that miss at once each build one, and both are the same model.
  auto built = std::make_shared<const ObjectModel>(std::move(objects));
  const std::lock_guard lock(mutex);
  recent.push_front(built);
  if (recent.size() > kKept) recent.pop_back();
  return built;
}

std::unique_ptr<Relation> rows_relation(std::vector<RelColumn> columns, std::vector<std::vector<Value>> rows,
                                        std::vector<std::string> ordered_by) {
  class Rows final : public Relation {
   public:
    Rows(std::vector<RelColumn> c, std::vector<std::vector<Value>> r, std::vector<std::string> o)
        : columns_(std::move(c)), rows_(std::move(r)), order_(std::move(o)) {}
    [[nodiscard]] const std::vector<RelColumn>& columns() const override { return columns_; }
    [[nodiscard]] std::vector<std::string> ordered_by() const override { return order_; }
    std::unique_ptr<RowStream> scan(const ScanHints& /*hints*/) override {
      class Stream final : public RowStream {
       public:
        explicit Stream(const std::vector<std::vector<Value>>& rows) : rows_(rows) {}
        bool next(std::vector<Value>& row) override {
          if (at_ >= rows_.size()) return false;
          row = rows_[at_++];
          return true;
        }

       private:
        const std::vector<std::vector<Value>>& rows_;
        std::size_t at_ = 0;
      };
      return std::make_unique<Stream>(rows_);
    }

   private:
    std::vector<RelColumn> columns_;
    std::vector<std::vector<Value>> rows_;
    std::vector<std::string> order_;
  };
  return std::make_unique<Rows>(std::move(columns), std::move(rows), std::move(ordered_by));
}

}  // namespace mssqlcdc::tds
