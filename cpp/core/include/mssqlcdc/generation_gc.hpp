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

// What a listed entry is: a symbolic link is a Link whatever it points to.
enum class EntryKind { Folder, File, Link };

// One entry of the checkpoint's root or of its _generations folder, as listed (not followed).
struct Entry {
  std::string name;
  EntryKind kind = EntryKind::File;
};

// What plan_gc() decides from: the live generation, how many to keep, and the two listings.
struct GcInputs {
  int live_generation = 0;         // from the state file; 0 without one
  int keep = 1;                    // generations kept, the live one included; at least 1
  std::vector<Entry> root;         // the checkpoint's entries
  std::vector<Entry> generations;  // the entries of <checkpoint>/_generations, if any
};

// One entry to remove: a file or folder of an old generation.
struct GcRemoval {
  int generation = 0;   // the generation the entry belongs to
  std::string path;     // relative to the checkpoint, '/'-separated
  bool folder = false;  // remove recursively
};

// An entry the plan does not remove although it looks like a generation's, and why.
struct GcLeft {
  std::string path;  // relative to the checkpoint
  std::string why;   // one sentence for the user, e.g. that it is a symbolic link
};

// plan_gc()'s answer. Applying it removes exactly `remove`; nothing else is touched.
struct GcPlan {
  std::vector<GcRemoval> remove;  // by generation, then path
  std::vector<int> kept;          // generations kept, ascending
  std::vector<GcLeft> left;       // entries that look like a generation's but are left alone
};

// The names generation 0's Spark checkpoint and default metrics folder use in the root.
[[nodiscard]] const std::vector<std::string>& generation_zero_names();

// Plans what to remove so that the live generation and the `keep - 1` before it stay. Entries of
// generation 0 are the root entries named by generation_zero_names(); entries of generation n
// are _generations/<n>. Pure and thread-safe: no I/O. Throws Error(InvalidArgument) for
// keep < 1 or a negative live generation.
[[nodiscard]] GcPlan plan_gc(const GcInputs& in);

}  // namespace mssqlcdc::checkpoint
