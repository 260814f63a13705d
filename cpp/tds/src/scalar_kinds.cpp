// The type families' order and names; see scalar_kinds.hpp.
#include "scalar_kinds.hpp"

namespace mssqlcdc::tds::scalar {

int precedence(SqlKind k) {
  switch (k) {
    case SqlKind::DateTimeOffset: return 20;
    case SqlKind::DateTime2: return 19;
    case SqlKind::DateTime: return 18;
    case SqlKind::Date: return 17;
    case SqlKind::Time: return 16;
    case SqlKind::Float: return 15;
    case SqlKind::Real: return 14;
    case SqlKind::Decimal: return 13;
    case SqlKind::BigInt: return 12;
    case SqlKind::Int: return 11;
    case SqlKind::SmallInt: return 10;
    case SqlKind::TinyInt: return 9;
    case SqlKind::Bit: return 8;
    case SqlKind::UniqueIdentifier: return 7;
    case SqlKind::NVarChar: return 6;
    case SqlKind::NChar: return 5;
    case SqlKind::VarChar: return 4;
    case SqlKind::Char: return 3;
    case SqlKind::VarBinary: return 2;
    case SqlKind::Binary: return 1;
  }
  return 0;
}

std::string kind_name(const ColumnType& t) {
  const std::string n = type_name(t);
  return n.substr(0, n.find('('));
}
std::string numeric_name(const ColumnType& t) { return t.kind == SqlKind::Decimal ? "numeric" : kind_name(t); }

}  // namespace mssqlcdc::tds::scalar
