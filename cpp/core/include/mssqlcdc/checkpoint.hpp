// checkpoint.hpp: reading what a Spark streaming checkpoint has processed, without Spark.
//
// Spark's offset log format v1 writes offsets/<n> as three lines: "v1", the batch metadata
// JSON, then one line per source (this library's streams have one: {"lsn", "commit_ts"}).
// commits/<n> marks batch n done. The last processed offset is line 3 of offsets/<n> for the
// highest n present in commits/: an offset without a commit is a batch Spark will replay.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "mssqlcdc/generation.hpp"

namespace mssqlcdc::checkpoint {

// The last batch Spark committed and the source offset it ended at.
struct LastOffset {
  std::int64_t batch_id = 0;  // the highest committed batch
  std::string source_json;    // line 3 of offsets/<batch_id>, exactly as Spark wrote it
  std::string file;           // the offsets file it came from, for messages
};

// The last committed batch of the Spark checkpoint `spark_dir`, or std::nullopt when commits/
// is missing or holds no batch. Only names made of ASCII digits count; ".0.crc", "*.tmp",
// hidden and other temporary files are ignored, and commit files' contents are not read.
// Throws Error(InvalidArgument) for a version line other than "v1", naming it and the file;
// Error(Corrupt) when the offsets file of the committed batch is missing, has no third line,
// or its third line is "-" (no offset for the source).
[[nodiscard]] std::optional<LastOffset> last_committed_offset(const std::filesystem::path& spark_dir);

// Whether Spark has ever started a query on `spark_dir` (it writes <dir>/metadata first). An
// unreadable folder counts as no; never throws.
[[nodiscard]] bool has_metadata(const std::filesystem::path& spark_dir);

// Reads this library's source offset, {"lsn": <canonical LSN>, "commit_ts": <time or "">}.
// Throws Error(Corrupt) naming `origin` for anything else.
[[nodiscard]] Offset parse_source_offset(std::string_view json_text, const std::string& origin);

// The offset's JSON as the source writes it: {"lsn": "0x...", "commit_ts": "..."}.
[[nodiscard]] std::string source_offset_json(const Offset& offset);

}  // namespace mssqlcdc::checkpoint
