// FROM and JOIN: each source opened (a table, a table-valued function called with its
// constant arguments, a derived table), the range hints WHERE puts on a relation's columns, and
// the join itself. The first source streams; a joined source is held, read within the range
// an equality join carries to it, with a hash on a column equality, and the left side's order
// is kept, which is what lets a change-table read joined to cdc.lsn_time_mapping stream in LSN
// order.
#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "builtins.hpp"
#include "mssqlcdc/emu/collation.hpp"
#include "select_engine.hpp"
#include "tsql.hpp"
#include "watch.hpp"

namespace mssqlcdc::tds::engine {
namespace {

Opened open(const Source& s, const std::shared_ptr<const Query>& owner, const Env& env, const Scope& empty) {
  Opened o;
  if (s.derived) {
    Env inner = env;
    inner.outermost = false;
    o.derived = run_query(*s.derived, owner, inner);
    for (std::size_t i = 0; i < o.derived.columns.size(); ++i) {
      const Column& c = o.derived.columns[i];
      if (c.name.empty()) {
        sql_error(8155, "No column name was specified for column " + std::to_string(i + 1) + " of '" + s.alias + "'.");
      }
      o.columns.push_back({c.name, c.type});
    }
    return o;
  }
  if (s.call) {
    Binder b(env, empty);
    std::vector<TypedValue> args;
    for (const auto& a : s.args) args.push_back(b.compile(*a)({}));
    o.relation = env.catalog.function(s.name, args);
  } else {
    o.relation = env.catalog.relation(s.name);
  }
  if (!o.relation) sql_error(208, "Invalid object name '" + joined(s.name) + "'.");
  for (const auto& c : o.relation->columns()) o.columns.push_back({c.name, c.type});
  o.ordered_by = o.relation->ordered_by();
  return o;
}

std::vector<const Expr*> conjuncts(const Expr* e) {
  if (e == nullptr) return {};
  if (e->kind == ExprKind::Binary && e->op == "AND") {
    auto out = conjuncts(e->args[0].get());
    auto right = conjuncts(e->args[1].get());
    out.insert(out.end(), right.begin(), right.end());
    return out;
  }
  return {e};
}

// Range hints for source `which` from WHERE conjuncts comparing its column with a constant.
// `x IS NULL OR x < v` (how the backends bound a range, NULL sorting first) bounds a column
// the relation declares NOT NULL as `x < v` does: there the IS NULL side never holds.
ScanHints hints_for(const std::vector<const Expr*>& where, const Scope& scope, std::size_t which, Binder& constants,
                    const std::vector<RelColumn>& columns) {
  std::map<std::size_t, RangeHint> ranges;
  const auto& range = scope.sources[which];
  const auto column_of = [&](const Expr& e) -> std::optional<std::size_t> {
    if (e.kind != ExprKind::Column) return std::nullopt;
    try {
      const std::size_t i = scope.resolve(e.name);
      if (i >= range.first && i < range.first + range.count) return i;
    } catch (const std::exception&) {}
    return std::nullopt;
  };
  const auto bound = [&](std::size_t slot, const Expr& e) -> std::optional<Value> {
    if (has_column(e)) return std::nullopt;
    // A text bound under another collation than the column's orders by that one: no hint.
    const emu::Collation* own = scope.slots[slot].type.collation;
    if (e.kind == ExprKind::Collate &&
        emu::Collation::find(e.op) != (own != nullptr ? own : &emu::Collation::database_default())) {
      return std::nullopt;
    }
    try {
      const TypedValue given = constants.compile(e)({});
      TypedValue v = convert(scope.slots[slot].type, given, 0);
      if (is_null(v.value)) return std::nullopt;
      // Text the column's type would cut or respell bounds another range: no hint.
      const auto* text = std::get_if<std::string>(&given.value);
      if (text != nullptr && std::holds_alternative<std::string>(v.value) && std::get<std::string>(v.value) != *text) {
        return std::nullopt;
      }
      return v.value;
    } catch (const std::exception&) {
      return std::nullopt;  // the engine still applies the predicate; the hint only reads less
    }
  };
  const auto tighten = [&](std::size_t slot, std::optional<Value> v, bool lo, bool inclusive) {
    if (!v) return;
    RangeHint& h = ranges[slot];
    h.column = lower(scope.slots[slot].name);
    auto& side = lo ? h.lo : h.hi;
    const ColumnType t = scope.slots[slot].type;
    if (side) {
      const int c = compare(TypedValue{t, *v}, TypedValue{t, side->value});
      if (lo ? c < 0 : c > 0) return;
      if (c == 0) inclusive = inclusive && side->inclusive;
    }
    side = Bound{*v, inclusive};
  };
  const auto comparison = [&](const Expr* c) {
    std::string op = c->op;
    const Expr* col = c->args[0].get();
    const Expr* other = c->args[1].get();
    if (!column_of(*col)) {
      std::swap(col, other);
      op = op == "<" ? ">" : op == ">" ? "<" : op == "<=" ? ">=" : op == ">=" ? "<=" : op;
    }
    const auto s = column_of(*col);
    if (!s) return;
    if (op == "=" || op == ">=" || op == ">") tighten(*s, bound(*s, *other), true, op != ">");
    if (op == "=" || op == "<=" || op == "<") tighten(*s, bound(*s, *other), false, op != "<");
  };
  const auto not_null = [&](const Expr& e) {
    const auto s = column_of(e);
    const std::size_t at = s ? *s - range.first : columns.size();
    return at < columns.size() && !columns[at].nullable;
  };
  for (const Expr* c : where) {
    if (c->kind == ExprKind::Between && !c->negated) {
      if (const auto s = column_of(*c->args[0])) {
        tighten(*s, bound(*s, *c->args[1]), true, true);
        tighten(*s, bound(*s, *c->args[2]), false, true);
      }
    } else if (c->kind == ExprKind::Binary && c->op == "OR") {
      const Expr* a = c->args[0].get();
      const Expr* b = c->args[1].get();
      if (b->kind == ExprKind::IsNull) std::swap(a, b);
      if (a->kind == ExprKind::IsNull && !a->negated && b->kind == ExprKind::Binary && b->op != "AND" &&
          b->op != "OR" && not_null(*a->args[0]) && b->args[0]->kind == ExprKind::Column &&
          column_of(*b->args[0]) == column_of(*a->args[0])) {
        comparison(b);
      }
    } else if (c->kind == ExprKind::Binary) {
      comparison(c);
    }
  }
  ScanHints hints;
  for (auto& [slot, h] : ranges) hints.ranges.push_back(std::move(h));
  return hints;
}

// The types whose equality and order a range carried across a join keeps: integers and
// binary values of one kind, compared the same on both sides. Text is left out, as two
// columns may compare under different collations.
bool carries_range(const ColumnType& a, const ColumnType& b) {
  switch (a.kind) {
    case SqlKind::TinyInt:
    case SqlKind::SmallInt:
    case SqlKind::Int:
    case SqlKind::BigInt: return a.kind == b.kind;
    case SqlKind::Binary:
    case SqlKind::VarBinary: return a.kind == b.kind && a.length == b.length;
    default: return false;
  }
}

// A range the WHERE puts on an earlier source's column, carried to joined source `k` through an
// equality join of that column with one of k's: a row of k outside the range can only match
// rows the WHERE drops, inner or LEFT join alike. So a change-table read joined to
// cdc.lsn_time_mapping reads the mapping rows of the batch's LSNs, not the whole mapping, as a
// server's seek per row would.
void carry_join_range(const Join& j, const std::vector<const Expr*>& where, const Scope& scope, std::size_t k,
                      Binder& constants, const std::vector<Opened>& opened, ScanHints& hints) {
  const Expr& on = *j.on;
  if (on.kind != ExprKind::Binary || on.op != "=" || on.args[0]->kind != ExprKind::Column ||
      on.args[1]->kind != ExprKind::Column) {
    return;
  }
  std::size_t x = 0, y = 0;
  try {
    x = scope.resolve(on.args[0]->name);
    y = scope.resolve(on.args[1]->name);
  } catch (const std::exception&) {
    return;
  }
  const auto& here = scope.sources[k];
  if (x >= here.first) std::swap(x, y);
  if (x >= here.first || y < here.first || y >= here.first + here.count) return;
  if (!carries_range(scope.slots[x].type, scope.slots[y].type)) return;
  std::size_t s = 0;
  while (x >= scope.sources[s].first + scope.sources[s].count) ++s;
  if (!opened[s].relation) return;
  const std::string target = lower(scope.slots[y].name);
  for (const auto& h : hints.ranges) {
    if (h.column == target) return;  // k's own WHERE bounds it already
  }
  const std::string source = lower(scope.slots[x].name);
  for (auto& h : hints_for(where, scope, s, constants, opened[s].relation->columns()).ranges) {
    if (h.column != source) continue;
    h.column = target;
    hints.ranges.push_back(std::move(h));
  }
}

}  // namespace

std::vector<Opened> open_sources(const SelectCore& c, const std::shared_ptr<const Query>& owner, const Env& env,
                                 Scope& scope) {
  const Scope empty;  // a table-valued function's arguments are constants
  std::vector<Opened> opened;
  std::vector<const Source*> sources;
  if (c.from) sources.push_back(&*c.from);
  for (const auto& j : c.joins) sources.push_back(&j.source);
  for (const Source* s : sources) {
    opened.push_back(open(*s, owner, env, empty));
    scope.add(s->alias, opened.back().columns);
  }
  return opened;
}

Producer joined_rows(const SelectCore& c, std::vector<Opened>& opened, const Scope& scope, const Env& env,
                     Binder& constants, bool data_read) {
  const auto where = conjuncts(c.where.get());
  // No FROM: one row of no columns, so SELECT 1 gives one row.
  Producer rows = [done = false](Row& r) mutable {
    if (done) return false;
    r.clear();
    return done = true;
  };
  for (std::size_t k = 0; k < opened.size(); ++k) {
    Opened& o = opened[k];
    Producer scan;
    if (o.relation) {
      ScanHints hints = hints_for(where, scope, k, constants, o.relation->columns());
      if (k > 0) carry_join_range(c.joins[k - 1], where, scope, k, constants, opened, hints);
      hints.data_read = data_read && k == 0;
      hints.read_uncommitted = (k == 0 ? *c.from : c.joins[k - 1].source).read_uncommitted;
      o.stream = o.relation->scan(hints);
      scan = [stream = o.stream, relation = o.relation](Row& r) {
        checkpoint();
        return stream->next(r);
      };
    } else {
      scan = o.derived.next;
    }
    if (k == 0) {
      rows = scan;
      continue;
    }
    const Join& j = c.joins[k - 1];
    auto held = std::make_shared<std::vector<Row>>();
    for (Row r; scan(r);) {
      hold(row_bytes(r));
      held->push_back(r);
    }
    const std::size_t first = scope.sources[k].first, width = scope.sources[k].count;
    // The join's scope is the sources so far.
    Scope so_far;
    for (std::size_t s = 0; s <= k; ++s) so_far.add(scope.sources[s].alias, opened[s].columns);
    Binder b(env, so_far);
    Fn on = b.compile(*j.on);
    std::optional<Fn> left_key;
    auto hash = std::make_shared<std::unordered_multimap<std::string, std::size_t>>();
    if (j.on->kind == ExprKind::Binary && j.on->op == "=" && j.on->args[0]->kind == ExprKind::Column &&
        j.on->args[1]->kind == ExprKind::Column) {
      std::size_t x = so_far.resolve(j.on->args[0]->name), y = so_far.resolve(j.on->args[1]->name);
      if (x >= first) std::swap(x, y);
      if (x < first && y >= first) {
        left_key = b.compile(*(so_far.resolve(j.on->args[0]->name) == x ? j.on->args[0] : j.on->args[1]));
        const ColumnType t = so_far.slots[y].type;
        for (std::size_t i = 0; i < held->size(); ++i) {
          const Value& v = (*held)[i][y - first];
          if (!is_null(v)) hash->emplace(group_key(TypedValue{t, v}), i);
        }
      }
    }
    struct State {
      Row left;
      std::vector<std::size_t> matches;
      std::size_t at = 0;
      bool active = false;
      bool matched = false;
    };
    auto state = std::make_shared<State>();
    const bool outer = j.left;
    Producer prev = rows;
    rows = [prev, held, hash, left_key, on, state, first, width, outer](Row& out) {
      State& st = *state;
      for (;;) {
        if (st.active) {
          while (st.at < st.matches.size()) {
            checkpoint();  // a cross join computes here without a row coming out
            out = st.left;
            const Row& right = (*held)[st.matches[st.at++]];
            out.insert(out.end(), right.begin(), right.end());
            if (truth_of(on(out)).value_or(false)) return st.matched = true;
          }
          st.active = false;
          if (outer && !st.matched) {
            // LEFT JOIN: a left row without a match comes out once, NULLs on the right.
            out = st.left;
            out.resize(first + width);
            return true;
          }
        }
        if (!prev(st.left)) return false;
        st.left.resize(first);
        st.matches.clear();
        st.at = 0;
        st.active = true;
        st.matched = false;
        if (left_key) {
          const TypedValue k = (*left_key)(st.left);
          if (!is_null(k.value)) {
            const auto [lo, hi] = hash->equal_range(group_key(k));
            for (auto it = lo; it != hi; ++it) st.matches.push_back(it->second);
            std::sort(st.matches.begin(), st.matches.end());
          }
        } else {
          st.matches.resize(held->size());
          std::iota(st.matches.begin(), st.matches.end(), 0);
        }
      }
    };
  }
  return rows;
}

}  // namespace mssqlcdc::tds::engine
