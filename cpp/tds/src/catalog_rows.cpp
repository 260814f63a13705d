// catalog_rows.cpp: the relations that stream stored rows (cdc.lsn_time_mapping, change tables,
// captured tables) and the CDC table-valued functions over a change table.
#include <algorithm>
#include <functional>
#include <map>
#include <random>

#include "mssqlcdc/error.hpp"
#include "objects.hpp"
#include "stored.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {
namespace {

using Cells = std::vector<emu::Cell>;
// Opens the cursor of a scan; the flags say whether the read fires the emulator's hooks, and
// whether a hint made it a dirty read (which only a user table's read heeds).
using Open = std::function<std::unique_ptr<emu::RowCursor>(const emu::CellRange&, bool, bool)>;

constexpr int kUpdateOld = 3;  // __$operation of an update's before image

// Which stored cells a relation shows, in order, and whether it drops update before images.
struct Shape {
  std::vector<std::size_t> pick;
  std::vector<emu::SqlType> types;  // of the picked cells
  bool drop_update_old = false;
  std::size_t operation = 3;  // index of __$operation in the stored row
};

// A hint bound as a stored cell, when the stored order of the column is SQL Server's order:
// 10-byte binaries compare bytewise, integers numerically, text under the column's collation.
// Other bounds are left to the engine.
std::optional<emu::CellBound> stored_bound(const std::optional<Bound>& b, const emu::SqlType& type) {
  if (!b) return std::nullopt;
  if (const auto* bytes = std::get_if<Bytes>(&b->value); bytes != nullptr && type.family() == emu::Family::Binary) {
    if (bytes->size() != static_cast<std::size_t>(type.length)) return std::nullopt;
    return emu::CellBound{emu::Cell::blob(std::string(bytes->begin(), bytes->end())), b->inclusive};
  }
  if (const auto* n = std::get_if<std::int64_t>(&b->value); n != nullptr && type.family() == emu::Family::Integer) {
    return emu::CellBound{emu::Cell::integer(*n), b->inclusive};
  }
  // Text is stored as it is and compared under the column's collating sequence, which is the
  // engine's comparison of the column (decision 1449).
  if (const auto* text = std::get_if<std::string>(&b->value);
      text != nullptr && type.family() == emu::Family::Character && !type.is_lob()) {
    return emu::CellBound{emu::Cell::text(*text), b->inclusive};
  }
  return std::nullopt;
}

emu::CellRange stored_range(const ScanHints& hints, const std::string& column, const emu::SqlType& type) {
  emu::CellRange out;
  for (const auto& r : hints.ranges) {
    if (r.column != column) continue;
    // Any one conjunct's bound is a safe narrowing: the engine still applies them all.
    if (!out.lo) out.lo = stored_bound(r.lo, type);
    if (!out.hi) out.hi = stored_bound(r.hi, type);
  }
  return out;
}

class CursorStream final : public RowStream {
 public:
  // The stream copies the shape: the engine may drop the relation before its stream.
  CursorStream(std::unique_ptr<emu::RowCursor> cursor, Shape shape)
      : cursor_(std::move(cursor)), shape_(std::move(shape)) {}
  bool next(std::vector<Value>& row) override {
    while (cursor_->next(cells_)) {
      if (shape_.drop_update_old && cells_[shape_.operation].i == kUpdateOld) continue;
      row.resize(shape_.pick.size());
      for (std::size_t i = 0; i < shape_.pick.size(); ++i) row[i] = cell_value(cells_[shape_.pick[i]], shape_.types[i]);
      return true;
    }
    return false;
  }
  [[nodiscard]] bool null_row_first() const override { return cursor_->null_row_first(); }

 private:
  std::unique_ptr<emu::RowCursor> cursor_;
  Shape shape_;
  Cells cells_;
};

// All rows of a stream in a shuffled order that is never the stored one (for two rows or more),
// so a reader that relies on the stored order fails every time, not by chance. The seed is
// fixed: a failing test fails again the same way.
class ShuffledStream final : public RowStream {
 public:
  explicit ShuffledStream(std::unique_ptr<RowStream> inner) : null_first_(inner->null_row_first()) {
    std::vector<std::vector<Value>> stored;
    for (std::vector<Value> row; inner->next(row);) stored.push_back(row);
    std::vector<std::size_t> order(stored.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::mt19937_64 random(0x5eed);
    std::shuffle(order.begin(), order.end(), random);
    if (std::is_sorted(order.begin(), order.end())) std::reverse(order.begin(), order.end());
    for (const std::size_t i : order) rows_.push_back(std::move(stored[i]));
  }
  bool next(std::vector<Value>& row) override {
    if (at_ >= rows_.size()) return false;
    row = std::move(rows_[at_++]);
    return true;
  }
  [[nodiscard]] bool null_row_first() const override { return null_first_; }

 private:
  std::vector<std::vector<Value>> rows_;
  std::size_t at_ = 0;
  bool null_first_ = false;
};

// Whether a relation's data reads fire the emulator's hooks: a change table's and a captured
// table's do; the mapping's and the CDC functions' (what a person types) never do.
enum class Hooks : std::uint8_t { Never, OnDataRead };

class CursorRelation final : public Relation {
 public:
  // `shuffled` (the shuffle_unordered setting): rows come in a shuffled order and the relation
  // claims none, so a statement without ORDER BY sees no stored order and one with it sorts.
  CursorRelation(std::vector<RelColumn> columns, Shape shape, std::vector<std::string> order, std::string hint_column,
                 emu::SqlType hint_type, Open open, bool shuffled, Hooks hooks = Hooks::Never)
      : columns_(std::move(columns)),
        shape_(std::move(shape)),
        order_(shuffled ? std::vector<std::string>{} : std::move(order)),
        shuffled_(shuffled),
        hint_column_(std::move(hint_column)),
        hint_type_(hint_type),
        open_(std::move(open)),
        hooks_(hooks) {}
  [[nodiscard]] const std::vector<RelColumn>& columns() const override { return columns_; }
  [[nodiscard]] std::vector<std::string> ordered_by() const override { return order_; }
  std::unique_ptr<RowStream> scan(const ScanHints& hints) override {
    const emu::CellRange range =
        hint_column_.empty() ? emu::CellRange{} : stored_range(hints, hint_column_, hint_type_);
    auto stream = std::make_unique<CursorStream>(
        open_(range, hooks_ == Hooks::OnDataRead && hints.data_read, hints.read_uncommitted), shape_);
    if (!shuffled_) return stream;
    return std::make_unique<ShuffledStream>(std::move(stream));
  }

 private:
  std::vector<RelColumn> columns_;
  Shape shape_;
  std::vector<std::string> order_;
  bool shuffled_ = false;
  std::string hint_column_;
  emu::SqlType hint_type_;
  Open open_;
  Hooks hooks_;
};

std::vector<RelColumn> rel_columns(const std::vector<ObjectColumn>& columns, const std::vector<std::size_t>& pick) {
  std::vector<RelColumn> out;
  for (const std::size_t i : pick) out.push_back({columns[i].name, column_type(columns[i].type), columns[i].nullable});
  return out;
}

Shape shape_of(const std::vector<ObjectColumn>& columns, std::vector<std::size_t> pick) {
  Shape s;
  for (const std::size_t i : pick) s.types.push_back(columns[i].type);
  s.pick = std::move(pick);
  return s;
}

std::vector<std::size_t> all_of(std::size_t n) {
  std::vector<std::size_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = i;
  return out;
}

// SQL Server's strings only: the text of error 313 never names the bad argument.
[[noreturn]] void insufficient(const std::string& function) {
  throw Error(ErrorKind::Sql,
              "An insufficient number of arguments were supplied for the procedure or function " + function + " ... .",
              313);
}

std::string trimmed_lower(const std::string& s) {
  const auto b = s.find_first_not_of(' ');
  const auto e = s.find_last_not_of(' ');
  return b == std::string::npos ? std::string() : lower(s.substr(b, e - b + 1));
}

// The key of a change row's index columns as one comparable string.
std::string key_of(const Cells& cells, const std::vector<std::size_t>& key) {
  std::string out;
  for (const std::size_t i : key) {
    const emu::Cell& c = cells[i];
    out += static_cast<char>(c.type);
    out += c.type == emu::Cell::Type::Int    ? std::to_string(c.i)
           : c.type == emu::Cell::Type::Real ? std::to_string(c.d)
                                             : std::to_string(c.s.size()) + ":" + c.s;
  }
  return out;
}

// cdc.fn_cdc_get_net_changes_<ci>: one row per key changed in the range, with its final values.
std::unique_ptr<Relation> net_changes(std::unique_ptr<emu::RowCursor> cursor, const std::vector<ObjectColumn>& columns,
                                      const emu::Instance& in, const std::string& filter) {
  std::vector<std::size_t> key;
  for (const auto& name : in.index_columns) {
    for (std::size_t c = 0; c < in.columns.size(); ++c) {
      if (emu::iequals(in.columns[c].name, name)) key.push_back(5 + c);
    }
  }
  struct Net {
    std::size_t last_seen = 0;
    std::int64_t first_op = 0;
    std::int64_t last_op = 0;
    Cells last;
    std::string mask;
  };
  std::map<std::string, Net> nets;
  Cells cells;
  std::size_t seen = 0;
  while (cursor->next(cells)) {
    const std::int64_t op = cells[3].i;
    if (op == kUpdateOld) continue;
    Net& n = nets[key_of(cells, key)];
    if (n.first_op == 0) n.first_op = op;
    n.last_op = op;
    n.last_seen = seen++;
    if (op == 4) {  // the update masks of a key's updates add up
      const std::string& m = cells[4].s;
      if (n.mask.size() < m.size()) n.mask.insert(0, m.size() - n.mask.size(), '\0');
      for (std::size_t i = 0; i < m.size(); ++i) n.mask[n.mask.size() - m.size() + i] |= m[i];
    }
    n.last = cells;
  }
  std::vector<const Net*> order;
  for (const auto& [k, n] : nets) {
    if (!(n.first_op == 2 && n.last_op == 1)) order.push_back(&n);  // born and gone in the range
  }
  std::sort(order.begin(), order.end(), [](const Net* a, const Net* b) { return a->last_seen < b->last_seen; });
  std::vector<std::size_t> pick{0, 3, 4};
  for (std::size_t c = 0; c < in.columns.size(); ++c) pick.push_back(5 + c);
  std::vector<RelColumn> rel = rel_columns(columns, pick);
  std::vector<std::vector<Value>> rows;
  for (const Net* n : order) {
    std::int64_t op = n->last_op == 1 ? 1 : n->first_op == 2 ? 2 : 4;
    if (filter == "all with merge" && op != 1) op = 5;
    std::vector<Value> row{cell_value(n->last[0], columns[0].type), op, std::monostate{}};
    if (filter == "all with mask" && op == 4) row[2] = Bytes(n->mask.begin(), n->mask.end());
    for (std::size_t c = 0; c < in.columns.size(); ++c) row.push_back(cell_value(n->last[5 + c], columns[5 + c].type));
    rows.push_back(std::move(row));
  }
  return rows_relation(std::move(rel), std::move(rows), {"__$start_lsn"});
}

}  // namespace

std::unique_ptr<Relation> mapping_relation(emu::Reader& reader) {
  const std::vector<ObjectColumn> columns{{"start_lsn", emu::SqlType::parse("binary(10)"), false},
                                          {"tran_begin_time", emu::SqlType::parse("datetime"), true},
                                          {"tran_end_time", emu::SqlType::parse("datetime"), true},
                                          {"tran_id", emu::SqlType::parse("varbinary(10)"), true},
                                          {"tran_begin_lsn", emu::SqlType::parse("binary(10)"), true}};
  const auto pick = all_of(columns.size());
  return std::make_unique<CursorRelation>(
      rel_columns(columns, pick), shape_of(columns, pick), std::vector<std::string>{"start_lsn"}, "start_lsn",
      columns[0].type, [&reader](const emu::CellRange& r, bool, bool) { return reader.mapping_rows(r); },
      reader.shuffle_unordered());
}

std::unique_ptr<Relation> change_table_relation(emu::Reader& reader, const SqlObject& ct) {
  const auto pick = all_of(ct.columns.size());
  std::vector<std::string> order{"__$start_lsn"};
  if (ct.instance->has_command_id) order.emplace_back("__$command_id");
  order.insert(order.end(), {"__$seqval", "__$operation"});
  const std::string ci = ct.instance->name;
  reader.check_read(ci, "", "_CT");
  reader.check_select(ct.schema, ct.name);
  return std::make_unique<CursorRelation>(
      rel_columns(ct.columns, pick), shape_of(ct.columns, pick), std::move(order), "__$start_lsn", ct.columns[0].type,
      [&reader, ci](const emu::CellRange& r, bool fire, bool) { return reader.change_table_rows(ci, r, fire); },
      reader.shuffle_unordered(), Hooks::OnDataRead);
}

std::unique_ptr<Relation> user_table_relation(emu::Reader& reader, const SqlObject& t) {
  const auto pick = all_of(t.columns.size());
  const auto key = t.table->key();
  // SQLite stores the rows in key order under each key column's collation (its collating
  // sequence is the column's, decision 1325), which is the server's order.
  const bool sorted = !key.empty();
  std::vector<std::string> order;
  if (sorted) {
    for (const emu::Column* c : key) order.push_back(lower(c->name));
  }
  std::string hint = key.empty() ? std::string() : lower(key[0]->name);
  const emu::SqlType hint_type = key.empty() ? emu::SqlType{} : key[0]->type;
  const std::string name = t.table->full_name();
  reader.check_select(t.table->schema, t.table->name);
  return std::make_unique<CursorRelation>(
      rel_columns(t.columns, pick), shape_of(t.columns, pick), std::move(order), std::move(hint), hint_type,
      // A dirty read by the session's level or the table's hint (decision 1447); the session's
      // own uncommitted rows show either way (decision 1446).
      [&reader, name](const emu::CellRange& r, bool fire, bool hint) {
        return reader.table_rows(name, r, fire, hint || reader.isolation() == emu::Isolation::ReadUncommitted);
      },
      reader.shuffle_unordered(), Hooks::OnDataRead);
}

std::unique_ptr<Relation> change_function(emu::Reader& reader, const emu::Instance& in, ChangeFunction which,
                                          const std::vector<TypedValue>& args) {
  const std::string fn =
      std::string(which == ChangeFunction::All ? "cdc.fn_cdc_get_all_changes_" : "cdc.fn_cdc_get_net_changes_");
  reader.check_read(in.name, fn.substr(4));  // the object without its schema, as 229 names it
  if (args.size() > 3) {
    throw Error(ErrorKind::Sql, "Procedure or function " + fn + in.name + " has too many arguments specified.", 8144);
  }
  if (args.size() < 3) insufficient(fn);
  const auto from = lsn_of(args[0].value);
  const auto to = lsn_of(args[1].value);
  const auto* filter_text = std::get_if<std::string>(&args[2].value);
  const std::string filter = filter_text != nullptr ? trimmed_lower(*filter_text) : std::string();
  const bool filter_ok = which == ChangeFunction::All
                             ? (filter == "all" || filter == "all update old")
                             : (filter == "all" || filter == "all with mask" || filter == "all with merge");
  const auto max = reader.max_lsn();
  if (!from || !to || !filter_ok || !max || *from < in.start_lsn || *max < *to || *to < *from) insufficient(fn);

  const std::vector<ObjectColumn> columns = [&] {
    std::vector<ObjectColumn> out{{"__$start_lsn", emu::SqlType::parse("binary(10)"), false},
                                  {"__$end_lsn", emu::SqlType::parse("binary(10)"), true},
                                  {"__$seqval", emu::SqlType::parse("binary(10)"), false},
                                  {"__$operation", emu::SqlType::parse("int"), false},
                                  {"__$update_mask", emu::SqlType::parse("varbinary(128)"), true}};
    for (const auto& c : in.columns) out.push_back({c.name, c.type, true});
    return out;
  }();
  const auto blob = [](const Lsn& l) { return emu::Cell::blob(std::string(l.bytes().begin(), l.bytes().end())); };
  const emu::CellRange range{emu::CellBound{blob(*from), true}, emu::CellBound{blob(*to), true}};
  if (which == ChangeFunction::Net) return net_changes(reader.change_table_rows(in.name, range), columns, in, filter);

  std::vector<std::size_t> pick{0, 2, 3, 4};
  for (std::size_t c = 0; c < in.columns.size(); ++c) pick.push_back(5 + c);
  Shape shape = shape_of(columns, pick);
  shape.drop_update_old = filter == "all";
  const std::string ci = in.name;
  // The range is the function's own; a WHERE on its columns is the engine's to apply.
  return std::make_unique<CursorRelation>(
      rel_columns(columns, pick), std::move(shape), std::vector<std::string>{"__$start_lsn"}, std::string(),
      emu::SqlType{},
      [&reader, ci, range](const emu::CellRange&, bool, bool) { return reader.change_table_rows(ci, range); },
      reader.shuffle_unordered());
}

}  // namespace mssqlcdc::tds
