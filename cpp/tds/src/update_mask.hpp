// update_mask.hpp: CDC's update-mask functions (decision 1437): sys.fn_cdc_is_bit_set,
// sys.fn_cdc_get_column_ordinal and sys.fn_cdc_has_column_changed, as Microsoft documents them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mssqlcdc/tds/types.hpp"
#include "objects.hpp"

namespace mssqlcdc::tds {

// The value of update-mask function `fn` (lower-case, schema-qualified: "sys.fn_cdc_is_bit_set")
// called with `args`, reading capture instances from `model`; nothing when `fn` is none of them.
// Throws 174 for a wrong argument count. A NULL argument, an unknown instance or a column the
// instance does not capture gives NULL.
[[nodiscard]] std::optional<TypedValue> update_mask_function(const std::string& fn, const std::vector<TypedValue>& args,
                                                             const ObjectModel& model);

}  // namespace mssqlcdc::tds
