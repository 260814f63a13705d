#include "mssqlcdc/generation.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mssqlcdc/error.hpp"
#include "temp_dir.hpp"

namespace mssqlcdc::checkpoint {
namespace {

using testing::read_file;
using testing::TempDir;
using testing::write_file;

State generation_two() {
  State s;
  s.generation = 2;
  s.snapshot = Offset{Lsn::parse("0x00000031000002A80004"), "2026-11-02T08:15:04.250"};
  s.at = "2026-11-09T06:00:12+00:00";
  return s;
}

std::string corrupt_message(const std::filesystem::path& checkpoint) {
  try {
    (void)read_state(checkpoint);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Corrupt);
    return e.what();
  }
  ADD_FAILURE() << "the state file was accepted";
  return "";
}

TEST(StateFile, IsAbsentForAStreamThatNeverRecovered) {
  TempDir dir;
  EXPECT_FALSE(read_state(dir.path()));
  EXPECT_FALSE(read_state(dir.path() / "not-created-yet"));
}

TEST(StateFile, WritesTheDocumentedKeysInOrderAndReadsThemBack) {
  TempDir dir;
  write_state(dir.path(), generation_two());
  EXPECT_EQ(read_file(dir.path() / kStateFileName),
            R"({"generation":2,"snapshot_lsn":"0x00000031000002A80004","commit_ts":"2026-11-02T08:15:04.250",)"
            R"("at":"2026-11-09T06:00:12+00:00"})"
            "\n");
  EXPECT_EQ(read_state(dir.path()), generation_two());
}

TEST(StateFile, RoundTripsAnOpenRecoveryAndAFailedAttemptInGenerationZero) {
  TempDir dir;
  State s;
  s.recovering = Offset{Lsn::parse("0x2A"), ""};
  s.failed_at = "2026-10-01T02:00:00+00:00";
  write_state(dir.path() / "new" / "ckpt", s);  // creates the folder
  EXPECT_EQ(read_file(dir.path() / "new" / "ckpt" / kStateFileName),
            R"({"generation":0,"recovering":{"lsn":"0x0000000000000000002A","commit_ts":""},)"
            R"("failed_at":"2026-10-01T02:00:00+00:00"})"
            "\n");
  EXPECT_EQ(read_state(dir.path() / "new" / "ckpt"), s);
}

TEST(StateFile, ReplacesTheOldContentAndLeavesNoTemporaryFileBehind) {
  TempDir dir;
  State zero;
  zero.recovering = Offset{Lsn::parse("0x10"), "2026-09-28T14:03:12.117"};
  write_state(dir.path(), zero);
  write_state(dir.path(), generation_two());
  EXPECT_EQ(read_state(dir.path()), generation_two());
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{kStateFileName});
}

TEST(StateFile, IgnoresALeftoverTemporaryFileOfAnInterruptedWrite) {
  TempDir dir;
  write_state(dir.path(), generation_two());
  write_file(dir.path() / (std::string(kStateFileName) + ".0123456789abcdef.tmp"), R"({"generation":)");
  EXPECT_EQ(read_state(dir.path()), generation_two());
  State three = generation_two();
  three.generation = 3;
  write_state(dir.path(), three);
  EXPECT_EQ(read_state(dir.path())->generation, 3);
}

TEST(StateFile, IgnoresUnknownKeysAndDoesNotWriteThemBack) {
  TempDir dir;
  write_file(dir.path() / kStateFileName, R"({"generation": 0, "note": "hand edit"})");
  const auto s = read_state(dir.path());
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, State{});
  write_state(dir.path(), *s);
  EXPECT_EQ(read_file(dir.path() / kStateFileName), "{\"generation\":0}\n");
}

TEST(StateFile, RefusesEveryDefectNamingTheFileAndTheRepair) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not valid JSON"},
      {R"({"generation": 1, "snapshot_lsn": "0x1", "comm)", "not valid JSON"},  // truncated write
      {"[1]", "not a JSON object"},
      {"{}", "no \"generation\""},
      {R"({"generation": "1"})", "not a non-negative integer"},
      {R"({"generation": -1})", "not a non-negative integer"},
      {R"({"generation": 1.5})", "not a non-negative integer"},
      {R"({"generation": 1})", "no \"snapshot_lsn\""},
      {R"({"generation": 1, "snapshot_lsn": "0x00000031000002A80004", "at": "2026-11-09T06:00:12+00:00"})",
       "no \"commit_ts\""},
      {R"({"generation": 1, "snapshot_lsn": "0x00000031000002A80004", "commit_ts": ""})", "no \"at\""},
      {R"({"generation": 1, "snapshot_lsn": "nope", "commit_ts": "", "at": "2026-11-09T06:00:12+00:00"})",
       "not an LSN"},
      {R"({"generation": 1, "snapshot_lsn": "0x12", "commit_ts": "", "at": "2026-11-09T06:00:12+00:00"})",
       "\"0x12\" is not an LSN (0x + 20 hex digits)"},
      {R"({"generation": 1, "snapshot_lsn": "00000031000002A80004", "commit_ts": "",)"
       R"( "at": "2026-11-09T06:00:12+00:00"})",
       "is not an LSN"},
      {R"({"generation": 0, "recovering": {"lsn": "0x1", "commit_ts": ""}})", "is not an LSN"},
      {R"({"generation": 0, "recovering": {"lsn": "0x00000031000002A80004"}})", "needs \"lsn\" and \"commit_ts\""},
      {R"({"generation": 1, "snapshot_lsn": "0x00000031000002A80004", "commit_ts": "x", "at": "2026-11-09T06:00:12+00:00"})",
       "not a commit time"},
      {R"({"generation": 1, "snapshot_lsn": "0x00000031000002A80004", "commit_ts": "", "at": "2026-11-09"})",
       "not a UTC time"},
      {R"({"generation": 0, "snapshot_lsn": "0x1"})", "generation 0 has"},
      {R"({"generation": 0, "recovering": "0x1"})", "expected an offset object"},
      {R"({"generation": 0, "recovering": {"lsn": "0x1"}})", "needs \"lsn\" and \"commit_ts\""},
      {R"({"generation": 0, "failed_at": 5})", "expected a string"},
  };
  for (const auto& [body, defect] : cases) {
    TempDir dir;
    write_file(dir.path() / kStateFileName, body);
    const std::string m = corrupt_message(dir.path());
    EXPECT_NE(m.find((dir.path() / kStateFileName).string()), std::string::npos) << m;
    EXPECT_NE(m.find(defect), std::string::npos) << body << " -> " << m;
    EXPECT_NE(m.find("restore the file or correct it by hand"), std::string::npos) << m;
  }
}

TEST(StateFile, RefusesToWriteAStateItsGenerationCannotUse) {
  TempDir dir;
  State missing_snapshot;
  missing_snapshot.generation = 1;
  State zero_with_snapshot = generation_two();
  zero_with_snapshot.generation = 0;
  State bad_time = generation_two();
  bad_time.at = "yesterday";
  State negative;
  negative.generation = -1;
  for (const State& s : {missing_snapshot, zero_with_snapshot, bad_time, negative}) {
    try {
      write_state(dir.path(), s);
      FAIL() << "wrote an invalid state";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    }
  }
  EXPECT_FALSE(read_state(dir.path()));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(StateFile, ReportsAnUnwritableFolderAsAnIoError) {
  TempDir dir;
  write_file(dir.path() / "a-file", "x");
  try {
    write_state(dir.path() / "a-file", generation_two());
    FAIL() << "wrote below a regular file";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
  }
}

TEST(StateFile, ReportsAStateFileThatCannotBeReadAsAnIoErrorNotAsGenerationZero) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / kStateFileName);  // a folder where the file belongs
  try {
    (void)read_state(dir.path());
    FAIL() << "read a folder as a state";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io) << e.what();
    EXPECT_NE(std::string(e.what()).find(kStateFileName), std::string::npos) << e.what();
  }
}

std::vector<std::string> entries(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ReplaceState, WritesWhileTheFileStillHoldsWhatTheCallerRead) {
  TempDir dir;
  State recovering;
  recovering.recovering = Offset{Lsn::parse("0x0000002A000001F00004"), ""};
  EXPECT_TRUE(replace_state(dir.path(), State{}, recovering));  // no file reads as generation 0
  EXPECT_EQ(read_state(dir.path()), recovering);
  EXPECT_TRUE(replace_state(dir.path(), recovering, generation_two()));
  EXPECT_EQ(read_state(dir.path()), generation_two());
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{kStateFileName});  // no lock, no leftovers
}

TEST(ReplaceState, RefusesToWriteOverAStateAnotherRunMovedOn) {
  TempDir dir;
  write_state(dir.path(), generation_two());
  const std::string before = read_file(dir.path() / kStateFileName);
  State stale_view;  // read before the other run committed generation 2
  stale_view.recovering = Offset{Lsn::parse("0x0000002A000001F00004"), ""};
  EXPECT_FALSE(replace_state(dir.path(), State{}, stale_view));
  EXPECT_FALSE(replace_state(dir.path(), stale_view, State{}));
  EXPECT_EQ(read_file(dir.path() / kStateFileName), before);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{kStateFileName});  // no lock, no leftovers
}

TEST(ReplaceState, RefusesAnInvalidStateBeforeTouchingAnyFile) {
  TempDir dir;
  State missing_snapshot;
  missing_snapshot.generation = 1;
  EXPECT_THROW((void)replace_state(dir.path(), State{}, missing_snapshot), Error);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// The paths of `generation` under checkpoint /v/ckpt/orders (given as `checkpoint`) and app id
// orders-v1: the generation's checkpoint and app id as given, the default metrics path inside
// that checkpoint, and the state file always in the root.
void expect_orders_paths(const std::string& checkpoint, int generation, const std::string& generation_checkpoint,
                         const std::string& app_id) {
  const auto p = generation_paths(checkpoint, "orders-v1", generation);
  EXPECT_EQ(p.generation, generation);
  EXPECT_EQ(p.checkpoint, generation_checkpoint);
  EXPECT_EQ(p.app_id, app_id);
  EXPECT_EQ(p.metrics_path, generation_checkpoint + "/_mssql_cdc_metrics");
  EXPECT_EQ(p.state_file, "/v/ckpt/orders/_mssql_cdc_generation.json");
}

TEST(GenerationPaths, GenerationZeroIsTheCheckpointAndAppIdAsGiven) {
  expect_orders_paths("/v/ckpt/orders/", 0, "/v/ckpt/orders", "orders-v1");
}

TEST(GenerationPaths, GenerationNLivesUnderGenerationsWithADerivedAppId) {
  expect_orders_paths("/v/ckpt/orders", 12, "/v/ckpt/orders/_generations/12", "orders-v1.g12");
}

TEST(GenerationPaths, AnExplicitMetricsPathGetsTheSinkAppIdAppended) {
  EXPECT_EQ(generation_paths("/c", "a", 0, "/m/").metrics_path, "/m/a");
  EXPECT_EQ(generation_paths("/c", "a", 3, "/m").metrics_path, "/m/a.g3");
}

TEST(GenerationPaths, RefusesAnEmptyCheckpointOrAppIdAndANegativeGeneration) {
  EXPECT_THROW((void)generation_paths("", "a", 0), Error);
  EXPECT_THROW((void)generation_paths("/c", "", 0), Error);
  EXPECT_THROW((void)generation_paths("/c", "a", -1), Error);
}

TEST(InFamily, MatchesTheAppIdAndItsGenerationNamesByEqualityOnly) {
  EXPECT_TRUE(in_family("orders-v1", "orders-v1", 0));
  EXPECT_TRUE(in_family("orders-v1.g12", "orders-v1", 12));
  EXPECT_FALSE(in_family("orders-v1.g12", "orders-v1", 0));
  EXPECT_FALSE(in_family("orders-v1", "orders-v1", 1));
  EXPECT_FALSE(in_family("orders-v10", "orders-v1", 0));
  EXPECT_FALSE(in_family("orders-v1.g", "orders-v1", 0));
  EXPECT_FALSE(in_family("orders-v1x.g1", "orders-v1", 1));
  EXPECT_FALSE(in_family("orders-v1.g01", "orders-v1", 1));
}

}  // namespace
}  // namespace mssqlcdc::checkpoint
