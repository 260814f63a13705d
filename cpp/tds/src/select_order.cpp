// ORDER BY, OFFSET/FETCH and TOP. A key names an output column (by alias or position) or is an
// expression over the sources. A core streams when its ORDER BY is a prefix of its first
// relation's ordered_by(), ascending, with no group or window: a change-table read then never
// holds its rows. Otherwise the projected rows are held and stably sorted, NULLs first.
#include <algorithm>
#include <utility>

#include "builtins.hpp"
#include "select_engine.hpp"
#include "tsql.hpp"
#include "watch.hpp"

namespace mssqlcdc::tds::engine {

int compare_keys(const std::vector<TypedValue>& a, const std::vector<TypedValue>& b, const std::vector<bool>& desc) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool na = is_null(a[i].value), nb = is_null(b[i].value);
    int c = na && nb ? 0 : na ? -1 : nb ? 1 : compare(a[i], b[i]);
    if (desc[i]) c = -c;
    if (c != 0) return c;
  }
  return 0;
}

std::int64_t count_of(const Expr& e, Binder& constants, const char* what) {
  const TypedValue v = convert(kBigInt, constants.compile(e)({}), 0);
  const std::int64_t n = is_null(v.value) ? -1 : std::get<std::int64_t>(v.value);
  if (n < 0) sql_error(10742, std::string("The ") + what + " clause has an invalid value.");
  return n;
}

Producer ordered_rows(const SelectCore& c, const Query* ordering, Producer rows, const Projection& projection,
                      const Scope& scope, const std::vector<Opened>& opened, bool holds_rows, Binder& binder,
                      Binder& constants) {
  const std::vector<Column>& columns = projection.columns;
  // ORDER BY: an output column by alias or position, else an expression over the sources.
  std::vector<Fn> sort_fns;
  std::vector<bool> desc;
  std::vector<std::optional<std::size_t>> sort_outputs;
  bool streams = !holds_rows;
  if (ordering != nullptr) {
    const auto& first_order = opened.empty() ? std::vector<std::string>{} : opened[0].ordered_by;
    for (std::size_t k = 0; k < ordering->order_by.size(); ++k) {
      const auto& o = ordering->order_by[k];
      desc.push_back(o.descending);
      std::optional<std::size_t> out;
      if (o.expr->kind == ExprKind::Column && o.expr->name.size() == 1) {
        for (std::size_t i = 0; i < c.items.size() && i < columns.size(); ++i) {
          if (c.items[i].alias && lower(*c.items[i].alias) == lower(o.expr->name[0])) out = i;
        }
      } else if (o.expr->kind == ExprKind::Literal) {
        const auto* n = std::get_if<std::int64_t>(&o.expr->value.value);
        if (n == nullptr || *n < 1 || static_cast<std::size_t>(*n) > columns.size()) {
          sql_error(108, "The ORDER BY position number " + o.expr->text.substr(1) +
                             " is out of range of the number of items in the select list.");
        }
        out = static_cast<std::size_t>(*n - 1);
      }
      sort_outputs.push_back(out);
      sort_fns.push_back(out ? Fn() : binder.compile(*o.expr));
      // Streams only when this key is the relation's k-th ordering column, ascending.
      std::optional<std::size_t> source_slot;
      const Expr* ref = out ? c.items[*out].expr.get() : o.expr.get();
      if (ref != nullptr && ref->kind == ExprKind::Column && opened.size() >= 1 && opened[0].relation) {
        const std::size_t s = scope.resolve(ref->name);
        if (s < scope.sources[0].count) source_slot = s;
      }
      if (o.descending || !source_slot || k >= first_order.size() ||
          lower(scope.slots[*source_slot].name) != first_order[k]) {
        streams = false;
      }
    }
  }
  const bool sorted = ordering != nullptr && !ordering->order_by.empty() && !streams;
  std::int64_t skip = 0, limit = -1;
  if (c.top) limit = count_of(*c.top, constants, "TOP");
  if (ordering != nullptr && ordering->offset) skip = count_of(*ordering->offset, constants, "OFFSET");
  if (ordering != nullptr && ordering->fetch) {
    const std::int64_t f = count_of(*ordering->fetch, constants, "FETCH");
    limit = limit < 0 ? f : std::min(limit, f);
  }

  Producer out_rows;
  const auto project_row = [project = projection.fns](const Row& r, std::vector<Value>& out) {
    out.clear();
    for (const auto& f : project) out.push_back(f(r).value);
  };
  if (sorted) {
    struct Sorted {
      std::vector<Value> out;
      std::vector<TypedValue> keys;
    };
    auto buffer = std::make_shared<std::vector<Sorted>>();
    bool filled = false;
    std::size_t at = 0;
    out_rows = [=](Row& out) mutable {
      if (!filled) {
        filled = true;
        for (Row r; rows(r);) {
          Sorted s;
          project_row(r, s.out);
          for (std::size_t k = 0; k < sort_fns.size(); ++k) {
            s.keys.push_back(sort_outputs[k] ? TypedValue{columns[*sort_outputs[k]].type, s.out[*sort_outputs[k]]}
                                             : sort_fns[k](r));
          }
          hold(row_bytes(s.out) + s.keys.size() * sizeof(TypedValue));
          buffer->push_back(std::move(s));
        }
        std::stable_sort(buffer->begin(), buffer->end(), [&](const Sorted& a, const Sorted& b) {
          checkpoint();
          return compare_keys(a.keys, b.keys, desc) < 0;
        });
      }
      if (at >= buffer->size()) return false;
      out = std::move((*buffer)[at++].out);
      return true;
    };
  } else {
    out_rows = [rows, project_row](Row& out) mutable {
      Row r;
      if (!rows(r)) return false;
      project_row(r, out);
      return true;
    };
  }
  if (skip > 0 || limit >= 0) {
    out_rows = [inner = out_rows, skip, limit, seen = std::int64_t{0}, sent = std::int64_t{0}](Row& out) mutable {
      while (seen < skip) {
        if (!inner(out)) return false;
        ++seen;
      }
      if (limit >= 0 && sent >= limit) return false;
      if (!inner(out)) return false;
      ++sent;
      return true;
    };
  }
  return out_rows;
}

Producer sorted_union(Producer all, const std::vector<Column>& columns, const std::vector<OrderItem>& order_by) {
  // ORDER BY over a UNION names output columns (by alias or position).
  std::vector<std::size_t> keys;
  std::vector<bool> desc;
  for (const auto& o : order_by) {
    std::optional<std::size_t> at;
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (o.expr->kind == ExprKind::Column && lower(columns[i].name) == lower(o.expr->name.back())) at = i;
    }
    if (const auto* n = std::get_if<std::int64_t>(&o.expr->value.value); o.expr->kind == ExprKind::Literal && n) {
      if (*n >= 1 && static_cast<std::size_t>(*n) <= columns.size()) at = static_cast<std::size_t>(*n - 1);
    }
    if (!at) {
      sql_error(104,
                "ORDER BY items must appear in the select list if the statement contains a UNION, INTERSECT or "
                "EXCEPT operator.");
    }
    keys.push_back(*at);
    desc.push_back(o.descending);
  }
  auto buffer = std::make_shared<std::vector<Row>>();
  all = [all, buffer, keys, desc, columns, filled = false, at = std::size_t{0}](Row& out) mutable {
    if (!filled) {
      filled = true;
      for (Row r; all(r);) {
        hold(row_bytes(r));
        buffer->push_back(r);
      }
      const auto key = [&](const Row& r) {
        std::vector<TypedValue> k;
        for (const std::size_t i : keys) k.push_back({columns[i].type, r[i]});
        return k;
      };
      std::stable_sort(buffer->begin(), buffer->end(), [&](const Row& a, const Row& b) {
        checkpoint();
        return compare_keys(key(a), key(b), desc) < 0;
      });
    }
    if (at >= buffer->size()) return false;
    out = std::move((*buffer)[at++]);
    return true;
  };
  return all;
}

}  // namespace mssqlcdc::tds::engine
