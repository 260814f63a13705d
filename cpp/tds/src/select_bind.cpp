// Binding and compiling expressions: a name becomes a slot of the flat row (207, 209, 4104; 8120
// outside GROUP BY), an expression a closure over the row. SQL's three-valued logic lives here:
// NULL compares unknown, AND/OR short-circuit on a known side, WHERE keeps only true.
#include <algorithm>
#include <stdexcept>
#include <utility>

#include "builtins.hpp"
#include "mssqlcdc/emu/zone.hpp"
#include "mssqlcdc/error.hpp"
#include "scalar_kinds.hpp"
#include "select_engine.hpp"
#include "tsql.hpp"
#include "zones.hpp"

namespace mssqlcdc::tds::engine {

TypedValue truth(std::optional<bool> b) {
  if (!b) return {kBit, std::monostate{}};
  return {kBit, *b};
}
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

void collect(const Expr& e, std::vector<const Expr*>& aggregates, std::vector<const Expr*>& windows) {
  if (is_aggregate_call(e)) return aggregates.push_back(&e);
  if (e.kind == ExprKind::Call && e.over) return windows.push_back(&e);
  for (const auto& a : e.args) collect(*a, aggregates, windows);
}

bool has_column(const Expr& e) {
  // A subquery may read the outer row; an uncorrelated one caches its own answer instead.
  if (e.kind == ExprKind::Column || is_aggregate_call(e) || e.over || e.subquery) return true;
  return std::any_of(e.args.begin(), e.args.end(), [](const ExprPtr& a) { return has_column(*a); });
}

void Scope::add(const std::string& alias, const std::vector<Slot>& columns) {
  sources.push_back({alias, slots.size(), columns.size()});
  slots.insert(slots.end(), columns.begin(), columns.end());
}

std::size_t Scope::resolve(const ObjectName& name) const {
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

Binder::Binder(const Env& env, const Scope& scope) : env_(env), scope_(scope) {
  null_row_.assign(scope.slots.size(), std::monostate{});
  for (const auto& s : scope.slots) types_.push_back(s.type);
}

void Binder::group(const std::vector<const Expr*>& keys, const std::vector<const Expr*>& aggregates,
                   std::vector<ColumnType> types) {
  grouped_ = true;
  keys_ = keys;
  for (std::size_t i = 0; i < aggregates.size(); ++i) extra_[aggregates[i]] = keys.size() + i;
  types_ = std::move(types);
  null_row_.assign(types_.size(), std::monostate{});
}

void Binder::windows(const std::vector<const Expr*>& windows) {
  for (const auto* w : windows) {
    extra_[w] = types_.size();
    types_.push_back(kBigInt);
  }
  null_row_.assign(types_.size(), std::monostate{});
}

Fn Binder::compile(const Expr& e) {
  Fn fn = compile_node(e);
  if (has_column(e)) return fn;
  // A runtime constant: evaluated once, on first use.
  auto cache = std::make_shared<std::optional<TypedValue>>();
  return [fn, cache](const Row& r) {
    if (!*cache) *cache = fn(r);
    return **cache;
  };
}

std::optional<ColumnType> Binder::probe(const Fn& fn) const {
  try {
    return fn(null_row_).type;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

namespace {

// Whether `a` outranks `b` as a CASE result: the wider type of the same family wins too.
bool compare_rank(const ColumnType& a, const ColumnType& b) {
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

}  // namespace

Fn Binder::slot(std::size_t i) {
  const ColumnType t = types_[i];
  return [i, t](const Row& r) { return TypedValue{t, r[i]}; };
}

bool Binder::same(const Expr& a, const Expr& b) const {
  if (a.kind == ExprKind::Column && b.kind == ExprKind::Column) return scope_.resolve(a.name) == scope_.resolve(b.name);
  return a.text == b.text;
}

Fn Binder::compile_node(const Expr& e) {
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
      std::size_t i = 0;
      try {
        i = scope_.resolve(e.name);
      } catch (const Error& err) {
        // Inside a subquery, a name its own FROM lacks is the outer query's column.
        if (!env_.outer || (err.number() != 207 && err.number() != 4104)) throw;
        std::size_t j = 0;
        try {
          j = env_.outer->scope.resolve(e.name);
        } catch (const Error&) {
          throw err;
        }
        env_.outer->used = true;
        const auto outer = env_.outer;
        const ColumnType type = outer->scope.slots[j].type;
        return [outer, j, type](const Row&) {
          return TypedValue{type, outer->row != nullptr && j < outer->row->size() ? (*outer->row)[j] : Value{}};
        };
      }
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
    case ExprKind::Subquery:
    case ExprKind::Exists: return subquery(e);
    case ExprKind::In: {
      if (e.subquery) return subquery(e);
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
        const bool cs = comparison_collation(v.type, pat.type).case_sensitive();
        return truth(like(text_of(v, 0), text_of(pat, 0), cs) != neg);
      };
    }
    case ExprKind::Case: return case_of(e);
    case ExprKind::Convert: {
      Fn a = compile(*e.args[0]);
      Fn s = e.args.size() > 1 ? compile(*e.args[1]) : Fn();
      const ColumnType target = e.target;
      return [a, s, target](const Row& r) {
        int style = 0;
        const TypedValue v = a(r);
        if (s) {
          // CAST and CONVERT: a NULL style gives NULL; from a date or time type to
          // datetimeoffset only styles 0 and 1 are supported, others are error 9809.
          const TypedValue sv = s(r);
          if (is_null(sv.value)) return TypedValue{target, std::monostate{}};
          style = static_cast<int>(std::get<std::int64_t>(convert(kInt, sv, 0).value));
          if (target.kind == SqlKind::DateTimeOffset && scalar::is_temporal(v.type.kind) && style != 0 && style != 1) {
            sql_error(9809, "The style " + std::to_string(style) + " is not supported for conversions from " +
                                scalar::kind_name(v.type) + " to " + scalar::kind_name(target) + ".");
          }
        }
        return convert(target, v, style);
      };
    }
    case ExprKind::AtTimeZone: return at_time_zone(e);
    case ExprKind::Collate: {
      Fn a = compile(*e.args[0]);
      const emu::Collation* c = emu::Collation::find(e.op);
      return [a, c](const Row& r) {
        TypedValue v = a(r);
        if (!scalar::is_text(v.type.kind))
          sql_error(447, std::string("Expression type ")
                             .append(scalar::kind_name(v.type))
                             .append(" is invalid for COLLATE clause."));
        v.type.collation = c;
        v.type.explicit_collation = true;
        return v;
      };
    }
  }
  sql_error(102, "Incorrect syntax near '" + e.text + "'.");
}

Fn Binder::subquery(const Expr& e) {
  // The subquery runs for each row it is evaluated on, seeing that row as its outer query's
  // (a copy of this scope; none in a grouped query). One that reads no outer column is run once
  // and its answer kept.
  auto outer = std::make_shared<Outer>();
  if (!grouped_) outer->scope = scope_;
  auto inner = std::make_shared<Env>(Env{env_.catalog, env_.params, false, outer});
  const std::shared_ptr<const Query> q = e.subquery;
  const ExprKind kind = e.kind;
  const bool negated = e.negated;
  const Fn needle = kind == ExprKind::In ? compile(*e.args[0]) : Fn{};
  struct Answer {
    std::optional<TypedValue> value;            // Subquery, Exists
    std::optional<std::vector<TypedValue>> in;  // IN: the subquery's values
  };
  auto kept = std::make_shared<Answer>();
  return [outer, inner, q, kind, negated, needle, kept](const Row& r) -> TypedValue {
    const auto run = [&]() {
      outer->row = &r;
      RowSource rows = run_query(*q, q, *inner);
      if (rows.columns.size() != 1 && kind != ExprKind::Exists) {
        sql_error(116,
                  "Only one expression can be specified in the select list when the subquery is not introduced "
                  "with EXISTS.");
      }
      return rows;
    };
    if (kind == ExprKind::In) {
      const TypedValue v = needle(r);
      if (!kept->in) {
        RowSource rows = run();
        std::vector<TypedValue> values;
        Row row;
        while (rows.next(row)) values.push_back(TypedValue{rows.columns[0].type, row[0]});
        if (outer->used) {
          kept->in.reset();
        } else {
          kept->in = values;
        }
        if (is_null(v.value)) return truth(std::nullopt);
        bool unknown = false;
        for (const auto& item : values) {
          if (is_null(item.value)) unknown = true;
          else if (compare(v, item) == 0) return truth(!negated);
        }
        return unknown ? truth(std::nullopt) : truth(negated);
      }
      if (is_null(v.value)) return truth(std::nullopt);
      bool unknown = false;
      for (const auto& item : *kept->in) {
        if (is_null(item.value)) unknown = true;
        else if (compare(v, item) == 0) return truth(!negated);
      }
      return unknown ? truth(std::nullopt) : truth(negated);
    }
    if (kept->value) return *kept->value;
    RowSource rows = run();
    Row row;
    TypedValue answer;
    if (kind == ExprKind::Exists) {
      answer = truth(rows.next(row));
    } else {
      answer = TypedValue{rows.columns[0].type, Value{}};
      if (rows.next(row)) {
        answer.value = row[0];
        Row more;
        if (rows.next(more)) {
          sql_error(512,
                    "Subquery returned more than 1 value. This is not permitted when the subquery follows =, !=, <, "
                    "<= , >, >= or when the subquery is used as an expression.");
        }
      }
    }
    if (!outer->used) kept->value = answer;
    return answer;
  };
}

Fn Binder::variable(const Expr& e) {
  const std::string name = lower(e.name[0]);
  // The session's @@ values (@@TRANCOUNT) come with the parameters; the others are the server's.
  const auto session = name.starts_with("@@") ? env_.params->find(name) : env_.params->end();
  if (session != env_.params->end()) {
    TypedValue v = session->second;
    return [v](const Row&) { return v; };
  }
  if (auto g = global_variable(name)) {
    TypedValue v = *g;
    return [v](const Row&) { return v; };
  }
  const auto it = env_.params->find(name);
  if (it == env_.params->end()) sql_error(137, "Must declare the scalar variable \"" + e.name[0] + "\".");
  TypedValue v = it->second;
  return [v](const Row&) { return v; };
}

Fn Binder::binary(const Expr& e) {
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

Fn Binder::case_of(const Expr& e) {
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

Fn Binder::at_time_zone(const Expr& e) {
  Fn a = compile(*e.args[0]), z = compile(*e.args[1]);
  return [a, z](const Row& r) {
    const TypedValue v = a(r), zone = z(r);
    const ColumnType t{SqlKind::DateTimeOffset, 0, 0, v.type.kind == SqlKind::DateTime ? std::uint8_t{3} : v.type.scale,
                       false};
    if (is_null(zone.value)) return TypedValue{t, std::monostate{}};
    const std::string name = text_of(zone, 0);
    emu::TimeZone tz = emu::TimeZone::utc();
    // SQL Server knows zones by their Windows names (sys.time_zone_info), not IANA names.
    const auto iana = iana_zone(name);
    try {
      if (!iana) throw std::invalid_argument(name);
      tz = emu::TimeZone::load(*iana);
    } catch (const std::exception&) {
      sql_error(9820, "The time zone parameter '" + name + "' provided to AT TIME ZONE clause is invalid.");
    }
    if (is_null(v.value)) return TypedValue{t, std::monostate{}};
    const ColumnType utc_text{SqlKind::DateTime2, 0, 0, 7, false};
    if (const auto* o = std::get_if<DateTimeOffset>(&v.value)) {
      const std::int64_t secs = (o->utc.days - 719162LL) * 86400 + o->utc.ticks / 10000000;
      return TypedValue{t, DateTimeOffset{o->utc, static_cast<std::int16_t>(tz.offset_at(secs) / 60)}};
    }
    // A time without offset is a local time of the zone. As SQL Server documents
    // (learn.microsoft.com/sql/t-sql/queries/at-time-zone-transact-sql): a local time the zone
    // repeats when clocks are set back takes the offset before the change (the earlier instant);
    // one in the gap when they are set ahead is shifted by the offset before the change and shown
    // with the offset after it.
    const DateTime2 local = std::get<DateTime2>(convert(utc_text, v, 0).value);
    const std::int64_t local_secs = (local.days - 719162LL) * 86400 + local.ticks / 10000000;
    const std::int64_t before = tz.offset_at(local_secs - 86400);
    const std::int64_t after = tz.offset_at(local_secs + 86400);
    const auto valid = [&](std::int64_t o) { return tz.offset_at(local_secs - o) == o; };
    std::int64_t shift = before;   // the offset the local time is taken back by
    std::int64_t offset = before;  // the offset shown
    if (valid(before) && valid(after)) {
      shift = offset = std::max(before, after);  // repeated: the earlier instant
    } else if (valid(after)) {
      shift = offset = after;
    } else if (!valid(before)) {
      offset = tz.offset_at(local_secs - before);  // in the gap: the offset after the change
    }
    const std::int64_t ticks = local.ticks - shift * 10000000;
    DateTime2 utc{local.days, ticks};
    while (utc.ticks < 0) utc.ticks += 864000000000, --utc.days;
    while (utc.ticks >= 864000000000) utc.ticks -= 864000000000, ++utc.days;
    return TypedValue{t, DateTimeOffset{utc, static_cast<std::int16_t>(offset / 60)}};
  };
}

Fn Binder::call(const Expr& e) {
  if (is_aggregate_call(e)) {
    sql_error(147,
              "An aggregate may not appear in the WHERE clause unless it is in a subquery contained in a HAVING "
              "clause or a select list, and the column being aggregated is an outer reference.");
  }
  if (e.over) sql_error(4108, "Windowed functions can only appear in the SELECT or ORDER BY clauses.");
  // ISNULL(NULL, x): "If a literal NULL is provided as check_expression, returns the datatype of
  // the replacement_value" (the ISNULL page), so x is neither converted nor refused.
  const bool null_literal_first = !e.args.empty() && e.args[0]->kind == ExprKind::Literal && e.args[0]->text == "'null";
  if (e.name.size() == 1 && lower(e.name[0]) == "isnull" && e.args.size() == 2 && null_literal_first) {
    return compile(*e.args[1]);
  }
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

Producer filtered(Producer prev, Fn test) {
  return [prev = std::move(prev), test = std::move(test)](Row& r) {
    while (prev(r)) {
      if (truth_of(test(r)).value_or(false)) return true;
    }
    return false;
  };
}

}  // namespace mssqlcdc::tds::engine
