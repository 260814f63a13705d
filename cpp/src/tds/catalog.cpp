#include "mssqlcdc/tds/catalog.hpp"

#include <utility>

#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/tsql.hpp"

namespace mssqlcdc::tds {
namespace {

const ColumnType kLsnType = ColumnType{SqlKind::Binary, 10, 0, 0, false};

Value lsn_value(const std::optional<Lsn>& lsn) {
  if (!lsn) return std::monostate{};
  return Bytes(lsn->bytes().begin(), lsn->bytes().end());
}

std::string joined(const ObjectName& name) {
  std::string out;
  for (const auto& part : name) {
    if (!out.empty()) out.push_back('.');
    out.append(lower(part));
  }
  return out;
}

class EmulatorCatalog final : public Catalog {
 public:
  EmulatorCatalog(emu::Reader& reader, std::string database) : reader_(reader), database_(std::move(database)) {}

  std::unique_ptr<Relation> relation(const ObjectName& /*name*/) override { return nullptr; }

  std::unique_ptr<Relation> function(const ObjectName& /*name*/, const std::vector<TypedValue>& /*args*/) override {
    return nullptr;
  }

  std::optional<TypedValue> scalar(const ObjectName& name, const std::vector<TypedValue>& args) override {
    const std::string fn = joined(name);
    const auto arity = [&](std::size_t n) {
      if (args.size() != n) {
        throw Error(ErrorKind::Sql, "The " + fn + " function requires " + std::to_string(n) + " argument(s).", 174);
      }
    };
    if (fn == "sys.fn_cdc_get_max_lsn") {
      arity(0);
      return TypedValue{kLsnType, lsn_value(reader_.max_lsn())};
    }
    if (fn == "sys.fn_cdc_get_min_lsn") {
      arity(1);
      if (is_null(args[0].value)) return TypedValue{kLsnType, Bytes(10, 0)};
      const auto* text = std::get_if<std::string>(&args[0].value);
      if (text == nullptr) {
        throw Error(ErrorKind::Sql,
                    "Argument data type " + type_name(args[0].type) +
                        " is invalid for argument 1 of fn_cdc_get_min_lsn function.",
                    8116);
      }
      const auto m = reader_.min_lsn(*text);
      if (m.state == emu::MinLsn::State::NotEstablished) return TypedValue{kLsnType, std::monostate{}};
      return TypedValue{kLsnType, lsn_value(m.lsn)};
    }
    if (fn == "db_name") {
      if (args.size() > 1) arity(0);
      return TypedValue{ColumnType{SqlKind::NVarChar, 128, 0, 0, false}, database_};
    }
    return std::nullopt;
  }

 private:
  emu::Reader& reader_;
  std::string database_;
};

}  // namespace

std::unique_ptr<Catalog> emulator_catalog(emu::Reader& reader, std::string database) {
  return std::make_unique<EmulatorCatalog>(reader, std::move(database));
}

}  // namespace mssqlcdc::tds
