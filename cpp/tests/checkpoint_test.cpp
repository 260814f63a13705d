#include "mssqlcdc/checkpoint.hpp"

#include <gtest/gtest.h>

#include "mssqlcdc/error.hpp"
#include "temp_dir.hpp"

namespace mssqlcdc::checkpoint {
namespace {

using testing::TempDir;
using testing::write_file;

constexpr const char* kMeta = R"({"batchWatermarkMs":0,"batchTimestampMs":1795950779067,"conf":{}})";

std::string offset_line(int i) {
  return "{\"lsn\": \"0x000000000000000000" + std::string(i < 16 ? "0" : "") + "0123456789ABCDEF"[i % 16] +
         "\", \"commit_ts\": \"2026-09-28T14:03:12.117\"}";
}

// Lays out a checkpoint as Spark 4.2 writes it: no newline after the last line, .crc siblings.
void spark_batch(const std::filesystem::path& dir, int n, bool committed, const std::string& source) {
  write_file(dir / "offsets" / std::to_string(n), "v1\n" + std::string(kMeta) + "\n" + source);
  write_file(dir / "offsets" / ("." + std::to_string(n) + ".crc"), "crc");
  if (committed) {
    write_file(dir / "commits" / std::to_string(n), "v1\n{\"nextBatchWatermarkMs\":0}");
    write_file(dir / "commits" / ("." + std::to_string(n) + ".crc"), "crc");
  }
}

TEST(LastCommittedOffset, IsNoneForACheckpointWithoutCommits) {
  TempDir dir;
  EXPECT_FALSE(last_committed_offset(dir.path()));
  spark_batch(dir.path(), 0, false, offset_line(0));
  std::filesystem::create_directories(dir.path() / "commits");
  EXPECT_FALSE(last_committed_offset(dir.path()));
  EXPECT_FALSE(last_committed_offset(dir.path() / "does-not-exist"));
}

TEST(LastCommittedOffset, ReturnsLineThreeOfTheHighestCommittedBatchExactly) {
  TempDir dir;
  for (int n = 0; n <= 11; ++n) spark_batch(dir.path(), n, true, offset_line(n));
  const auto last = last_committed_offset(dir.path());
  ASSERT_TRUE(last);
  EXPECT_EQ(last->batch_id, 11);  // numeric, not text order: "11" > "9"
  EXPECT_EQ(last->source_json, offset_line(11));
  EXPECT_EQ(last->file, (dir.path() / "offsets" / "11").string());
}

TEST(LastCommittedOffset, IgnoresAnOffsetWithoutACommitBecauseSparkReplaysIt) {
  TempDir dir;
  spark_batch(dir.path(), 0, true, offset_line(0));
  spark_batch(dir.path(), 1, true, offset_line(1));
  spark_batch(dir.path(), 2, false, offset_line(2));
  EXPECT_EQ(last_committed_offset(dir.path())->batch_id, 1);
  EXPECT_EQ(last_committed_offset(dir.path())->source_json, offset_line(1));
}

TEST(LastCommittedOffset, IgnoresCrcTemporaryHiddenAndOtherNonBatchNames) {
  TempDir dir;
  spark_batch(dir.path(), 3, true, offset_line(3));
  for (const char* name : {".9.crc", "9.tmp", ".9.3f1c.tmp", "9~", "x9", "9.0", "-9", ".9"}) {
    write_file(dir.path() / "commits" / name, "v1\n{}");
  }
  EXPECT_EQ(last_committed_offset(dir.path())->batch_id, 3);
}

TEST(LastCommittedOffset, KeepsALineThreeThatEndsWithANewlineOrHasMoreSourcesAfterIt) {
  TempDir dir;
  spark_batch(dir.path(), 0, true, offset_line(0) + "\n" + offset_line(1) + "\n");
  EXPECT_EQ(last_committed_offset(dir.path())->source_json, offset_line(0));
}

TEST(LastCommittedOffset, RefusesAnotherOffsetLogVersionNamingItAndTheFile) {
  TempDir dir;
  spark_batch(dir.path(), 0, true, offset_line(0));
  write_file(dir.path() / "offsets" / "0", "v2\n{}\n" + offset_line(0));
  try {
    (void)last_committed_offset(dir.path());
    FAIL() << "accepted v2";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    const std::string m = e.what();
    EXPECT_NE(m.find("offset log version 'v2'"), std::string::npos) << m;
    EXPECT_NE(m.find((dir.path() / "offsets" / "0").string()), std::string::npos) << m;
    EXPECT_NE(m.find("on_data_loss='fail'"), std::string::npos) << m;
  }
}

TEST(LastCommittedOffset, CallsAMissingTruncatedOrEmptyOffsetFileACorruptCheckpoint) {
  const std::vector<std::string> bodies = {"", "v1\n", "v1\n{}", "v1\n{}\n", "v1\n{}\n-", "garbage\n{}\n{}"};
  for (const auto& body : bodies) {
    TempDir dir;
    spark_batch(dir.path(), 0, true, offset_line(0));
    write_file(dir.path() / "offsets" / "0", body);
    try {
      (void)last_committed_offset(dir.path());
      FAIL() << "accepted: " << body;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Corrupt) << body;
      EXPECT_NE(std::string(e.what()).find("corrupt checkpoint"), std::string::npos) << e.what();
    }
  }
  TempDir missing;
  write_file(missing.path() / "commits" / "4", "v1\n{}");
  EXPECT_THROW((void)last_committed_offset(missing.path()), Error);
}

TEST(HasMetadata, TellsWhetherSparkEverStartedOnTheFolder) {
  TempDir dir;
  EXPECT_FALSE(has_metadata(dir.path()));
  write_file(dir.path() / "metadata", R"({"id":"635daf2f"})");
  EXPECT_TRUE(has_metadata(dir.path()));
}

TEST(SourceOffset, ReadsTheSourcesJsonAndWritesItBackWithJsonDumpsSpacing) {
  const std::string line = R"({"lsn": "0x0000002A000001F00003", "commit_ts": "2026-09-28T14:03:12.117"})";
  const Offset o = parse_source_offset(line, "f");
  EXPECT_EQ(o.lsn.to_string(), "0x0000002A000001F00003");
  EXPECT_EQ(o.commit_ts, "2026-09-28T14:03:12.117");
  EXPECT_EQ(source_offset_json(o), line);
  EXPECT_EQ(parse_source_offset(R"({"lsn":"0x2A","commit_ts":""})", "f").commit_ts, "");
}

TEST(SourceOffset, RefusesAnythingButTheTwoDocumentedKeys) {
  for (const char* bad :
       {"0", "[]", R"({"lsn": "0x1"})", R"({"lsn": "0x1", "commit_ts": "", "x": 1})", R"({"lsn": 1, "commit_ts": ""})",
        R"({"lsn": "zz", "commit_ts": ""})", R"({"lsn": "0x1", "commit_ts": "yesterday"})", "{"}) {
    try {
      (void)parse_source_offset(bad, "offsets/7");
      FAIL() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Corrupt);
      EXPECT_NE(std::string(e.what()).find("offsets/7"), std::string::npos);
    }
  }
}

TEST(SourceOffset, QuotesAJunkLineOnlyInPartNamingItsLength) {
  const std::string junk = "{\"lsn\": \"" + std::string(1'000'000, 'z') + "\"}";
  try {
    (void)parse_source_offset(junk, "offsets/7");
    FAIL() << "accepted a junk line";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_LT(m.size(), 600U) << m.substr(0, 600);
    EXPECT_NE(m.find(junk.substr(0, 80) + "...(" + std::to_string(junk.size()) + " bytes)"), std::string::npos) << m;
  }
}

TEST(LastCommittedOffset, QuotesAJunkVersionLineOnlyInPart) {
  TempDir dir;
  spark_batch(dir.path(), 0, true, offset_line(0));
  write_file(dir.path() / "offsets" / "0", "v" + std::string(100'000, '7') + "\n{}\n" + offset_line(0));
  try {
    (void)last_committed_offset(dir.path());
    FAIL() << "accepted a junk version";
  } catch (const Error& e) {
    EXPECT_LT(std::string(e.what()).size(), 800U);
    EXPECT_NE(std::string(e.what()).find("...(100001 bytes)"), std::string::npos);
  }
}

}  // namespace
}  // namespace mssqlcdc::checkpoint
