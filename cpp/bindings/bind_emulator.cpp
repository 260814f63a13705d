// bind_emulator.cpp: the `_native.emu` submodule over the emulator engine and reader. Python
// values are converted here, in C++, never in per-row Python code; Arrow streams leave as
// "arrow_array_stream" PyCapsules for pyarrow's C stream import.
#include <Python.h>
#include <datetime.h>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cmath>
#include <cstdlib>

#include "bindings.hpp"
#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/emu/hooks.hpp"
#include "mssqlcdc/emu/io_stats.hpp"
#include "mssqlcdc/emu/permissions.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/emu/row_digest.hpp"
#include "mssqlcdc/emu/workload.hpp"
#include "mssqlcdc/error.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace mssqlcdc::py {
namespace {

using emu::Change;
using emu::Value;

constexpr std::int64_t kMicrosPerDay = 86'400'000'000LL;

std::int64_t days_from_civil(int y, unsigned m, unsigned d) {
  using namespace std::chrono;
  return sys_days{year{y} / month{m} / day{d}}.time_since_epoch().count();
}

[[noreturn]] void type_error(const std::string& msg) { throw Error(ErrorKind::Type, msg); }

Value to_value(nb::handle h) {
  Value v;
  PyObject* o = h.ptr();
  if (o == Py_None) return v;
  if (PyBool_Check(o)) {
    v.kind = Value::Kind::Bool;
    v.i = o == Py_True ? 1 : 0;
    return v;
  }
  if (PyLong_Check(o)) {
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0) {
      v.kind = Value::Kind::Decimal;  // past bigint: only a decimal column can take it
      v.s = nb::cast<std::string>(nb::str(h));
      return v;
    }
    v.kind = Value::Kind::Int;
    v.i = x;
    return v;
  }
  if (PyFloat_Check(o)) {
    v.kind = Value::Kind::Float;
    v.f = PyFloat_AsDouble(o);
    if (std::isfinite(v.f)) {
      // A float goes to a decimal through its shortest repr, written without an exponent.
      static nb::handle decimal =
          nb::object(nb::module_::import_("decimal").attr("Decimal")).release();  // leaked: no decref at exit
      static nb::handle format = nb::object(nb::module_::import_("builtins").attr("format")).release();
      v.s = nb::cast<std::string>(format(decimal(nb::repr(h)), "f"));
    }
    return v;
  }
  if (PyUnicode_Check(o)) {
    v.kind = Value::Kind::Text;
    v.s = nb::cast<std::string>(h);
    return v;
  }
  if (PyBytes_Check(o) || PyByteArray_Check(o) || PyMemoryView_Check(o)) {
    v.kind = Value::Kind::Bytes;
    nb::bytes b(nb::module_::import_("builtins").attr("bytes")(h));
    v.s.assign(b.c_str(), b.size());
    return v;
  }
  if (PyDateTime_Check(o)) {
    const std::int64_t days = days_from_civil(PyDateTime_GET_YEAR(o), static_cast<unsigned>(PyDateTime_GET_MONTH(o)),
                                              static_cast<unsigned>(PyDateTime_GET_DAY(o)));
    std::int64_t us =
        days * kMicrosPerDay +
        (PyDateTime_DATE_GET_HOUR(o) * 3600LL + PyDateTime_DATE_GET_MINUTE(o) * 60LL + PyDateTime_DATE_GET_SECOND(o)) *
            1'000'000LL +
        PyDateTime_DATE_GET_MICROSECOND(o);
    nb::object offset = nb::borrow(h).attr("utcoffset")();
    if (offset.is_none()) {
      v.kind = Value::Kind::DateTime;
    } else {
      v.kind = Value::Kind::DateTimeTz;
      PyObject* td = offset.ptr();
      us -= (PyDateTime_DELTA_GET_DAYS(td) * 86'400LL + PyDateTime_DELTA_GET_SECONDS(td)) * 1'000'000LL +
            PyDateTime_DELTA_GET_MICROSECONDS(td);
    }
    v.i = us;
    return v;
  }
  if (PyDate_Check(o)) {
    v.kind = Value::Kind::Date;
    v.i = days_from_civil(PyDateTime_GET_YEAR(o), static_cast<unsigned>(PyDateTime_GET_MONTH(o)),
                          static_cast<unsigned>(PyDateTime_GET_DAY(o)));
    return v;
  }
  if (PyTime_Check(o)) {
    v.kind = Value::Kind::Time;
    v.i =
        (PyDateTime_TIME_GET_HOUR(o) * 3600LL + PyDateTime_TIME_GET_MINUTE(o) * 60LL + PyDateTime_TIME_GET_SECOND(o)) *
            1'000'000LL +
        PyDateTime_TIME_GET_MICROSECOND(o);
    return v;
  }
  const std::string type_name = nb::cast<std::string>(nb::borrow(h).type().attr("__name__"));
  if (type_name == "Decimal") {
    if (!nb::cast<bool>(nb::borrow(h).attr("is_finite")()))
      type_error("a decimal value must be finite, got " + nb::cast<std::string>(nb::str(h)));
    v.kind = Value::Kind::Decimal;
    v.s = nb::cast<std::string>(nb::module_::import_("builtins").attr("format")(h, "f"));
    return v;
  }
  if (type_name == "UUID") {
    v.kind = Value::Kind::Text;
    v.s = nb::cast<std::string>(nb::str(h));
    for (auto& c : v.s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return v;
  }
  type_error("a value of type " + type_name +
             " cannot be stored; use int, float, Decimal, str, bytes, bool, date, time, datetime or UUID");
}

nb::object from_value(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Null: return nb::none();
    case Value::Kind::Bool: return nb::bool_(v.i != 0);
    case Value::Kind::Int: return nb::int_(v.i);
    case Value::Kind::Float: return nb::float_(v.f);
    case Value::Kind::Text: return nb::str(v.s.c_str(), v.s.size());
    case Value::Kind::Bytes: return nb::bytes(v.s.data(), v.s.size());
    case Value::Kind::Decimal: return nb::module_::import_("decimal").attr("Decimal")(v.s);
    default: break;
  }
  nb::module_ dt = nb::module_::import_("datetime");
  if (v.kind == Value::Kind::Date) return dt.attr("date")(1970, 1, 1) + dt.attr("timedelta")("days"_a = v.i);
  if (v.kind == Value::Kind::Time) {
    return (dt.attr("datetime")(1970, 1, 1) + dt.attr("timedelta")("microseconds"_a = v.i)).attr("time")();
  }
  nb::object naive = dt.attr("datetime")(1970, 1, 1) + dt.attr("timedelta")("microseconds"_a = v.i);
  if (v.kind == Value::Kind::DateTimeTz) return naive.attr("replace")("tzinfo"_a = dt.attr("timezone").attr("utc"));
  return naive;
}

emu::Row to_row(nb::handle mapping, const std::string& what) {
  if (!PyMapping_Check(mapping.ptr()) || PyUnicode_Check(mapping.ptr()))
    type_error(what + " must be a mapping of column names to values");
  emu::Row row;
  for (nb::handle item : nb::borrow(mapping).attr("items")()) {
    nb::handle key = item[0];
    if (!PyUnicode_Check(key.ptr())) type_error(what + ": column names must be str");
    row.emplace_back(nb::cast<std::string>(key), to_value(item[1]));
  }
  return row;
}

std::vector<Change> to_changes(nb::handle seq) {
  if (PyUnicode_Check(seq.ptr()) || !PySequence_Check(seq.ptr()))
    type_error("changes must be a sequence of (kind, table, row[, old_key]) tuples");
  std::vector<Change> out;
  std::size_t n = 0;
  for (nb::handle item : seq) {
    ++n;
    const std::string what = "change #" + std::to_string(n);
    if (!PyTuple_Check(item.ptr()) && !PyList_Check(item.ptr()))
      type_error(what + " must be a tuple (kind, table, row[, old_key])");
    const auto len = nb::len(item);
    if (len != 3 && len != 4)
      throw Error(ErrorKind::InvalidArgument,
                  what + " has " + std::to_string(len) +
                      " elements; use (kind, table, row) or (\"update\", table, row, old_key)");
    const std::string kind = nb::cast<std::string>(item[0]);
    Change c;
    if (kind == "insert") c.kind = Change::Kind::Insert;
    else if (kind == "update") c.kind = Change::Kind::Update;
    else if (kind == "delete") c.kind = Change::Kind::Delete;
    else throw Error(ErrorKind::InvalidArgument, what + ": kind '" + kind + "' is not insert, update or delete");
    c.table = nb::cast<std::string>(item[1]);
    c.row = to_row(item[2], what);
    if (len == 4) {
      if (c.kind != Change::Kind::Update)
        throw Error(ErrorKind::InvalidArgument, what + ": only an update takes a fourth element (the old key)");
      c.old_key = to_row(item[3], what + " old key");
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<Lsn> opt_lsn(const std::optional<std::string>& s, const char* what) {
  if (!s) return std::nullopt;
  return emu::parse_lsn_arg(*s, what);
}

nb::object opt_str(const std::optional<Lsn>& l) { return l ? nb::object(nb::str(l->to_string().c_str())) : nb::none(); }

void capsule_release(PyObject* capsule) {
  auto* stream = static_cast<ArrowArrayStream*>(PyCapsule_GetPointer(capsule, "arrow_array_stream"));
  if (stream == nullptr) {
    PyErr_Clear();
    return;
  }
  if (stream->release != nullptr) stream->release(stream);
  std::free(stream);
}

template <typename Fill>
nb::object stream_capsule(Fill fill) {
  auto* stream = static_cast<ArrowArrayStream*>(std::calloc(1, sizeof(ArrowArrayStream)));
  if (stream == nullptr) throw std::bad_alloc();
  try {
    fill(stream);
  } catch (...) {
    std::free(stream);
    throw;
  }
  PyObject* cap = PyCapsule_New(stream, "arrow_array_stream", &capsule_release);
  if (cap == nullptr) {
    stream->release(stream);
    std::free(stream);
    throw nb::python_error();
  }
  return nb::steal(cap);
}

std::optional<emu::Key> to_key(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  emu::Key k;
  if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    for (nb::handle x : h) k.push_back(to_value(x));
  } else {
    k.push_back(to_value(h));
  }
  return k;
}

nb::object from_key(const emu::Key& k) { return nb::tuple(list_of(k, from_value)); }

nb::dict column_dict(const emu::ColumnInfo& c, bool captured) {
  nb::dict d;
  d["name"] = c.name;
  d["column_id"] = c.column_id;
  d[captured ? "ordinal" : "key_ordinal"] = c.ordinal;
  d["sql_type"] = c.sql_type;
  d["arrow_type"] = c.arrow_type;
  if (captured) d["present"] = c.present;
  if (!captured) d["is_identity"] = c.is_identity;
  if (!captured) d["is_nullable"] = c.is_nullable;
  d["is_computed"] = c.is_computed;
  d["collation"] = c.collation.empty() ? nb::none() : nb::object(nb::str(c.collation.c_str()));
  return d;
}

nb::dict instance_dict(const emu::InstanceInfo& in, bool with_table) {
  nb::dict d;
  d["name"] = in.name;
  if (with_table) d["table"] = in.table;
  // NULL until capture reaches the enable point, as cdc.change_tables shows it; the mark itself
  // stays readable for the Emulator's inspection face.
  d["start_lsn"] = in.established ? nb::object(nb::str(in.start_lsn.to_string().c_str())) : nb::none();
  d["low_water_mark"] = in.start_lsn.to_string();
  d["create_lsn"] = in.create_lsn.to_string();
  d["create_date"] = in.create_date;
  d["create_date_utc"] = in.create_date_utc;
  d["has_command_id"] = in.has_command_id;
  d["index_columns"] = in.index_columns;
  return d;
}

emu::Relation relation(const std::string& text) {
  std::string t;
  for (char c : text) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.erase(t.begin());
  if (t == "largest less than") return emu::Relation::LargestLessThan;
  if (t == "largest less than or equal") return emu::Relation::LargestLessOrEqual;
  if (t == "smallest greater than") return emu::Relation::SmallestGreaterThan;
  if (t == "smallest greater than or equal") return emu::Relation::SmallestGreaterOrEqual;
  throw Error(ErrorKind::InvalidArgument, "relation '" + text +
                                              "' is not one of 'largest less than', 'largest less than or equal', "
                                              "'smallest greater than', 'smallest greater than or equal'");
}

// An Arrow array borrowed from a Python object exporting the Arrow PyCapsule interface
// (`__arrow_c_array__`, as pyarrow arrays do); the capsules own the structs and free them.
struct BorrowedArray {
  nb::object schema_capsule;
  nb::object array_capsule;
  const ArrowSchema* schema = nullptr;
  const ArrowArray* array = nullptr;
};

BorrowedArray borrow_array(nb::handle texts) {
  if (!nb::hasattr(texts, "__arrow_c_array__")) {
    type_error("row digest: pass a pyarrow array or record batch (__arrow_c_array__)");
  }
  nb::tuple pair = nb::cast<nb::tuple>(texts.attr("__arrow_c_array__")());
  BorrowedArray out{pair[0], pair[1]};
  out.schema = static_cast<const ArrowSchema*>(PyCapsule_GetPointer(out.schema_capsule.ptr(), "arrow_schema"));
  if (out.schema == nullptr) throw nb::python_error();
  out.array = static_cast<const ArrowArray*>(PyCapsule_GetPointer(out.array_capsule.ptr(), "arrow_array"));
  if (out.array == nullptr) throw nb::python_error();
  return out;
}

}  // namespace

void bind_emulator(nb::module_& m) {
  PyDateTime_IMPORT;
  nb::module_ e = m.def_submodule("emu", "The SQL Server CDC emulator engine and reader");

  e.def(
      "batch_digests",
      [](nb::handle batch) {
        const BorrowedArray a = borrow_array(batch);
        return emu::batch_digests(*a.schema, *a.array);
      },
      "batch"_a, "The row digest of each row of a pyarrow record batch, its columns in order");
  e.def(
      "batch_tile",
      [](nb::handle batch) {
        const BorrowedArray a = borrow_array(batch);
        const emu::TileSum sum = emu::batch_tile(*a.schema, *a.array);
        return std::make_pair(sum.rows, sum.digest);
      },
      "batch"_a, "(rows, their row digests summed modulo 2**64) of a pyarrow record batch");

  nb::class_<emu::Engine>(e, "Engine")
      .def_static(
          "create",
          [](const std::string& path, std::int64_t start, int retention, const std::string& capture) {
            emu::CreateOptions o;
            o.start_micros = start;
            o.retention_minutes = retention;
            o.capture = capture;
            emu::Engine::create(path, o);
          },
          "path"_a, "start_micros"_a, "retention_minutes"_a, "capture"_a)
      .def(nb::init<const std::string&>(), "path"_a)
      .def(
          "create_table",
          [](emu::Engine& self, const std::string& table, const std::vector<std::pair<std::string, std::string>>& cols,
             const std::vector<std::string>& pk) { self.create_table(table, cols, pk); },
          "table"_a, "columns"_a, "primary_key"_a)
      .def(
          "enable_cdc",
          [](emu::Engine& self, const std::string& table, std::optional<std::string> ci,
             std::optional<std::vector<std::string>> cols, std::optional<std::string> role) {
            return self.enable_cdc(table, std::move(ci), std::move(cols), std::move(role));
          },
          "table"_a, "capture_instance"_a.none(), "captured_columns"_a.none(), "role_name"_a.none() = nb::none())
      .def(
          "create_user",
          [](emu::Engine& self, const std::string& name, const std::vector<std::string>& roles) {
            emu::WriteTxn txn(self.db());
            emu::create_user(self.db(), name, roles);
            txn.commit();
          },
          "name"_a, "roles"_a)
      .def(
          "add_role_member",
          [](emu::Engine& self, const std::string& role, const std::string& user) {
            emu::WriteTxn txn(self.db());
            emu::add_role_member(self.db(), role, user);
            txn.commit();
          },
          "role"_a, "user"_a)
      .def(
          "disable_cdc", [](emu::Engine& self, const std::string& ci) { self.disable_cdc(ci); }, "capture_instance"_a)
      .def(
          "add_column",
          [](emu::Engine& self, const std::string& t, const std::string& c, const std::string& ty,
             std::optional<std::int64_t> at) { return self.add_column(t, c, ty, at).to_string(); },
          "table"_a, "column"_a, "sql_type"_a, "at"_a.none())
      .def(
          "drop_column",
          [](emu::Engine& self, const std::string& t, const std::string& c, std::optional<std::int64_t> at) {
            return self.drop_column(t, c, at).to_string();
          },
          "table"_a, "column"_a, "at"_a.none())
      .def(
          "alter_column",
          [](emu::Engine& self, const std::string& t, const std::string& c, const std::string& ty,
             std::optional<std::int64_t> at) { return self.alter_column(t, c, ty, at).to_string(); },
          "table"_a, "column"_a, "sql_type"_a, "at"_a.none())
      .def("rename_column", &emu::Engine::rename_column, "table"_a, "column"_a, "new_name"_a)
      .def("rename_table", &emu::Engine::rename_table, "table"_a, "new_name"_a)
      .def(
          "commit",
          [](emu::Engine& self, nb::handle changes, std::optional<std::int64_t> at) {
            return self.commit(to_changes(changes), at).to_string();
          },
          "changes"_a, "at"_a.none())
      .def(
          "commit_many",
          [](emu::Engine& self, nb::handle txns, std::vector<std::optional<std::int64_t>> at) {
            std::vector<std::vector<Change>> all;
            for (nb::handle t : txns) all.push_back(to_changes(t));
            std::vector<std::string> out;
            for (const auto& l : self.commit_many(all, at)) out.push_back(l.to_string());
            return out;
          },
          "transactions"_a, "at"_a)
      .def(
          "idle", [](emu::Engine& self, std::optional<std::int64_t> at) { return self.idle(at).to_string(); },
          "at"_a.none())
      .def(
          "advance", [](emu::Engine& self, std::optional<std::int64_t> at) { return self.advance(at); }, "at"_a.none())
      .def("capture", [](emu::Engine& self) { return opt_str(self.capture()); })
      .def("drain", [](emu::Engine& self) { return opt_str(self.drain()); })
      .def("pending_capture", &emu::Engine::pending_capture)
      .def(
          "cleanup",
          [](emu::Engine& self, const std::string& ci, const std::string& mark) {
            self.cleanup(ci, emu::parse_lsn_arg(mark, "low_water_mark"));
          },
          "capture_instance"_a, "low_water_mark"_a)
      .def(
          "run_cleanup_job", [](emu::Engine& self, std::optional<int> r) { self.run_cleanup_job(r); },
          "retention_minutes"_a.none())
      .def(
          "begin", [](emu::Engine& self, std::optional<std::int64_t> at) { return self.begin(at); }, "at"_a.none())
      .def(
          "execute",
          [](emu::Engine& self, std::int64_t txn, nb::handle changes) { self.execute(txn, to_changes(changes)); },
          "txn"_a, "changes"_a)
      .def(
          "commit_open",
          [](emu::Engine& self, std::int64_t txn, std::optional<std::int64_t> at) {
            return self.commit_open(txn, at).to_string();
          },
          "txn"_a, "at"_a.none())
      .def("rollback", &emu::Engine::rollback, "txn"_a)
      .def("rollback_all", &emu::Engine::rollback_all)
      .def("setting", &emu::Engine::setting, "name"_a)
      .def("configure", &emu::Engine::configure, "name"_a, "value"_a)
      .def("last_time", &emu::Engine::last_time)
      .def(
          "add_hook",
          [](emu::Engine& self, const std::string& kind, const std::string& read_kind, const std::string& ci,
             std::optional<std::string> mark, std::int64_t after_rows, nb::handle changes,
             std::optional<std::int64_t> at) {
            emu::Hook h;
            h.kind = kind;
            h.read_kind = read_kind;
            h.capture_instance = ci;
            if (mark) h.mark = emu::parse_lsn_arg(*mark, "low_water_mark");
            h.after_rows = after_rows;
            if (!changes.is_none()) h.changes = to_changes(changes);
            h.at = at;
            emu::register_hook(self, h);
          },
          "kind"_a, "read_kind"_a, "capture_instance"_a, "mark"_a.none(), "after_rows"_a, "changes"_a.none(),
          "at"_a.none())
      .def("pending_hooks",
           [](emu::Engine& self) {
             return list_of(emu::pending_hooks(self.db()), [](const auto& h) {
               nb::dict d;
               d["hook_id"] = h.id;
               d["kind"] = h.kind;
               d["read"] = h.read_kind;
               d["capture_instance"] =
                   h.capture_instance.empty() ? nb::none() : nb::object(nb::str(h.capture_instance.c_str()));
               d["low_water_mark"] =
                   h.kind.starts_with("cleanup") ? nb::object(nb::str(h.mark.to_string().c_str())) : nb::none();
               d["after_rows"] = h.kind == "cleanup_mid_read" ? nb::object(nb::int_(h.after_rows)) : nb::none();
               d["changes"] = nb::int_(static_cast<std::int64_t>(h.changes.size()));
               return d;
             });
           })
      .def("clear_hooks", [](emu::Engine& self) { return emu::clear_hooks(self.db()); })
      .def(
          "workload",
          [](emu::Engine& self, const std::string& table, double rate, double duration,
             std::optional<std::int64_t> start, std::uint64_t seed, int ins, int upd, int del, int min_rows,
             int max_rows, double idle_every, double cleanup_every) {
            emu::WorkloadOptions o;
            o.table = table;
            o.rate = rate;
            o.duration_seconds = duration;
            o.start = start;
            o.seed = seed;
            o.insert_weight = ins;
            o.update_weight = upd;
            o.delete_weight = del;
            o.min_rows = min_rows;
            o.max_rows = max_rows;
            o.idle_every_seconds = idle_every;
            o.cleanup_every_seconds = cleanup_every;
            const auto r = emu::run_workload(self, o);
            nb::dict d;
            d["commits"] = r.commits;
            d["inserts"] = r.inserts;
            d["updates"] = r.updates;
            d["deletes"] = r.deletes;
            d["idle_entries"] = r.idle_entries;
            d["cleanups"] = r.cleanups;
            d["first_time"] = r.first_time;
            d["last_time"] = r.last_time;
            d["first_lsn"] = opt_str(r.first_lsn);
            d["last_lsn"] = opt_str(r.last_lsn);
            return d;
          },
          "table"_a, "rate"_a, "duration_seconds"_a, "start"_a.none(), "seed"_a, "insert_weight"_a, "update_weight"_a,
          "delete_weight"_a, "min_rows"_a, "max_rows"_a, "idle_every_seconds"_a, "cleanup_every_seconds"_a);

  nb::class_<emu::Reader>(e, "Reader")
      .def(nb::init<const std::string&>(), "path"_a)
      .def(
          "act_as", [](emu::Reader& r, std::optional<std::string> user) { r.act_as(std::move(user), std::nullopt); },
          "user"_a.none())
      .def(
          "may_read", [](emu::Reader& r, const std::string& ci) { return r.may_read(ci); }, "capture_instance"_a)
      .def(
          "set_isolation",
          [](emu::Reader& r, const std::string& level, std::int64_t lock_timeout_ms) {
            if (level == "readCommitted") {
              r.set_isolation(emu::Isolation::ReadCommitted);
            } else if (level == "snapshot") {
              r.set_isolation(emu::Isolation::Snapshot);
            } else {
              throw Error(ErrorKind::InvalidArgument,
                          "isolation level '" + level + "' is not valid; use 'readCommitted' or 'snapshot'");
            }
            r.set_lock_timeout(lock_timeout_ms < 0 ? -1 : lock_timeout_ms);
          },
          "level"_a, "lock_timeout_ms"_a)
      .def("begin_snapshot", &emu::Reader::begin_snapshot)
      .def("end_snapshot", &emu::Reader::end_snapshot)
      .def("in_snapshot", &emu::Reader::in_snapshot)
      .def("max_lsn", [](emu::Reader& r) { return opt_str(r.max_lsn()); })
      .def("max_commit_lsn", [](emu::Reader& r) { return opt_str(r.max_commit_lsn()); })
      .def(
          "min_lsn",
          [](emu::Reader& r, const std::string& ci) -> nb::object {
            const auto m = r.min_lsn(ci);
            if (m.state == emu::MinLsn::State::NotEstablished) return nb::none();
            return nb::str(m.lsn.to_string().c_str());
          },
          "capture_instance"_a)
      .def(
          "lsn_to_time",
          [](emu::Reader& r, const std::string& lsn) { return r.lsn_to_time(emu::parse_lsn_arg(lsn, "lsn")); }, "lsn"_a)
      .def(
          "lsn_to_utc",
          [](emu::Reader& r, const std::string& lsn) { return r.lsn_to_utc(emu::parse_lsn_arg(lsn, "lsn")); }, "lsn"_a)
      .def(
          "time_at_or_below",
          [](emu::Reader& r, const std::string& lsn) { return r.time_at_or_below(emu::parse_lsn_arg(lsn, "lsn")); },
          "lsn"_a)
      .def(
          "time_to_lsn",
          [](emu::Reader& r, const std::string& rel, std::int64_t t) {
            return opt_str(r.time_to_lsn(relation(rel), t));
          },
          "relation"_a, "micros"_a)
      .def(
          "nth_commit_after",
          [](emu::Reader& r, const std::string& after, std::int64_t n, std::optional<std::string> ci) {
            return opt_str(r.nth_commit_after(emu::parse_lsn_arg(after, "after"), n, std::move(ci)));
          },
          "after"_a, "n"_a, "capture_instance"_a.none())
      .def(
          "split_points",
          [](emu::Reader& r, const std::string& ci, std::optional<std::string> from, std::optional<std::string> to,
             int n) {
            return list_of(r.split_points(ci, opt_lsn(from, "from_lsn"), opt_lsn(to, "to_lsn"), n),
                           [](const auto& t) { return nb::make_tuple(t.last.to_string(), t.rows); });
          },
          "capture_instance"_a, "from_lsn"_a.none(), "to_lsn"_a.none(), "n"_a)
      .def(
          "read_changes",
          [](emu::Reader& r, const std::string& ci, std::optional<std::string> from, std::optional<std::string> to,
             std::optional<std::vector<std::string>> columns, bool include_command_id, bool include_update_mask,
             const std::string& row_filter, std::int64_t batch_rows, std::int64_t batch_bytes,
             const std::string& lsn_format, bool inspect, std::vector<std::string> text_columns) {
            emu::ChangeReadOptions o;
            o.columns = std::move(columns);
            o.text_columns = std::move(text_columns);
            o.include_command_id = include_command_id;
            o.include_update_mask = include_update_mask;
            o.row_filter = row_filter;
            o.batch_rows = batch_rows;
            o.batch_bytes = batch_bytes;
            if (lsn_format != "string" && lsn_format != "binary")
              throw Error(ErrorKind::InvalidArgument, "lsn_format must be 'string' or 'binary'");
            o.binary_lsn = lsn_format == "binary";
            o.fire_hooks = !inspect;
            o.raw_names = inspect;
            const auto f = opt_lsn(from, "from_lsn");
            const auto t = opt_lsn(to, "to_lsn");
            return stream_capsule([&](ArrowArrayStream* s) { r.read_changes(ci, f, t, o, s); });
          },
          "capture_instance"_a, "from_lsn"_a.none(), "to_lsn"_a.none(), "columns"_a.none(), "include_command_id"_a,
          "include_update_mask"_a, "row_filter"_a, "batch_rows"_a, "batch_bytes"_a, "lsn_format"_a, "inspect"_a,
          "text_columns"_a = std::vector<std::string>{})
      .def(
          "read_table",
          [](emu::Reader& r, const std::string& table, nb::handle lo, nb::handle hi,
             std::optional<std::vector<std::string>> columns, std::optional<std::vector<std::string>> key_columns,
             std::int64_t batch_rows, std::int64_t batch_bytes, bool inspect, std::vector<std::string> text_columns) {
            emu::KeyRange range{to_key(lo), to_key(hi)};
            emu::TableReadOptions o;
            o.columns = std::move(columns);
            o.text_columns = std::move(text_columns);
            o.key_columns = std::move(key_columns);
            o.batch_rows = batch_rows;
            o.batch_bytes = batch_bytes;
            o.fire_hooks = !inspect;
            o.inspect = inspect;
            return stream_capsule([&](ArrowArrayStream* s) {
              // A READ COMMITTED read may wait for another thread's transaction (decision 1335).
              nb::gil_scoped_release released;
              r.read_table(table, range, o, s);
            });
          },
          "table"_a, "lo"_a.none(), "hi"_a.none(), "columns"_a.none(), "key_columns"_a.none(), "batch_rows"_a,
          "batch_bytes"_a, "inspect"_a, "text_columns"_a = std::vector<std::string>{})
      .def(
          "captured_columns",
          [](emu::Reader& r, const std::string& ci) {
            return list_of(r.captured_columns(ci), [](const auto& c) { return column_dict(c, true); });
          },
          "capture_instance"_a)
      .def(
          "ddl_history",
          [](emu::Reader& r, const std::string& ci, const std::string& after, const std::string& upto) {
            const auto entries =
                r.ddl_history(ci, emu::parse_lsn_arg(after, "after"), emu::parse_lsn_arg(upto, "upto"));
            return list_of(entries, [](const auto& d) {
              nb::dict x;
              x["ddl_lsn"] = d.ddl_lsn.to_string();
              x["ddl_time"] = d.ddl_time;
              x["ddl_time_utc"] = d.ddl_time_utc;
              x["ddl_command"] = d.ddl_command;
              x["required_column_update"] = d.required_column_update;
              x["kind"] = d.kind;
              x["column"] = d.column;
              x["new_type"] = d.new_type ? nb::object(nb::str(d.new_type->c_str())) : nb::none();
              return x;
            });
          },
          "capture_instance"_a, "after"_a, "upto"_a)
      .def(
          "capture_instances",
          [](emu::Reader& r, const std::string& t) {
            return list_of(r.capture_instances(t), [](const auto& in) { return instance_dict(in, false); });
          },
          "table"_a)
      .def(
          "resolve_instance",
          [](emu::Reader& r, const std::string& ci) { return instance_dict(r.resolve_instance(ci), true); },
          "capture_instance"_a)
      .def(
          "table_info",
          [](emu::Reader& r, const std::string& t) {
            const auto info = r.table_info(t);
            nb::dict d;
            d["name"] = info.name;
            d["columns"] = list_of(info.columns, [](const auto& c) { return column_dict(c, false); });
            d["key_columns"] = info.key_columns;
            d["row_count"] = info.row_count;
            return d;
          },
          "table"_a)
      .def(
          "key_extent",
          [](emu::Reader& r, const std::string& t, std::optional<std::vector<std::string>> kc) -> nb::object {
            const auto x = [&]() {
              nb::gil_scoped_release released;  // it may wait for row locks
              return r.key_extent(t, kc);
            }();
            if (!x) return nb::none();
            nb::dict d;
            d["min"] = from_key(x->min);
            d["max"] = from_key(x->max);
            d["rows"] = x->rows;
            return d;
          },
          "table"_a, "key_columns"_a.none())
      .def(
          "key_tiles",
          [](emu::Reader& r, const std::string& t, std::int64_t n, std::int64_t per,
             std::optional<std::vector<std::string>> kc) {
            const auto tiles = [&]() {
              nb::gil_scoped_release released;  // it may wait for row locks
              return r.key_tiles(t, n, per, kc);
            }();
            return list_of(tiles, from_key);
          },
          "table"_a, "n"_a, "rows_per_tile"_a, "key_columns"_a.none())
      .def(
          "next_key",
          [](emu::Reader& r, const std::string& t, nb::handle after,
             std::optional<std::vector<std::string>> kc) -> nb::object {
            const emu::Key from = *to_key(after);
            const auto k = [&]() {
              nb::gil_scoped_release released;  // it may wait for row locks
              return r.next_key(t, from, kc);
            }();
            return k ? from_key(*k) : nb::none();
          },
          "table"_a, "after"_a, "key_columns"_a.none())
      .def(
          "first_key_from",
          [](emu::Reader& r, const std::string& t, nb::handle first,
             std::optional<std::vector<std::string>> kc) -> nb::object {
            const auto from = to_key(first);
            if (!from || from->size() != 1) {
              throw nb::value_error("first_key_from takes one non-NULL value of the first key column");
            }
            const auto k = [&]() {
              nb::gil_scoped_release released;  // it may wait for row locks
              return r.first_key_from(t, (*from)[0], kc);
            }();
            return k ? from_key(*k) : nb::none();
          },
          "table"_a, "first"_a, "key_columns"_a.none())
      .def(
          "statistics",
          [](emu::Reader& r, const std::string& t, bool auto_update, bool build) -> nb::object {
            const auto stats = [&]() {
              nb::gil_scoped_release released;  // a build reads every row
              return build ? std::optional<emu::Statistics>(r.update_statistics(t)) : r.statistics(t, auto_update);
            }();
            if (!stats) return nb::none();
            const auto info = r.table_info(t);
            emu::SqlType type = emu::SqlType::parse("int");
            for (const auto& c : info.columns) {
              if (!info.key_columns.empty() && emu::iequals(c.name, info.key_columns[0])) {
                type = emu::SqlType::parse(c.sql_type);
              }
            }
            nb::list steps;
            for (const auto& s : stats->histogram) {
              nb::dict d;
              d["range_hi_key"] = from_value(emu::Reader::to_value(s.range_hi_key, type));
              d["range_rows"] = s.range_rows;
              d["eq_rows"] = s.eq_rows;
              d["distinct_range_rows"] = s.distinct_range_rows;
              d["avg_range_rows"] = s.avg_range_rows;
              steps.append(d);
            }
            nb::dict d;
            d["rows"] = stats->rows;
            d["rows_sampled"] = stats->rows_sampled;
            d["last_updated_us"] = stats->last_updated;
            d["modification_counter"] = stats->modification_counter;
            d["histogram"] = steps;
            return d;
          },
          "table"_a, "auto_update"_a = true, "build"_a = false)
      .def(
          "key_buckets",
          [](emu::Reader& r, const std::string& t, int n, nb::handle lo, nb::handle hi,
             std::optional<std::vector<std::string>> kc) {
            auto big = [](nb::handle h) -> std::optional<__int128> {
              if (h.is_none()) return std::nullopt;
              const std::string s = nb::cast<std::string>(nb::str(h));
              __int128 v = 0;
              bool neg = false;
              for (char c : s) {
                if (c == '-') neg = true;
                else if (c >= '0' && c <= '9') v = v * 10 + (c - '0');
                else throw Error(ErrorKind::InvalidArgument, "key_buckets bounds must be integers, got " + s);
              }
              return neg ? -v : v;
            };
            auto text = [](__int128 v) {
              const bool neg = v < 0;
              unsigned __int128 u =
                  neg ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
              std::string s;
              do {
                s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
                u /= 10;
              } while (u != 0);
              return neg ? "-" + s : s;
            };
            nb::object py_int = nb::module_::import_("builtins").attr("int");
            const auto low = big(lo);
            const auto high = big(hi);
            const auto buckets = [&]() {
              nb::gil_scoped_release released;  // it may wait for row locks
              return r.key_buckets(t, n, low, high, kc);
            }();
            return list_of(
                buckets, [&](const auto& b) { return nb::make_tuple(py_int(text(b.lo)), py_int(text(b.hi)), b.rows); });
          },
          "table"_a, "n"_a, "lo"_a.none(), "hi"_a.none(), "key_columns"_a.none())
      .def("lsn_time_mapping",
           [](emu::Reader& r) {
             return list_of(r.lsn_time_mapping(), [](const auto& x) {
               nb::dict d;
               d["start_lsn"] = x.start_lsn.to_string();
               d["tran_begin_time"] = x.begin_time;
               d["tran_end_time"] = x.end_time;
               d["tran_begin_utc"] = x.begin_utc;
               d["tran_end_utc"] = x.end_utc;
               d["tran_id"] = nb::bytes(x.tran_id.data(), x.tran_id.size());
               d["tran_begin_lsn"] = x.tran_begin_lsn.to_string();
               return d;
             });
           })
      .def("server_time_zone", &emu::Reader::server_time_zone)
      .def("tables", &emu::Reader::tables);

  // What reads of a file cost it in this process (decision 1411): table -> counts, and the reset.
  e.def(
      "io_statistics",
      [](const std::string& path) {
        nb::dict out;
        for (const auto& [table, io] : emu::file_io(path)->totals()) {
          nb::dict d;
          d["scans"] = io.scans;
          d["seeks"] = io.seeks;
          d["rows_read"] = io.rows_read;
          out[nb::str(table.c_str())] = d;
        }
        return out;
      },
      "path"_a);
  e.def(
      "reset_io_statistics", [](const std::string& path) { emu::file_io(path)->clear(); }, "path"_a);
}

}  // namespace mssqlcdc::py
