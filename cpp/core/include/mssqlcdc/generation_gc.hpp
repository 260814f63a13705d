// generation_gc.hpp: what `mssql-cdc gc` may remove of a stream's checkpoint (issue 20).
//
// Generation 0 runs in the checkpoint's root, generation n > 0 in <checkpoint>/_generations/<n>
// (generation.hpp). Once generation n is live, the earlier generations' Spark files are never
// read again (the recovery leaves them in place, unread). The plan keeps the live generation and the
// `keep - 1` before it and names the rest; it never names the state file, the family cache,
// _generations itself, a generation newer than the live one, a symbolic link, or a file it does
// not know. Pure: the caller lists the folders and acts on the plan.
#pragma once

#include <string>
#include <vector>

namespace mssqlcdc::checkpoint {

enum class EntryKind { Folder, File, Link };

// One entry of the checkpoint's root or of its _generations folder, as listed (not followed).
struct Entry {
  std::string name;
  EntryKind kind = EntryKind::File;
};

struct GcInputs {
  int live_generation = 0;         // from the state file; 0 without one
  int keep = 1;                    // generations kept, the live one included; at least 1
  std::vector<Entry> root;         // the checkpoint's entries
  std::vector<Entry> generations;  // the entries of <checkpoint>/_generations, if any
};

struct GcRemoval {
  int generation = 0;
  std::string path;  // relative to the checkpoint, '/'-separated
  bool folder = false;
};

struct GcLeft {
  std::string path;  // relative to the checkpoint
  std::string why;
};

struct GcPlan {
  std::vector<GcRemoval> remove;  // by generation, then path
  std::vector<int> kept;          // generations kept, ascending
  std::vector<GcLeft> left;       // entries that look like a generation's but are left alone
};

// The names generation 0's Spark checkpoint and default metrics folder use in the root.
[[nodiscard]] const std::vector<std::string>& generation_zero_names();

// Throws Error(InvalidArgument) for keep < 1 or a negative live generation.
[[nodiscard]] GcPlan plan_gc(const GcInputs& in);

}  // namespace mssqlcdc::checkpoint
