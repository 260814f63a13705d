// GROUP BY and windows: the two steps that must see every row before the first leaves. A group
// holds its keys and one running state an aggregate (COUNT, COUNT_BIG, MIN, MAX, SUM, AVG, with
// SQL Server's result types); a window numbers rows within their partition (ROW_NUMBER, NTILE).
#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "builtins.hpp"
#include "select_engine.hpp"
#include "watch.hpp"

namespace mssqlcdc::tds::engine {
namespace {

struct AggState {
  std::int64_t count = 0;
  std::optional<TypedValue> value;
};

ColumnType sum_type(const ColumnType& t) {
  switch (t.kind) {
    case SqlKind::BigInt: return kBigInt;
    case SqlKind::Decimal: return ColumnType{SqlKind::Decimal, 17, 38, t.scale, false};
    case SqlKind::Float:
    case SqlKind::Real: return ColumnType{SqlKind::Float};
    default: return kInt;
  }
}

}  // namespace

std::vector<Row> grouped_rows(const SelectCore& c, const std::vector<const Expr*>& aggregates, const Producer& rows,
                              Binder& source, Binder& binder) {
  std::vector<const Expr*> keys;
  std::vector<Fn> key_fns, arg_fns;
  std::vector<ColumnType> types;
  for (const auto& g : c.group_by) {
    keys.push_back(g.get());
    key_fns.push_back(source.compile(*g));
    types.push_back(source.probe(key_fns.back()).value_or(kInt));
  }
  for (const Expr* a : aggregates) {
    if (!a->star && a->args.size() != 1) {
      sql_error(174, "The " + a->op + " function requires 1 argument(s).");
    }
    if (a->star && a->op != "count" && a->op != "count_big") {
      sql_error(102, "Incorrect syntax near '*'.");
    }
    arg_fns.push_back(a->star ? Fn() : source.compile(*a->args[0]));
    const ColumnType arg = a->star ? kInt : source.probe(arg_fns.back()).value_or(kInt);
    types.push_back(a->op == "count"                   ? kInt
                    : a->op == "count_big"             ? kBigInt
                    : a->op == "sum" || a->op == "avg" ? sum_type(arg)
                                                       : arg);
  }
  std::vector<std::vector<TypedValue>> group_keys;
  std::vector<std::vector<AggState>> states;
  std::unordered_map<std::string, std::size_t> index;
  for (Row r; rows(r);) {
    checkpoint();
    std::vector<TypedValue> k;
    std::string key;
    for (const auto& f : key_fns) {
      k.push_back(f(r));
      key += group_key(k.back()) + '\x1e';
    }
    auto [it, inserted] = index.emplace(key, group_keys.size());
    if (inserted) {
      hold(key.size() + k.size() * sizeof(TypedValue) + aggregates.size() * sizeof(AggState));
      group_keys.push_back(std::move(k));
      states.emplace_back(aggregates.size());
    }
    auto& st = states[it->second];
    for (std::size_t i = 0; i < aggregates.size(); ++i) {
      const Expr& a = *aggregates[i];
      if (a.star) {
        ++st[i].count;
        continue;
      }
      const TypedValue v = arg_fns[i](r);
      if (is_null(v.value)) continue;
      ++st[i].count;
      auto& acc = st[i].value;
      if (a.op == "min" || a.op == "max") {
        if (!acc || (a.op == "min" ? compare(v, *acc) < 0 : compare(v, *acc) > 0)) acc = v;
      } else if (a.op == "sum" || a.op == "avg") {
        const TypedValue x = convert(types[keys.size() + i], v, 0);
        acc = acc ? arithmetic('+', *acc, x) : x;
      }
    }
  }
  if (key_fns.empty() && group_keys.empty()) {
    group_keys.emplace_back();
    states.emplace_back(aggregates.size());
  }
  std::vector<Row> held;
  for (std::size_t g = 0; g < group_keys.size(); ++g) {
    Row out;
    for (const auto& k : group_keys[g]) out.push_back(k.value);
    for (std::size_t i = 0; i < aggregates.size(); ++i) {
      const auto& st = states[g][i];
      const std::string& op = aggregates[i]->op;
      if (op == "count" || op == "count_big") {
        out.push_back(st.count);
      } else if (op == "avg" && st.value) {
        const TypedValue n{kBigInt, st.count};
        out.push_back(convert(types[keys.size() + i], arithmetic('/', *st.value, n), 0).value);
      } else {
        out.push_back(st.value ? convert(types[keys.size() + i], *st.value, 0).value : Value{});
      }
    }
    held.push_back(std::move(out));
  }
  binder.group(keys, aggregates, types);
  return held;
}

void compute_windows(std::vector<Row>& rows, const std::vector<const Expr*>& windows, Binder& binder) {
  for (const Expr* w : windows) {
    const bool ranks = w->op == "rank" || w->op == "dense_rank";
    if (w->op != "ntile" && w->op != "row_number" && !ranks) {
      sql_error(195, "'" + w->op + "' is not a recognized windowing function.");
    }
    if ((ranks || w->op == "row_number" || w->op == "ntile") && w->order.empty()) {
      sql_error(4112, "The function '" + w->op + "' must have an OVER clause with ORDER BY.");
    }
    std::vector<Fn> part, order;
    std::vector<bool> desc_all;
    for (const auto& p : w->partition) part.push_back(binder.compile(*p)), desc_all.push_back(false);
    for (const auto& o : w->order) order.push_back(binder.compile(*o.expr)), desc_all.push_back(o.descending);
    std::int64_t tiles = 1;
    if (w->op == "ntile") {
      if (w->args.size() != 1) sql_error(174, "The ntile function requires 1 argument(s).");
      tiles = count_of(*w->args[0], binder, "NTILE");
      if (tiles <= 0)
        sql_error(4116, "The function 'ntile' takes only a positive int or bigint expression as its input.");
    } else if (!w->args.empty()) {
      sql_error(174, "The " + w->op + " function requires 0 argument(s).");
    }
    std::vector<std::vector<TypedValue>> keys(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      for (const auto& f : part) keys[i].push_back(f(rows[i]));
      for (const auto& f : order) keys[i].push_back(f(rows[i]));
    }
    std::vector<std::size_t> idx(rows.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(),
                     [&](std::size_t a, std::size_t b) { return compare_keys(keys[a], keys[b], desc_all) < 0; });
    const std::vector<bool> part_desc(part.size(), false);
    for (std::size_t start = 0; start < idx.size();) {
      std::size_t end = start + 1;
      const auto same_part = [&](std::size_t a, std::size_t b) {
        for (std::size_t k = 0; k < part.size(); ++k) {
          const std::vector<TypedValue> x{keys[a][k]}, y{keys[b][k]};
          if (compare_keys(x, y, {false}) != 0) return false;
        }
        return true;
      };
      while (end < idx.size() && same_part(idx[start], idx[end])) ++end;
      const auto n = static_cast<std::int64_t>(end - start);
      // NTILE: n / tiles rows per tile, the first n % tiles tiles one row more.
      const std::int64_t small = n / tiles, big = n % tiles;
      // RANK: one more than the rows ordered before the row; DENSE_RANK: one more than the
      // distinct ORDER BY values before it. Ties share a rank.
      const auto tied = [&](std::size_t a, std::size_t b) {
        for (std::size_t k = part.size(); k < keys[a].size(); ++k) {
          const std::vector<TypedValue> x{keys[a][k]}, y{keys[b][k]};
          if (compare_keys(x, y, {false}) != 0) return false;
        }
        return true;
      };
      std::int64_t rank = 0;
      std::int64_t dense = 0;
      for (std::size_t k = start; k < end; ++k) {
        const auto pos = static_cast<std::int64_t>(k - start);
        std::int64_t v = pos + 1;
        if (ranks) {
          if (k == start || !tied(idx[k - 1], idx[k])) {
            rank = pos + 1;
            ++dense;
          }
          v = w->op == "rank" ? rank : dense;
        }
        if (w->op == "ntile") {
          v = pos < big * (small + 1) ? pos / (small + 1) + 1
                                      : big + (pos - big * (small + 1)) / std::max<std::int64_t>(small, 1) + 1;
        }
        rows[idx[k]].push_back(v);
      }
      start = end;
    }
  }
}

}  // namespace mssqlcdc::tds::engine
