#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <utility>
#include <vector>

#include "bindings.hpp"
#include "convert_state.hpp"
#include "mssqlcdc/checkpoint.hpp"
#include "mssqlcdc/generation.hpp"
#include "mssqlcdc/generation_gc.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace mssqlcdc::py {
namespace {

std::vector<checkpoint::Entry> entries_from_py(const std::vector<std::pair<std::string, std::string>>& listed,
                                               const char* what) {
  std::vector<checkpoint::Entry> out;
  for (const auto& [name, kind] : listed) {
    checkpoint::EntryKind k;
    if (kind == "folder") {
      k = checkpoint::EntryKind::Folder;
    } else if (kind == "file") {
      k = checkpoint::EntryKind::File;
    } else if (kind == "link") {
      k = checkpoint::EntryKind::Link;
    } else {
      throw nb::value_error((std::string(what) + ": kind of " + name + " must be folder, file or link").c_str());
    }
    out.push_back({name, k});
  }
  return out;
}

nb::dict plan_to_py(const checkpoint::GcPlan& plan) {
  nb::list remove, left;
  for (const auto& r : plan.remove) {
    nb::dict d;
    d["generation"] = r.generation;
    d["path"] = r.path;
    d["folder"] = r.folder;
    remove.append(d);
  }
  for (const auto& l : plan.left) {
    nb::dict d;
    d["path"] = l.path;
    d["why"] = l.why;
    left.append(d);
  }
  nb::dict out;
  out["remove"] = remove;
  out["kept"] = plan.kept;
  out["left"] = left;
  return out;
}

}  // namespace

// Paths cross as str: the toolkit works on local and Volume paths only (the Python side
// refuses URIs before calling it).
void bind_checkpoint(nb::module_& m) {
  nb::module_ ck = m.def_submodule("checkpoint", "Spark's offset log and the generation state file");
  ck.attr("STATE_FILE_NAME") = checkpoint::kStateFileName;

  ck.def(
      "read_state",
      [](const std::string& dir) -> nb::object {
        const auto state = checkpoint::read_state(dir);
        return state ? nb::object(state_to_py(*state)) : nb::none();
      },
      "checkpoint"_a);
  ck.def(
      "write_state",
      [](const std::string& dir, nb::handle state) {
        const State s = state_from_py(state);
        nb::gil_scoped_release unlocked;  // fsync can take a while on a network mount
        checkpoint::write_state(dir, s);
      },
      "checkpoint"_a, "state"_a);
  ck.def(
      "replace_state",
      [](const std::string& dir, nb::handle expected, nb::handle state) {
        const State e = state_from_py(expected);
        const State s = state_from_py(state);
        nb::gil_scoped_release unlocked;  // fsync can take a while on a network mount
        return checkpoint::replace_state(dir, e, s);
      },
      "checkpoint"_a, "expected"_a, "state"_a);
  ck.def(
      "last_committed_offset",
      [](const std::string& dir) -> nb::object {
        std::optional<checkpoint::LastOffset> last;
        {
          nb::gil_scoped_release unlocked;
          last = checkpoint::last_committed_offset(dir);
        }
        if (!last) return nb::none();
        return nb::make_tuple(last->batch_id, last->source_json, last->file);
      },
      "spark_checkpoint"_a);
  ck.def(
      "has_metadata", [](const std::string& dir) { return checkpoint::has_metadata(dir); }, "spark_checkpoint"_a);
  ck.def(
      "parse_source_offset",
      [](std::string_view text, const std::string& origin) {
        return offset_to_py(checkpoint::parse_source_offset(text, origin));
      },
      "json_text"_a, "origin"_a);
  ck.def(
      "source_offset_json",
      [](nb::handle offset) {
        const auto o = offset_from_py(offset, "offset");
        if (!o) throw nb::type_error("offset must not be None");
        return checkpoint::source_offset_json(*o);
      },
      "offset"_a);
  ck.def(
      "generation_paths",
      [](const std::string& dir, const std::string& app_id, int generation,
         const std::optional<std::string>& metrics_path) {
        const auto p = checkpoint::generation_paths(dir, app_id, generation, metrics_path);
        nb::dict d;
        d["generation"] = p.generation;
        d["checkpoint"] = p.checkpoint;
        d["app_id"] = p.app_id;
        d["metrics_path"] = p.metrics_path;
        d["state_file"] = p.state_file;
        return d;
      },
      "checkpoint"_a, "app_id"_a, "generation"_a, "metrics_path"_a = nb::none());
  ck.def("in_family", &checkpoint::in_family, "row_app_id"_a, "app_id"_a, "generation"_a);
  ck.def(
      "plan_gc",
      [](int live_generation, int keep, const std::vector<std::pair<std::string, std::string>>& root,
         const std::vector<std::pair<std::string, std::string>>& generations) {
        return plan_to_py(checkpoint::plan_gc(
            {live_generation, keep, entries_from_py(root, "root"), entries_from_py(generations, "generations")}));
      },
      "live_generation"_a, "keep"_a, "root"_a, "generations"_a);
}

}  // namespace mssqlcdc::py
