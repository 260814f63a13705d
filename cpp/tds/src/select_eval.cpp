// One SELECT core from end to end, and the query around it. The pipeline is scan -> join ->
// WHERE -> [group or window] -> HAVING -> project -> [sort] -> OFFSET/FETCH/TOP; each step is a
// Producer wrapping the one before, so a query with nothing to hold streams row by row.
// Column-free expressions (parameters, CONVERT of them, the CDC functions) are runtime constants,
// evaluated once per statement as SQL Server does, so a million-row range read parses its LSN
// bounds once.
#include <utility>

#include "builtins.hpp"
#include "select.hpp"
#include "select_engine.hpp"
#include "watch.hpp"

namespace mssqlcdc::tds {
namespace engine {
namespace {

// The select list: stars expand to their sources' columns.
Projection project(const SelectCore& c, const Scope& scope, Binder& binder, bool grouped) {
  Projection p;
  for (const auto& it : c.items) {
    if (it.star_of) {
      bool found = false;
      for (const auto& r : scope.sources) {
        if (!it.star_of->empty() && r.alias != *it.star_of) continue;
        found = true;
        for (std::size_t i = r.first; i < r.first + r.count; ++i) {
          if (grouped)
            sql_error(8120, "Column '" + r.alias + "." + scope.slots[i].name +
                                "' is invalid in the select list because it is not contained in either an aggregate "
                                "function or the GROUP BY clause.");
          const ColumnType t = scope.slots[i].type;
          p.fns.push_back([i, t](const Row& row) { return TypedValue{t, row[i]}; });
          p.columns.push_back(Column{scope.slots[i].name, t, true});
        }
      }
      if (!found && !it.star_of->empty()) {
        sql_error(4104, "The multi-part identifier \"" + *it.star_of + "\" could not be bound.");
      }
      if (scope.sources.empty()) sql_error(263, "Must specify table to select from.");
      continue;
    }
    p.fns.push_back(binder.compile(*it.expr));
    std::string name = it.alias.value_or("");
    if (!it.alias && it.expr->kind == ExprKind::Column) name = it.expr->name.back();
    p.columns.push_back(Column{name, binder.probe(p.fns.back()).value_or(kInt), true});
  }
  return p;
}

// One SELECT core with the query's ORDER BY and OFFSET/FETCH when it is the only core.
RowSource run_core(const SelectCore& c, const Query* ordering, const std::shared_ptr<const Query>& owner,
                   const Env& env) {
  auto scope = std::make_shared<Scope>();
  const Scope empty;
  Binder constants(env, empty);
  std::vector<const Expr*> aggregates, windows;
  for (const auto& it : c.items) {
    if (it.expr) collect(*it.expr, aggregates, windows);
  }
  if (c.having) collect(*c.having, aggregates, windows);
  if (ordering != nullptr) {
    for (const auto& o : ordering->order_by) collect(*o.expr, aggregates, windows);
  }
  const bool grouped = !c.group_by.empty() || !aggregates.empty();
  // The backends' change and snapshot reads have this shape; their planning queries (NTILE
  // tiles, MIN/MAX extents, OFFSET ... FETCH) and a person's whole-table look do not.
  const bool data_read = env.outermost && c.where && !grouped && windows.empty() && !c.top &&
                         (ordering == nullptr || (!ordering->offset && !ordering->fetch));

  std::vector<Opened> opened = open_sources(c, owner, env, *scope);
  Producer rows = joined_rows(c, opened, *scope, env, constants, data_read);

  auto binder = std::make_shared<Binder>(env, *scope);
  if (c.where) {
    rows = filtered(rows, binder->compile(*c.where));
  }
  Binder source_binder(env, *scope);
  std::shared_ptr<std::vector<Row>> held;  // rows a group or a window needed, produced from here

  if (grouped) {
    held = std::make_shared<std::vector<Row>>(grouped_rows(c, aggregates, rows, source_binder, *binder));
  } else if (!windows.empty()) {
    held = std::make_shared<std::vector<Row>>();
    for (Row r; rows(r);) {
      hold(row_bytes(r));
      held->push_back(r);
    }
    compute_windows(*held, windows, source_binder);
    binder->windows(windows);
  }
  if (held) {
    rows = [held, at = std::size_t{0}](Row& r) mutable {
      if (at >= held->size()) return false;
      r = std::move((*held)[at++]);
      return true;
    };
  }
  if (c.having) {
    rows = filtered(rows, binder->compile(*c.having));
  }

  const Projection projection = project(c, *scope, *binder, grouped);
  RowSource result;
  result.columns = projection.columns;
  Producer out_rows =
      ordered_rows(c, ordering, rows, projection, *scope, opened, grouped || !windows.empty(), *binder, constants);
  if (!opened.empty() && opened.front().stream && opened.front().stream->null_row_first()) {
    // inject_null_row: one row of NULLs before the others, past the WHERE that would drop it.
    out_rows = [out_rows, width = projection.fns.size(), first = true](Row& r) mutable {
      if (!first) return out_rows(r);
      first = false;
      r.assign(width, Value{});
      return true;
    };
  }
  result.next = [out_rows, owner](std::vector<Value>& row) mutable { return out_rows(row); };
  return result;
}

}  // namespace

RowSource run_query(const Query& q, const std::shared_ptr<const Query>& owner, const Env& env) {
  if (q.cores.size() == 1) return run_core(q.cores[0], &q, owner, env);
  std::vector<RowSource> parts;
  for (const auto& c : q.cores) {
    parts.push_back(run_core(c, nullptr, owner, env));
    if (parts.back().columns.size() != parts.front().columns.size()) {
      sql_error(205,
                "All queries combined using a UNION, INTERSECT or EXCEPT operator must have an equal number of "
                "expressions in their target lists.");
    }
  }
  RowSource result;
  result.columns = parts.front().columns;
  auto shared = std::make_shared<std::vector<RowSource>>(std::move(parts));
  Producer all = [shared, at = std::size_t{0}](Row& r) mutable {
    while (at < shared->size()) {
      if ((*shared)[at].next(r)) return true;
      ++at;
    }
    return false;
  };
  if (!q.order_by.empty()) all = sorted_union(all, result.columns, q.order_by);
  result.next = all;
  return result;
}

}  // namespace engine

std::optional<TypedValue> global_variable(const std::string& name) {
  const auto text = [](std::uint16_t n, std::string v) {
    return TypedValue{ColumnType{SqlKind::NVarChar, n, 0, 0, false}, std::move(v)};
  };
  if (name == "@@version") {
    return text(300, "Microsoft SQL Server 2022 (RTM) - 16.0.1000.6 (X64)\n\tmssql-cdc emulator (TDS front end)\n");
  }
  if (name == "@@spid") return TypedValue{ColumnType{SqlKind::SmallInt}, std::int64_t{51}};
  if (name == "@@trancount") return TypedValue{engine::kInt, std::int64_t{0}};
  if (name == "@@servername") return text(128, "mssql-cdc-emulator");
  if (name == "@@language") return text(128, "us_english");
  if (name == "@@max_precision") return TypedValue{ColumnType{SqlKind::TinyInt}, std::int64_t{38}};
  return std::nullopt;
}

RowSource run_select(std::shared_ptr<const Query> query, Catalog& catalog, Params params) {
  const engine::Env env{catalog, std::make_shared<const Params>(std::move(params))};
  RowSource rows = engine::run_query(*query, query, env);
  // The first row is read now, so an error in it (a conversion, a divide by zero) fails the
  // statement before any row is sent; a row's value with no static type names the column's.
  auto first = std::make_shared<std::optional<std::vector<Value>>>();
  std::vector<Value> row;
  if (rows.next(row)) *first = std::move(row);
  auto inner = std::move(rows.next);
  rows.next = [first, inner](std::vector<Value>& out) {
    if (*first) {
      out = std::move(**first);
      first->reset();
      return true;
    }
    return inner(out);
  };
  return rows;
}

}  // namespace mssqlcdc::tds
