#include "mssqlcdc/generation_gc.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include "mssqlcdc/error.hpp"

namespace mssqlcdc::checkpoint {
namespace {

// A generation folder's name is the decimal number the library wrote: no sign, no leading
// zero, not 0 (generation 0 is the root). Anything else is somebody else's.
std::optional<int> generation_number(const std::string& name) {
  if (name.empty() || name.size() > 9 || name.front() == '0') return std::nullopt;
  int value = 0;
  const auto* end = name.data() + name.size();
  const auto [ptr, ec] = std::from_chars(name.data(), end, value);
  if (ec != std::errc{} || ptr != end || value <= 0) return std::nullopt;
  return value;
}

bool removable(int generation, const GcInputs& in) { return generation <= in.live_generation - in.keep; }

}  // namespace

const std::vector<std::string>& generation_zero_names() {
  static const std::vector<std::string> names = {
      ".metadata.crc", "_mssql_cdc_metrics", "commits", "metadata", "offsets", "sources", "state"};
  return names;
}

GcPlan plan_gc(const GcInputs& in) {
  if (in.keep < 1) {
    throw Error(ErrorKind::InvalidArgument,
                "keep is " + std::to_string(in.keep) + "; keep at least 1 generation (the live one)");
  }
  if (in.live_generation < 0) {
    throw Error(ErrorKind::InvalidArgument, "live generation " + std::to_string(in.live_generation) + " is negative");
  }
  GcPlan plan;
  std::vector<int> kept;
  bool zero_kept = false;
  const auto& zero = generation_zero_names();
  for (const auto& e : in.root) {
    if (std::find(zero.begin(), zero.end(), e.name) == zero.end()) continue;
    if (e.kind == EntryKind::Link) {
      plan.left.push_back({e.name, "a symbolic link; remove it by hand if generation 0 is no longer needed"});
    } else if (removable(0, in)) {
      plan.remove.push_back({0, e.name, e.kind == EntryKind::Folder});
    } else {
      zero_kept = true;
    }
  }
  if (zero_kept) kept.push_back(0);
  for (const auto& e : in.generations) {
    const std::string path = "_generations/" + e.name;
    const auto n = generation_number(e.name);
    if (!n) {
      plan.left.push_back({path, "not a generation folder the library made"});
    } else if (e.kind != EntryKind::Folder) {
      plan.left.push_back(
          {path, e.kind == EntryKind::Link ? "a symbolic link, never followed" : "a file, not a folder"});
    } else if (*n > in.live_generation) {
      plan.left.push_back({path, "newer than the live generation " + std::to_string(in.live_generation) +
                                     " (a recovery may be starting it)"});
    } else if (removable(*n, in)) {
      plan.remove.push_back({*n, path, true});
    } else {
      kept.push_back(*n);
    }
  }
  std::sort(plan.remove.begin(), plan.remove.end(), [](const GcRemoval& a, const GcRemoval& b) {
    return a.generation != b.generation ? a.generation < b.generation : a.path < b.path;
  });
  std::sort(plan.left.begin(), plan.left.end(), [](const GcLeft& a, const GcLeft& b) { return a.path < b.path; });
  std::sort(kept.begin(), kept.end());
  plan.kept = std::move(kept);
  return plan;
}

}  // namespace mssqlcdc::checkpoint
