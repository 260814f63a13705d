// table_hints.cpp: the table hints after a table in FROM, `WITH (NOLOCK)`, `WITH (TABLOCKX)`,
// `WITH (UPDLOCK, HOLDLOCK)`... (https://learn.microsoft.com/en-us/sql/t-sql/queries/hints-transact-sql-table).
// NOLOCK and READUNCOMMITTED make the table's read a dirty read, as READ UNCOMMITTED does: it
// waits for no row lock and sees open transactions' uncommitted rows (decision 1447). The
// emulator has no lock manager the other hints could change, so they are read and have no
// effect (an honest no-op, decision 1443). An unknown word is SQL Server's error 321.
#include <array>
#include <string_view>

#include "builtins.hpp"
#include "select_parser.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds::parser {
namespace {

// The table hints of the page above that take no argument.
constexpr std::array<std::string_view, 19> kHints{
    "NOLOCK",   "READUNCOMMITTED", "UPDLOCK",      "HOLDLOCK",      "SERIALIZABLE",      "TABLOCK",        "TABLOCKX",
    "READPAST", "ROWLOCK",         "PAGLOCK",      "READCOMMITTED", "READCOMMITTEDLOCK", "REPEATABLEREAD", "XLOCK",
    "NOWAIT",   "NOEXPAND",        "KEEPIDENTITY", "KEEPDEFAULTS",  "IGNORE_CONSTRAINTS"};

bool known_hint(const SqlToken& t) {
  for (const auto hint : kHints) {
    if (t.is(hint)) return true;
  }
  return false;
}

}  // namespace

void Parser::table_hints(Source& s) {
  if (!(peek() != nullptr && peek()->is("WITH") && next_is_symbol('(', 1))) return;
  i_ += 2;
  do {
    const SqlToken& hint = next();
    if (!hint.is_name() || !known_hint(hint)) {
      sql_error(321, "\"" + hint.text +
                         "\" is not a recognized table hints option. If it is intended as a parameter to a "
                         "table-valued function or to the CHANGETABLE function, ensure that your database "
                         "compatibility mode is set to 90.");
    }
    if (hint.is("NOLOCK") || hint.is("READUNCOMMITTED")) s.read_uncommitted = true;
  } while (symbol(','));
  expect_symbol(')');
}

}  // namespace mssqlcdc::tds::parser
