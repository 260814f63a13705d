// update_mask.cpp: the update-mask functions of update_mask.hpp (decision 1437). An update mask
// holds one bit per captured column, column ordinal 1 in the lowest bit of the LAST byte, as
// SQL Server writes __$update_mask.
#include "update_mask.hpp"

#include "mssqlcdc/emu/catalog.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::tds {
namespace {

const ColumnType kBitType{SqlKind::Bit};
const ColumnType kIntType{SqlKind::Int};

TypedValue null_of(const ColumnType& t) { return TypedValue{t, std::monostate{}}; }

void arity(const std::string& fn, const std::vector<TypedValue>& args, std::size_t n) {
  if (args.size() != n) {
    throw Error(ErrorKind::Sql, "The " + fn + " function requires " + std::to_string(n) + " argument(s).", 174);
  }
}

std::optional<std::int64_t> whole(const TypedValue& v) {
  if (const auto* n = std::get_if<std::int64_t>(&v.value)) return *n;
  if (const auto* b = std::get_if<bool>(&v.value)) return *b ? 1 : 0;
  if (const auto* d = std::get_if<Decimal>(&v.value)) return static_cast<std::int64_t>(d->unscaled);
  return std::nullopt;
}

// Whether bit `position` (1-based) is set in `mask`; a position past the mask is not set.
bool bit_set(const Bytes& mask, std::int64_t position) {
  if (position < 1) return false;
  const auto byte = static_cast<std::size_t>((position - 1) / 8);
  if (byte >= mask.size()) return false;
  return ((mask[mask.size() - 1 - byte] >> ((position - 1) % 8)) & 1) != 0;
}

// The captured column's ordinal, or nothing for an unknown instance or column.
std::optional<int> ordinal(const ObjectModel& model, const TypedValue& instance, const TypedValue& column) {
  const auto* in_name = std::get_if<std::string>(&instance.value);
  const auto* col_name = std::get_if<std::string>(&column.value);
  if (in_name == nullptr || col_name == nullptr) return std::nullopt;
  const emu::Instance* in = model.instance(*in_name);
  if (in == nullptr) return std::nullopt;
  const emu::CapturedColumn* c = in->find(*col_name);
  if (c == nullptr) return std::nullopt;
  return c->ordinal;
}

}  // namespace

std::optional<TypedValue> update_mask_function(const std::string& fn, const std::vector<TypedValue>& args,
                                               const ObjectModel& model) {
  if (fn == "sys.fn_cdc_is_bit_set") {
    arity(fn, args, 2);
    const auto position = whole(args[0]);
    const auto* mask = std::get_if<Bytes>(&args[1].value);
    if (!position || mask == nullptr) return null_of(kBitType);
    return TypedValue{kBitType, bit_set(*mask, *position)};
  }
  if (fn == "sys.fn_cdc_get_column_ordinal") {
    arity(fn, args, 2);
    const auto n = ordinal(model, args[0], args[1]);
    return n ? TypedValue{kIntType, std::int64_t{*n}} : null_of(kIntType);
  }
  if (fn == "sys.fn_cdc_has_column_changed") {
    arity(fn, args, 3);
    const auto n = ordinal(model, args[0], args[1]);
    const auto* mask = std::get_if<Bytes>(&args[2].value);
    if (!n || mask == nullptr) return null_of(kBitType);
    return TypedValue{kBitType, bit_set(*mask, *n)};
  }
  return std::nullopt;
}

}  // namespace mssqlcdc::tds
