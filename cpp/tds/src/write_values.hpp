// write_values.hpp: expressions in INSERT ... VALUES and UPDATE ... SET (decision 1436). The
// writes (dml.cpp) take plain operands; an expression such as CAST('...' AS datetime2(7)) or
// GETDATE() is computed first by the query engine and passed as a bound parameter.
#pragma once

#include <functional>
#include <vector>

#include "statements.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {

// Computes `SELECT expr` (the tokens given) and returns its one value.
using Evaluate = std::function<TypedValue(const std::vector<SqlToken>& select)>;

// `tokens` with each VALUES item and SET value that is no plain operand (literal, @variable,
// NULL, signed number, DEFAULT) replaced by a fresh @variable bound in `params` to its value;
// a SET value that names the row's columns (207 on its own) stays, parenthesized, for the
// UPDATE to compute per row.
[[nodiscard]] std::vector<SqlToken> bind_write_expressions(const std::vector<SqlToken>& tokens, Params& params,
                                                           const Evaluate& evaluate);

}  // namespace mssqlcdc::tds
