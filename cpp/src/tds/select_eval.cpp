// Evaluation of a parsed SELECT: expressions compile once into closures over a flat row (the
// columns of every source side by side); the pipeline is scan -> join -> WHERE -> [group or
// window] -> project -> [sort] -> OFFSET/FETCH/TOP. Column-free expressions (parameters,
// CONVERT of them, the CDC functions) are runtime constants, evaluated once per statement as
// SQL Server does, so a million-row range read parses its LSN bounds once.
#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "mssqlcdc/emu/zone.hpp"
#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/builtins.hpp"
#include "mssqlcdc/tds/select.hpp"
#include "mssqlcdc/tds/tsql.hpp"

namespace mssqlcdc::tds {
namespace {

using Row = std::vector<Value>;
using Fn = std::function<TypedValue(const Row&)>;
using Producer = std::function<bool(Row&)>;

const ColumnType kBit{SqlKind::Bit};
const ColumnType kBigInt{SqlKind::BigInt};
const ColumnType kInt{SqlKind::Int};

TypedValue truth(std::optional<bool> b) {
  if (!b) return {kBit, std::monostate{}};
  return {kBit, *b};
}
// SQL's three-valued logic: NULL is unknown.
std::optional<bool> truth_of(const TypedValue& v) {
  if (is_null(v.value)) return std::nullopt;
  if (const auto* b = std::get_if<bool>(&v.value)) return *b;
  if (const auto* i = std::get_if<std::int64_t>(&v.value)) return *i != 0;
  sql_error(4145, "An expression of non-boolean type specified in a context where a condition is expected.");
}

bool is_aggregate_call(const Expr& e) {
  return e.kind == ExprKind::Call && !e.over &&
         (e.op == "count" || e.op == "count_big" || e.op == "min" || e.op == "max" || e.op == "sum" || e.op == "avg");
}

// Aggregates and windows an expression holds, outermost first.
void collect(const Expr& e, std::vector<const Expr*>& aggregates, std::vector<const Expr*>& windows) {
  if (is_aggregate_call(e)) return aggregates.push_back(&e);
  if (e.kind == ExprKind::Call && e.over) return windows.push_back(&e);
  for (const auto& a : e.args) collect(*a, aggregates, windows);
}

bool has_column(const Expr& e) {
  if (e.kind == ExprKind::Column || is_aggregate_call(e) || e.over) return true;
  return std::any_of(e.args.begin(), e.args.end(), [](const ExprPtr& a) { return has_column(*a); });
}

struct Slot {
  std::string name;
  ColumnType type;
};

// The columns of the FROM sources side by side; each source a range of slots.
struct Scope {
  struct Range {
    std::string alias;
    std::size_t first = 0;
    std::size_t count = 0;
  };
  std::vector<Slot> slots;
  std::vector<Range> sources;

  void add(const std::string& alias, const std::vector<Slot>& columns) {
    sources.push_back({alias, slots.size(), columns.size()});
    slots.insert(slots.end(), columns.begin(), columns.end());
  }

  std::size_t resolve(const ObjectName& name) const {
    const std::string column = lower(name.back());
    const std::string full = joined(name);
    std::optional<std::size_t> found;
    bool alias_seen = name.size() == 1;
    for (const auto& r : sources) {
      if (name.size() > 1 && r.alias != lower(name[name.size() - 2])) continue;
      alias_seen = true;
      for (std::size_t i = r.first; i < r.first + r.count; ++i) {
        if (lower(slots[i].name) != column) continue;
        if (found) sql_error(209, "Ambiguous column name '" + name.back() + "'.");
        found = i;
      }
    }
    if (!alias_seen) sql_error(4104, "The multi-part identifier \"" + full + "\" could not be bound.");
    if (!found) sql_error(207, "Invalid column name '" + name.back() + "'.");
    return *found;
  }
};

struct Env {
  Catalog& catalog;
  std::shared_ptr<const Params> params;
};

RowSource run_query(const Query& q, const std::shared_ptr<const Query>& owner, const Env& env);

// Compiles expressions against one row layout. In a grouped query the layout is the group's
// keys then its aggregates, and a column outside both is error 8120.
class Binder {
 public:
  Binder(const Env& env, const Scope& scope) : env_(env), scope_(scope) {
    null_row_.assign(scope.slots.size(), std::monostate{});
    for (const auto& s : scope.slots) types_.push_back(s.type);
  }

  // The grouped layout: slot i holds group_by[i], then aggregates.
  void group(const std::vector<const Expr*>& keys, const std::vector<const Expr*>& aggregates,
             std::vector<ColumnType> types) {
    grouped_ = true;
    keys_ = keys;
    for (std::size_t i = 0; i < aggregates.size(); ++i) extra_[aggregates[i]] = keys.size() + i;
    types_ = std::move(types);
    null_row_.assign(types_.size(), std::monostate{});
  }
  // Windows computed into slots after the scope's own.
  void windows(const std::vector<const Expr*>& windows) {
    for (const auto* w : windows) {
      extra_[w] = types_.size();
      types_.push_back(kBigInt);
    }
    null_row_.assign(types_.size(), std::monostate{});
  }

  [[nodiscard]] const Row& null_row() const { return null_row_; }

  Fn compile(const Expr& e) {
    Fn fn = compile_node(e);
    if (has_column(e)) return fn;
    // A runtime constant: evaluated once, on first use.
    auto cache = std::make_shared<std::optional<TypedValue>>();
    return [fn, cache](const Row& r) {
      if (!*cache) *cache = fn(r);
      return **cache;
    };
  }

  // The type an expression has, from evaluating it over a row of NULLs; nullopt when that fails.
  std::optional<ColumnType> probe(const Fn& fn) const {
    try {
      return fn(null_row_).type;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

 private:
  Fn slot(std::size_t i) {
    const ColumnType t = types_[i];
    return [i, t](const Row& r) { return TypedValue{t, r[i]}; };
  }

  bool same(const Expr& a, const Expr& b) const {
    if (a.kind == ExprKind::Column && b.kind == ExprKind::Column)
      return scope_.resolve(a.name) == scope_.resolve(b.name);
    return a.text == b.text;
  }

  Fn compile_node(const Expr& e) {
    if (grouped_) {
      for (std::size_t i = 0; i < keys_.size(); ++i) {
        if (same(e, *keys_[i])) return slot(i);
      }
    }
    if (const auto it = extra_.find(&e); it != extra_.end()) return slot(it->second);
    switch (e.kind) {
      case ExprKind::Literal: {
        TypedValue v = e.value;
        return [v](const Row&) { return v; };
      }
      case ExprKind::Variable: return variable(e);
      case ExprKind::Column: {
        const std::size_t i = scope_.resolve(e.name);
        if (grouped_) {
          sql_error(8120, "Column '" + joined(e.name) +
                              "' is invalid in the select list because it is not contained in either an aggregate "
                              "function or the GROUP BY clause.");
        }
        return slot(i);
      }
      case ExprKind::Call: return call(e);
      case ExprKind::Unary: {
        Fn a = compile(*e.args[0]);
        if (e.op == "NOT")
          return [a](const Row& r) {
            const auto t = truth_of(a(r));
            return truth(t ? std::optional<bool>(!*t) : std::nullopt);
          };
        return [a](const Row& r) { return negate(a(r)); };
      }
      case ExprKind::Binary: return binary(e);
      case ExprKind::Between: {
        Fn x = compile(*e.args[0]), lo = compile(*e.args[1]), hi = compile(*e.args[2]);
        const bool neg = e.negated;
        return [x, lo, hi, neg](const Row& r) {
          const TypedValue v = x(r), a = lo(r), b = hi(r);
          std::optional<bool> ge, le;
          if (!is_null(v.value) && !is_null(a.value)) ge = compare(v, a) >= 0;
          if (!is_null(v.value) && !is_null(b.value)) le = compare(v, b) <= 0;
          std::optional<bool> both;
          if ((ge && !*ge) || (le && !*le)) both = false;
          else if (ge && le) both = true;
          return truth(both && neg ? std::optional<bool>(!*both) : both);
        };
      }
      case ExprKind::In: {
        std::vector<Fn> fns;
        for (const auto& a : e.args) fns.push_back(compile(*a));
        const bool neg = e.negated;
        return [fns, neg](const Row& r) {
          const TypedValue v = fns[0](r);
          if (is_null(v.value)) return truth(std::nullopt);
          bool unknown = false;
          for (std::size_t i = 1; i < fns.size(); ++i) {
            const TypedValue item = fns[i](r);
            if (is_null(item.value)) unknown = true;
            else if (compare(v, item) == 0) return truth(!neg);
          }
          return unknown ? truth(std::nullopt) : truth(neg);
        };
      }
      case ExprKind::IsNull: {
        Fn a = compile(*e.args[0]);
        const bool neg = e.negated;
        return [a, neg](const Row& r) { return truth(is_null(a(r).value) != neg); };
      }
      case ExprKind::Like: {
        Fn a = compile(*e.args[0]), p = compile(*e.args[1]);
        const bool neg = e.negated;
        return [a, p, neg](const Row& r) {
          const TypedValue v = a(r), pat = p(r);
          if (is_null(v.value) || is_null(pat.value)) return truth(std::nullopt);
          return truth(like(text_of(v, 0), text_of(pat, 0)) != neg);
        };
      }
      case ExprKind::Case: return case_of(e);
      case ExprKind::Convert: {
        Fn a = compile(*e.args[0]);
        Fn s = e.args.size() > 1 ? compile(*e.args[1]) : Fn();
        const ColumnType target = e.target;
        return [a, s, target](const Row& r) {
          int style = 0;
          if (s) {
            const TypedValue sv = s(r);
            if (!is_null(sv.value)) style = static_cast<int>(std::get<std::int64_t>(convert(kInt, sv, 0).value));
          }
          return convert(target, a(r), style);
        };
      }
      case ExprKind::AtTimeZone: return at_time_zone(e);
    }
    sql_error(102, "Incorrect syntax near '" + e.text + "'.");
  }

  Fn variable(const Expr& e) {
    const std::string name = lower(e.name[0]);
    if (auto g = global_variable(name)) {
      TypedValue v = *g;
      return [v](const Row&) { return v; };
    }
    const auto it = env_.params->find(name);
    if (it == env_.params->end()) sql_error(137, "Must declare the scalar variable \"" + e.name[0] + "\".");
    TypedValue v = it->second;
    return [v](const Row&) { return v; };
  }

  Fn binary(const Expr& e) {
    Fn a = compile(*e.args[0]), b = compile(*e.args[1]);
    const std::string op = e.op;
    if (op == "AND") {
      return [a, b](const Row& r) {
        const auto x = truth_of(a(r));
        if (x && !*x) return truth(false);
        const auto y = truth_of(b(r));
        if (y && !*y) return truth(false);
        return truth(x && y ? std::optional<bool>(true) : std::nullopt);
      };
    }
    if (op == "OR") {
      return [a, b](const Row& r) {
        const auto x = truth_of(a(r));
        if (x && *x) return truth(true);
        const auto y = truth_of(b(r));
        if (y && *y) return truth(true);
        return truth(x && y ? std::optional<bool>(false) : std::nullopt);
      };
    }
    if (op.size() == 1 && std::string_view("+-*/%").find(op[0]) != std::string_view::npos) {
      const char c = op[0];
      return [a, b, c](const Row& r) { return arithmetic(c, a(r), b(r)); };
    }
    return [a, b, op](const Row& r) {
      const TypedValue x = a(r), y = b(r);
      if (is_null(x.value) || is_null(y.value)) return truth(std::nullopt);
      const int c = compare(x, y);
      if (op == "=") return truth(c == 0);
      if (op == "<>") return truth(c != 0);
      if (op == "<") return truth(c < 0);
      if (op == "<=") return truth(c <= 0);
      if (op == ">") return truth(c > 0);
      return truth(c >= 0);
    };
  }

  Fn case_of(const Expr& e) {
    std::vector<Fn> fns;
    for (const auto& a : e.args) fns.push_back(compile(*a));
    // The result type is the highest-precedence THEN/ELSE type: take the widest probe.
    std::optional<ColumnType> type;
    const std::size_t first = e.has_operand ? 1 : 0;
    for (std::size_t i = first + 1; i < fns.size(); i += 2) {
      if (const auto t = probe(fns[i]); t && (!type || compare_rank(*t, *type))) type = t;
    }
    if (e.has_else) {
      if (const auto t = probe(fns.back()); t && (!type || compare_rank(*t, *type))) type = t;
    }
    const bool operand = e.has_operand, has_else = e.has_else;
    const ColumnType result = type.value_or(kInt);
    return [fns, operand, has_else, result](const Row& r) {
      const std::size_t first = operand ? 1 : 0;
      const std::size_t pairs_end = fns.size() - (has_else ? 1 : 0);
      std::optional<TypedValue> subject;
      if (operand) subject = fns[0](r);
      for (std::size_t i = first; i + 1 < pairs_end + 1 && i + 1 < fns.size() && i < pairs_end; i += 2) {
        const TypedValue w = fns[i](r);
        bool hit = false;
        if (subject) hit = !is_null(subject->value) && !is_null(w.value) && compare(*subject, w) == 0;
        else hit = truth_of(w).value_or(false);
        if (hit) return convert(result, fns[i + 1](r), 0);
      }
      if (has_else) return convert(result, fns.back()(r), 0);
      return TypedValue{result, std::monostate{}};
    };
  }

  // Whether `a` outranks `b` as a CASE result: the wider type of the same family wins too.
  static bool compare_rank(const ColumnType& a, const ColumnType& b) {
    const auto rank = [](SqlKind k) {
      static const SqlKind kOrder[] = {SqlKind::Binary,
                                       SqlKind::VarBinary,
                                       SqlKind::Char,
                                       SqlKind::VarChar,
                                       SqlKind::NChar,
                                       SqlKind::NVarChar,
                                       SqlKind::UniqueIdentifier,
                                       SqlKind::Bit,
                                       SqlKind::TinyInt,
                                       SqlKind::SmallInt,
                                       SqlKind::Int,
                                       SqlKind::BigInt,
                                       SqlKind::Decimal,
                                       SqlKind::Real,
                                       SqlKind::Float,
                                       SqlKind::Time,
                                       SqlKind::Date,
                                       SqlKind::DateTime,
                                       SqlKind::DateTime2,
                                       SqlKind::DateTimeOffset};
      return static_cast<int>(std::find(std::begin(kOrder), std::end(kOrder), k) - std::begin(kOrder));
    };
    if (rank(a.kind) != rank(b.kind)) return rank(a.kind) > rank(b.kind);
    return a.length > b.length || a.scale > b.scale;
  }

  Fn at_time_zone(const Expr& e) {
    Fn a = compile(*e.args[0]), z = compile(*e.args[1]);
    return [a, z](const Row& r) {
      const TypedValue v = a(r), zone = z(r);
      const ColumnType t{SqlKind::DateTimeOffset, 0, 0,
                         v.type.kind == SqlKind::DateTime ? std::uint8_t{3} : v.type.scale, false};
      if (is_null(zone.value)) return TypedValue{t, std::monostate{}};
      const std::string name = text_of(zone, 0);
      emu::TimeZone tz = emu::TimeZone::utc();
      try {
        tz = emu::TimeZone::load(name);
      } catch (const std::exception&) {
        sql_error(9820, "The time zone parameter '" + name + "' provided to AT TIME ZONE clause is invalid.");
      }
      if (is_null(v.value)) return TypedValue{t, std::monostate{}};
      const ColumnType utc_text{SqlKind::DateTime2, 0, 0, 7, false};
      if (const auto* o = std::get_if<DateTimeOffset>(&v.value)) {
        const std::int64_t secs = (o->utc.days - 719162LL) * 86400 + o->utc.ticks / 10000000;
        return TypedValue{t, DateTimeOffset{o->utc, static_cast<std::int16_t>(tz.offset_at(secs) / 60)}};
      }
      // A time without offset is a local time of the zone: find the offset in force there.
      const DateTime2 local = std::get<DateTime2>(convert(utc_text, v, 0).value);
      const std::int64_t local_secs = (local.days - 719162LL) * 86400 + local.ticks / 10000000;
      std::int64_t offset = tz.offset_at(local_secs);
      offset = tz.offset_at(local_secs - offset);
      const std::int64_t ticks = local.ticks - offset * 10000000;
      DateTime2 utc{local.days, ticks};
      while (utc.ticks < 0) utc.ticks += 864000000000, --utc.days;
      while (utc.ticks >= 864000000000) utc.ticks -= 864000000000, ++utc.days;
      return TypedValue{t, DateTimeOffset{utc, static_cast<std::int16_t>(offset / 60)}};
    };
  }

  Fn call(const Expr& e) {
    if (is_aggregate_call(e)) {
      sql_error(147,
                "An aggregate may not appear in the WHERE clause unless it is in a subquery contained in a HAVING "
                "clause or a select list, and the column being aggregated is an outer reference.");
    }
    if (e.over) sql_error(4108, "Windowed functions can only appear in the SELECT or ORDER BY clauses.");
    std::vector<Fn> args;
    for (const auto& a : e.args) args.push_back(compile(*a));
    Catalog* catalog = &env_.catalog;
    const ObjectName name = e.name;
    const std::string op = e.op;
    auto source = std::make_shared<int>(0);  // 0 unknown, 1 the catalog, 2 a built-in
    return [args, catalog, name, op, source](const Row& r) {
      std::vector<TypedValue> values;
      values.reserve(args.size());
      for (const auto& a : args) values.push_back(a(r));
      if (*source != 2) {
        if (auto v = catalog->scalar(name, values)) return *source = 1, *v;
      }
      if (*source != 1 && name.size() == 1) {
        if (auto v = builtin(op, values)) return *source = 2, *v;
      }
      if (name.size() == 1) sql_error(195, "'" + name[0] + "' is not a recognized built-in function name.");
      sql_error(4121, "Cannot find either column \"" + name[0] + "\" or the user-defined function or aggregate \"" +
                          joined(name) + "\", or the name is ambiguous.");
    };
  }

  const Env& env_;
  const Scope& scope_;
  bool grouped_ = false;
  std::vector<const Expr*> keys_;
  std::unordered_map<const Expr*, std::size_t> extra_;
  std::vector<ColumnType> types_;
  Row null_row_;
};

// An opened FROM source: its columns, ordering and rows.
struct Opened {
  std::vector<Slot> columns;
  std::vector<std::string> ordered_by;
  std::shared_ptr<Relation> relation;  // null for a derived table
  RowSource derived;
};

Opened open(const Source& s, const std::shared_ptr<const Query>& owner, const Env& env, const Scope& empty) {
  Opened o;
  if (s.derived) {
    o.derived = run_query(*s.derived, owner, env);
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
ScanHints hints_for(const std::vector<const Expr*>& where, const Scope& scope, std::size_t which, Binder& constants) {
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
    try {
      TypedValue v = convert(scope.slots[slot].type, constants.compile(e)({}), 0);
      if (is_null(v.value)) return std::nullopt;
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
  for (const Expr* c : where) {
    if (c->kind == ExprKind::Between && !c->negated) {
      if (const auto s = column_of(*c->args[0])) {
        tighten(*s, bound(*s, *c->args[1]), true, true);
        tighten(*s, bound(*s, *c->args[2]), false, true);
      }
    } else if (c->kind == ExprKind::Binary) {
      std::string op = c->op;
      const Expr* col = c->args[0].get();
      const Expr* other = c->args[1].get();
      if (!column_of(*col)) {
        std::swap(col, other);
        op = op == "<" ? ">" : op == ">" ? "<" : op == "<=" ? ">=" : op == ">=" ? "<=" : op;
      }
      const auto s = column_of(*col);
      if (!s) continue;
      if (op == "=" || op == ">=" || op == ">") tighten(*s, bound(*s, *other), true, op != ">");
      if (op == "=" || op == "<=" || op == "<") tighten(*s, bound(*s, *other), false, op != "<");
    }
  }
  ScanHints hints;
  for (auto& [slot, h] : ranges) hints.ranges.push_back(std::move(h));
  return hints;
}

// The rows of `prev` for which `test` is true (not false, not unknown).
Producer filtered(Producer prev, Fn test) {
  return [prev = std::move(prev), test = std::move(test)](Row& r) {
    while (prev(r)) {
      if (truth_of(test(r)).value_or(false)) return true;
    }
    return false;
  };
}

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

// Sort keys compare NULL first, as SQL Server orders NULL below every value.
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

// Materializes `source`, then numbers each window's rows into the slot after the last.
void compute_windows(std::vector<Row>& rows, const std::vector<const Expr*>& windows, Binder& binder) {
  for (const Expr* w : windows) {
    if (w->op != "ntile" && w->op != "row_number") {
      sql_error(195, "'" + w->op + "' is not a recognized windowing function.");
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
      sql_error(174, "The row_number function requires 0 argument(s).");
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
      for (std::size_t k = start; k < end; ++k) {
        const auto pos = static_cast<std::int64_t>(k - start);
        std::int64_t v = pos + 1;
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

// One SELECT core with the query's ORDER BY and OFFSET/FETCH when it is the only core.
RowSource run_core(const SelectCore& c, const Query* ordering, const std::shared_ptr<const Query>& owner,
                   const Env& env) {
  auto scope = std::make_shared<Scope>();
  const Scope empty;
  Binder constants(env, empty);
  std::vector<Opened> opened;
  std::vector<const Source*> sources;
  if (c.from) sources.push_back(&*c.from);
  for (const auto& j : c.joins) sources.push_back(&j.source);
  for (const Source* s : sources) {
    opened.push_back(open(*s, owner, env, empty));
    scope->add(s->alias, opened.back().columns);
  }
  const auto where = conjuncts(c.where.get());

  // FROM and JOIN: the first source streams, the others are held (with a hash on an equality).
  Producer rows = [done = false](Row& r) mutable {
    if (done) return false;
    r.clear();
    return done = true;
  };
  for (std::size_t k = 0; k < opened.size(); ++k) {
    Opened& o = opened[k];
    Producer scan;
    if (o.relation) {
      std::shared_ptr<RowStream> stream = o.relation->scan(hints_for(where, *scope, k, constants));
      scan = [stream, relation = o.relation](Row& r) { return stream->next(r); };
    } else {
      scan = o.derived.next;
    }
    if (k == 0) {
      rows = scan;
      continue;
    }
    const Join& j = c.joins[k - 1];
    auto held = std::make_shared<std::vector<Row>>();
    for (Row r; scan(r);) held->push_back(r);
    const std::size_t first = scope->sources[k].first, width = scope->sources[k].count;
    // The join's scope is the sources so far.
    Scope so_far;
    for (std::size_t s = 0; s <= k; ++s) so_far.add(scope->sources[s].alias, opened[s].columns);
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

  auto binder = std::make_shared<Binder>(env, *scope);
  if (c.where) {
    rows = filtered(rows, binder->compile(*c.where));
  }

  std::vector<const Expr*> aggregates, windows;
  for (const auto& it : c.items) {
    if (it.expr) collect(*it.expr, aggregates, windows);
  }
  if (c.having) collect(*c.having, aggregates, windows);
  if (ordering != nullptr) {
    for (const auto& o : ordering->order_by) collect(*o.expr, aggregates, windows);
  }
  const bool grouped = !c.group_by.empty() || !aggregates.empty();
  Binder source_binder(env, *scope);
  std::shared_ptr<std::vector<Row>> held;  // rows a group or a window needed, produced from here

  if (grouped) {
    std::vector<const Expr*> keys;
    std::vector<Fn> key_fns, arg_fns;
    std::vector<ColumnType> types;
    for (const auto& g : c.group_by) {
      keys.push_back(g.get());
      key_fns.push_back(source_binder.compile(*g));
      types.push_back(source_binder.probe(key_fns.back()).value_or(kInt));
    }
    for (const Expr* a : aggregates) {
      if (!a->star && a->args.size() != 1) {
        sql_error(174, "The " + a->op + " function requires 1 argument(s).");
      }
      if (a->star && a->op != "count" && a->op != "count_big") {
        sql_error(102, "Incorrect syntax near '*'.");
      }
      arg_fns.push_back(a->star ? Fn() : source_binder.compile(*a->args[0]));
      const ColumnType arg = a->star ? kInt : source_binder.probe(arg_fns.back()).value_or(kInt);
      types.push_back(a->op == "count"                   ? kInt
                      : a->op == "count_big"             ? kBigInt
                      : a->op == "sum" || a->op == "avg" ? sum_type(arg)
                                                         : arg);
    }
    std::vector<std::vector<TypedValue>> group_keys;
    std::vector<std::vector<AggState>> states;
    std::unordered_map<std::string, std::size_t> index;
    for (Row r; rows(r);) {
      std::vector<TypedValue> k;
      std::string key;
      for (const auto& f : key_fns) {
        k.push_back(f(r));
        key += group_key(k.back()) + '\x1e';
      }
      auto [it, inserted] = index.emplace(key, group_keys.size());
      if (inserted) {
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
    held = std::make_shared<std::vector<Row>>();
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
      held->push_back(std::move(out));
    }
    binder->group(keys, aggregates, types);
  } else if (!windows.empty()) {
    held = std::make_shared<std::vector<Row>>();
    for (Row r; rows(r);) held->push_back(r);
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

  // The select list: stars expand to their sources' columns.
  RowSource result;
  std::vector<Fn> project;
  for (const auto& it : c.items) {
    if (it.star_of) {
      bool found = false;
      for (const auto& r : scope->sources) {
        if (!it.star_of->empty() && r.alias != *it.star_of) continue;
        found = true;
        for (std::size_t i = r.first; i < r.first + r.count; ++i) {
          if (grouped)
            sql_error(8120, "Column '" + r.alias + "." + scope->slots[i].name +
                                "' is invalid in the select list because it is not contained in either an aggregate "
                                "function or the GROUP BY clause.");
          const ColumnType t = scope->slots[i].type;
          project.push_back([i, t](const Row& row) { return TypedValue{t, row[i]}; });
          result.columns.push_back(Column{scope->slots[i].name, t, true});
        }
      }
      if (!found && !it.star_of->empty()) {
        sql_error(4104, "The multi-part identifier \"" + *it.star_of + "\" could not be bound.");
      }
      if (scope->sources.empty()) sql_error(263, "Must specify table to select from.");
      continue;
    }
    project.push_back(binder->compile(*it.expr));
    std::string name = it.alias.value_or("");
    if (!it.alias && it.expr->kind == ExprKind::Column) name = it.expr->name.back();
    result.columns.push_back(Column{name, binder->probe(project.back()).value_or(kInt), true});
  }

  // ORDER BY: an output column by alias or position, else an expression over the sources.
  std::vector<Fn> sort_fns;
  std::vector<bool> desc;
  std::vector<std::optional<std::size_t>> sort_outputs;
  bool streams = !grouped && windows.empty();
  if (ordering != nullptr) {
    const auto& first_order = opened.empty() ? std::vector<std::string>{} : opened[0].ordered_by;
    for (std::size_t k = 0; k < ordering->order_by.size(); ++k) {
      const auto& o = ordering->order_by[k];
      desc.push_back(o.descending);
      std::optional<std::size_t> out;
      if (o.expr->kind == ExprKind::Column && o.expr->name.size() == 1) {
        for (std::size_t i = 0; i < c.items.size() && i < result.columns.size(); ++i) {
          if (c.items[i].alias && lower(*c.items[i].alias) == lower(o.expr->name[0])) out = i;
        }
      } else if (o.expr->kind == ExprKind::Literal) {
        const auto* n = std::get_if<std::int64_t>(&o.expr->value.value);
        if (n == nullptr || *n < 1 || static_cast<std::size_t>(*n) > result.columns.size()) {
          sql_error(108, "The ORDER BY position number " + o.expr->text.substr(1) +
                             " is out of range of the number of items in the select list.");
        }
        out = static_cast<std::size_t>(*n - 1);
      }
      sort_outputs.push_back(out);
      sort_fns.push_back(out ? Fn() : binder->compile(*o.expr));
      // Streams only when this key is the relation's k-th ordering column, ascending.
      std::optional<std::size_t> source_slot;
      const Expr* ref = out ? c.items[*out].expr.get() : o.expr.get();
      if (ref != nullptr && ref->kind == ExprKind::Column && opened.size() >= 1 && opened[0].relation) {
        const std::size_t s = scope->resolve(ref->name);
        if (s < scope->sources[0].count) source_slot = s;
      }
      if (o.descending || !source_slot || k >= first_order.size() ||
          lower(scope->slots[*source_slot].name) != first_order[k]) {
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
  const auto project_row = [project](const Row& r, std::vector<Value>& out) {
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
            s.keys.push_back(sort_outputs[k]
                                 ? TypedValue{result.columns[*sort_outputs[k]].type, s.out[*sort_outputs[k]]}
                                 : sort_fns[k](r));
          }
          buffer->push_back(std::move(s));
        }
        std::stable_sort(buffer->begin(), buffer->end(),
                         [&](const Sorted& a, const Sorted& b) { return compare_keys(a.keys, b.keys, desc) < 0; });
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
  result.next = [out_rows, owner](std::vector<Value>& row) mutable { return out_rows(row); };
  return result;
}

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
  if (!q.order_by.empty()) {
    // ORDER BY over a UNION names output columns (by alias or position).
    std::vector<std::size_t> keys;
    std::vector<bool> desc;
    for (const auto& o : q.order_by) {
      std::optional<std::size_t> at;
      for (std::size_t i = 0; i < result.columns.size(); ++i) {
        if (o.expr->kind == ExprKind::Column && lower(result.columns[i].name) == lower(o.expr->name.back())) at = i;
      }
      if (const auto* n = std::get_if<std::int64_t>(&o.expr->value.value); o.expr->kind == ExprKind::Literal && n) {
        if (*n >= 1 && static_cast<std::size_t>(*n) <= result.columns.size()) at = static_cast<std::size_t>(*n - 1);
      }
      if (!at) {
        sql_error(104,
                  "ORDER BY items must appear in the select list if the statement contains a UNION, INTERSECT or "
                  "EXCEPT operator.");
      }
      keys.push_back(*at);
      desc.push_back(o.descending);
    }
    const auto columns = result.columns;
    auto buffer = std::make_shared<std::vector<Row>>();
    all = [all, buffer, keys, desc, columns, filled = false, at = std::size_t{0}](Row& out) mutable {
      if (!filled) {
        filled = true;
        for (Row r; all(r);) buffer->push_back(r);
        const auto key = [&](const Row& r) {
          std::vector<TypedValue> k;
          for (const std::size_t i : keys) k.push_back({columns[i].type, r[i]});
          return k;
        };
        std::stable_sort(buffer->begin(), buffer->end(),
                         [&](const Row& a, const Row& b) { return compare_keys(key(a), key(b), desc) < 0; });
      }
      if (at >= buffer->size()) return false;
      out = std::move((*buffer)[at++]);
      return true;
    };
  }
  result.next = all;
  return result;
}

}  // namespace

std::optional<TypedValue> global_variable(const std::string& name) {
  const auto text = [](std::uint16_t n, std::string v) {
    return TypedValue{ColumnType{SqlKind::NVarChar, n, 0, 0, false}, std::move(v)};
  };
  if (name == "@@version") {
    return text(300, "Microsoft SQL Server 2022 (RTM) - 16.0.1000.6 (X64)\n\tmssql-cdc emulator (TDS front end)\n");
  }
  if (name == "@@spid") return TypedValue{ColumnType{SqlKind::SmallInt}, std::int64_t{51}};
  if (name == "@@trancount") return TypedValue{kInt, std::int64_t{0}};
  if (name == "@@servername") return text(128, "mssql-cdc-emulator");
  if (name == "@@language") return text(128, "us_english");
  if (name == "@@max_precision") return TypedValue{ColumnType{SqlKind::TinyInt}, std::int64_t{38}};
  return std::nullopt;
}

RowSource run_select(std::shared_ptr<const Query> query, Catalog& catalog, Params params) {
  const Env env{catalog, std::make_shared<const Params>(std::move(params))};
  RowSource rows = run_query(*query, query, env);
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
