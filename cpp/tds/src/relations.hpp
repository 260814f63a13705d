// relations.hpp: what a SELECT reads from, and the seam between the query engine (select.hpp)
// and the emulator's storage (catalog.hpp). A Relation is a named row source the front end
// serves: cdc.lsn_time_mapping, a change table cdc.<ci>_CT, a captured user table, sys.columns,
// a table-valued function such as cdc.fn_cdc_get_all_changes_<ci>(...). The engine applies
// every predicate itself; the hints only let a relation read less, so they never change rows.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mssqlcdc/tds/types.hpp"

namespace mssqlcdc::tds {

struct TypedValue {
  ColumnType type;
  Value value;
};

struct RelColumn {
  std::string name;  // as SQL Server names it, e.g. __$start_lsn
  ColumnType type;
  bool nullable = true;
};

// One bound of a range the WHERE clause puts on a column of the relation.
struct Bound {
  Value value;
  bool inclusive = true;
};

struct RangeHint {
  std::string column;  // lower-case
  std::optional<Bound> lo;
  std::optional<Bound> hi;
};

struct ScanHints {
  std::vector<RangeHint> ranges;  // conjuncts of the WHERE on this relation's own columns
  // Columns the query reads (lower-case); nullopt reads all. A relation may still fill others.
  std::optional<std::vector<std::string>> columns;
  // The statement is a data read of this relation: its first source, at the top level, with a
  // WHERE, and no grouping, window, TOP or OFFSET. Such a read of a change table or a captured
  // table fires the emulator's fault hooks as read_changes and read_table do (decision 0760).
  bool data_read = false;
  // The table's read is a dirty read (WITH (NOLOCK) or WITH (READUNCOMMITTED), decision 1447):
  // a user table shows open transactions' uncommitted rows and waits for none of their locks.
  bool read_uncommitted = false;
};

class RowStream {
 public:
  virtual ~RowStream() = default;
  // Fills `row` with one value per column of the relation and returns true, or returns false
  // at the end. Rows are produced one at a time: a stream holds at most one batch in memory.
  virtual bool next(std::vector<Value>& row) = 0;
  // Whether the statement shows one all-NULL row first (the emulator's inject_null_row hook):
  // the engine adds it after its own filters, which would drop it.
  [[nodiscard]] virtual bool null_row_first() const { return false; }
};

class Relation {
 public:
  virtual ~Relation() = default;
  [[nodiscard]] virtual const std::vector<RelColumn>& columns() const = 0;
  // Lower-case column names the rows come out sorted by, ascending; an ORDER BY that is a
  // prefix of this needs no sort, so a change-table read streams without holding its rows.
  [[nodiscard]] virtual std::vector<std::string> ordered_by() const { return {}; }
  [[nodiscard]] virtual std::unique_ptr<RowStream> scan(const ScanHints& hints) = 0;
};

// Name parts as written, unquoted, without the database part: {"cdc", "dbo_orders_CT"},
// {"sys", "columns"}, {"orders"}. Lookups are case-insensitive, as in the default collation.
using ObjectName = std::vector<std::string>;

class Catalog {
 public:
  virtual ~Catalog() = default;
  // A table or view; nullptr when there is none (the engine raises 208).
  virtual std::unique_ptr<Relation> relation(const ObjectName& name) = 0;
  // A table-valued function called with `args`; nullptr when there is none (208). May throw
  // Error(Sql, text, number) for SQL Server's own argument errors (313, 8114...).
  virtual std::unique_ptr<Relation> function(const ObjectName& name, const std::vector<TypedValue>& args) = 0;
  // A scalar function that reads the database (sys.fn_cdc_get_max_lsn, OBJECT_ID,
  // HAS_PERMS_BY_NAME...); nullopt when the catalog has none (the engine then tries its own
  // built-ins, and raises 195 or 4121).
  virtual std::optional<TypedValue> scalar(const ObjectName& name, const std::vector<TypedValue>& args) = 0;
};

}  // namespace mssqlcdc::tds
