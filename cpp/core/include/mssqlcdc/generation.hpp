// generation.hpp: which checkpoint generation of a stream is live, stored in
// <checkpoint>/_mssql_cdc_generation.json, and the names derived from it.
//
// The file is the recovery's commit point, so it is read strictly and written atomically:
//   {"generation": 2, "snapshot_lsn": "0x00000031000002A80004",
//    "commit_ts": "2026-11-02T08:15:04.250", "at": "2026-11-09T06:00:12+00:00"}
// plus, while a recovery is open, "recovering": {"lsn", "commit_ts"} (the offset the stream had
// reached) and, after a failed attempt, "failed_at" (an instant). Generation 0 holds only
// "generation" and those two. No file means generation 0: the caller's checkpoint and app_id.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "mssqlcdc/json.hpp"
#include "mssqlcdc/lsn.hpp"

namespace mssqlcdc {

// A stream position: the last LSN processed and its UTC commit time ("" when unknown).
struct Offset {
  Lsn lsn;
  std::string commit_ts;
  bool operator==(const Offset&) const = default;
};

// The content of the state file: the live generation, where it starts and any open recovery.
// validate_state() says which combinations may be stored.
struct State {
  int generation = 0;
  std::optional<Offset> snapshot;        // where generation > 0 starts; absent in generation 0
  std::optional<std::string> at;         // when generation > 0 was made live; absent in 0
  std::optional<Offset> recovering;      // an open recovery resumes from here
  std::optional<std::string> failed_at;  // the last attempt whose own snapshot was purged
  bool operator==(const State&) const = default;
};

namespace checkpoint {

// The state file's name inside the root checkpoint.
inline constexpr const char* kStateFileName = "_mssql_cdc_generation.json";

// The state as a JSON object, keys in the documented order; only the documented keys.
// Throws Error(InvalidArgument) for a state that must not be stored (see validate_state).
[[nodiscard]] json::Value state_to_json(const State& state);

// Reads a parsed document. Throws Error(Corrupt) naming `origin` and the defect.
[[nodiscard]] State state_from_json(const json::Value& doc, const std::string& origin);

// Throws Error(InvalidArgument) when a state is incomplete for its generation: a negative
// generation, generation > 0 without snapshot or at, generation 0 with either, or a time or
// commit time that is not in its documented form.
void validate_state(const State& state);

// std::nullopt when the file does not exist (generation 0). Content that is not a valid state
// (not JSON, wrong types, missing fields, a key it does not know, an LSN not written in full)
// throws Error(Corrupt) naming the file and the defect
// and saying how to repair it; a file that exists but cannot be read throws Error(Io). Never a
// silent generation 0. Leftover temporary files of an interrupted write are ignored.
[[nodiscard]] std::optional<State> read_state(const std::filesystem::path& checkpoint);

// Atomic replace: creates <checkpoint> if missing, writes the JSON to a temporary file in the
// same folder, fsyncs it, renames it over the state file and fsyncs the folder (an fsync error
// on the folder, as some FUSE mounts give, is ignored). Readers see the old or the new content.
// Throws Error(InvalidArgument) for an invalid state, Error(Io) when the write fails, after
// removing its temporary file.
void write_state(const std::filesystem::path& checkpoint, const State& state);

// Compare-and-set without a lock file (decision 0615 says why there is none): reads the file
// again and writes `next` (as write_state does) only while it still holds `expected` (no file
// equals State{}, generation 0). Returns false, writing nothing, when another run changed the
// state since the caller read it: the caller reads again and decides again. Only two writes
// within the moment between that read and the rename can both pass; either is a valid start.
// Throws as write_state does, and Error(Corrupt) for an invalid file.
[[nodiscard]] bool replace_state(const std::filesystem::path& checkpoint, const State& expected, const State& next);

// The names of one generation. Generation 0: the checkpoint and app_id as given; n > 0:
// <checkpoint>/_generations/<n> and <app_id>.g<n>. Metrics default to
// <live checkpoint>/_mssql_cdc_metrics; an explicit metrics path becomes <path>/<sink app id>.
struct GenerationPaths {
  int generation = 0;
  std::string checkpoint;    // the Spark checkpoint of this generation
  std::string app_id;        // the sink's txnAppId and facts app_id; also the query name
  std::string metrics_path;  // where the source leaves metrics and event files
  std::string state_file;    // <root checkpoint>/_mssql_cdc_generation.json
  bool operator==(const GenerationPaths&) const = default;
};

// The paths and names of `generation` of the stream at `checkpoint` with `app_id`. Throws
// Error(InvalidArgument) for an empty checkpoint or app_id or a negative generation.
// Trailing slashes of the paths are dropped; no other normalisation happens here.
[[nodiscard]] GenerationPaths generation_paths(const std::string& checkpoint, const std::string& app_id, int generation,
                                               const std::optional<std::string>& metrics_path = {});

// Whether a facts row (app_id `a`, generation `generation`) belongs to the stream of `app_id`:
// equality with app_id (generation 0) or app_id + ".g<n>" (n > 0), never a pattern.
[[nodiscard]] bool in_family(const std::string& a, const std::string& app_id, int generation);

}  // namespace checkpoint
}  // namespace mssqlcdc
