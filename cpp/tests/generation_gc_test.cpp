#include "mssqlcdc/generation_gc.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mssqlcdc/error.hpp"

namespace mssqlcdc::checkpoint {
namespace {

std::vector<Entry> spark_root() {
  return {{"metadata", EntryKind::File},
          {".metadata.crc", EntryKind::File},
          {"offsets", EntryKind::Folder},
          {"commits", EntryKind::Folder},
          {"sources", EntryKind::Folder},
          {"_generations", EntryKind::Folder},
          {"_mssql_cdc_generation.json", EntryKind::File},
          {"_mssql_cdc_family_cache.json", EntryKind::File},
          {"notes.txt", EntryKind::File}};
}

std::vector<Entry> folders(std::initializer_list<const char*> names) {
  std::vector<Entry> out;
  for (const char* n : names) out.push_back({n, EntryKind::Folder});
  return out;
}

std::vector<std::string> removed_paths(const GcPlan& plan) {
  std::vector<std::string> out;
  for (const auto& r : plan.remove) out.push_back(std::to_string(r.generation) + ":" + r.path);
  return out;
}

TEST(GcPlan, RemovesEveryGenerationBeforeTheLiveOneWithItsSparkFilesOnly) {
  const auto plan = plan_gc({3, 1, spark_root(), folders({"1", "2", "3"})});
  EXPECT_EQ(removed_paths(plan), (std::vector<std::string>{"0:.metadata.crc", "0:commits", "0:metadata", "0:offsets",
                                                           "0:sources", "1:_generations/1", "2:_generations/2"}));
  EXPECT_EQ(plan.kept, std::vector<int>{3});
  EXPECT_TRUE(plan.left.empty());
}

TEST(GcPlan, KeepsTheNewestGenerationsItIsAskedToKeep) {
  const auto plan = plan_gc({3, 3, spark_root(), folders({"1", "2", "3"})});
  EXPECT_EQ(removed_paths(plan),
            (std::vector<std::string>{"0:.metadata.crc", "0:commits", "0:metadata", "0:offsets", "0:sources"}));
  EXPECT_EQ(plan.kept, (std::vector<int>{1, 2, 3}));
  const auto all = plan_gc({3, 4, spark_root(), folders({"1", "2", "3"})});
  EXPECT_TRUE(all.remove.empty());
  EXPECT_EQ(all.kept, (std::vector<int>{0, 1, 2, 3}));
}

TEST(GcPlan, RemovesNothingWhileGenerationZeroIsLive) {
  const auto plan = plan_gc({0, 1, spark_root(), {}});
  EXPECT_TRUE(plan.remove.empty());
  EXPECT_EQ(plan.kept, std::vector<int>{0});
}

TEST(GcPlan, LeavesLinksStrangersFilesAndNewerGenerationsAlone) {
  std::vector<Entry> root = {{"offsets", EntryKind::Link}, {"commits", EntryKind::Folder}};
  std::vector<Entry> gens = {{"1", EntryKind::Link},   {"01", EntryKind::Folder},         {"x", EntryKind::Folder},
                             {"2", EntryKind::File},   {"-1", EntryKind::Folder},         {"0", EntryKind::Folder},
                             {"5", EntryKind::Folder}, {"9999999999", EntryKind::Folder}, {"4", EntryKind::Folder}};
  const auto plan = plan_gc({4, 1, root, gens});
  EXPECT_EQ(removed_paths(plan), (std::vector<std::string>{"0:commits"}));
  std::vector<std::string> left;
  for (const auto& l : plan.left) left.push_back(l.path);
  EXPECT_EQ(left, (std::vector<std::string>{"_generations/-1", "_generations/0", "_generations/01", "_generations/1",
                                            "_generations/2", "_generations/5", "_generations/9999999999",
                                            "_generations/x", "offsets"}));
  EXPECT_EQ(plan.kept, std::vector<int>{4});
  for (const auto& l : plan.left) {
    if (l.path == "_generations/5") {
      EXPECT_NE(l.why.find("newer than the live generation 4"), std::string::npos);
    } else if (l.path == "offsets") {
      EXPECT_NE(l.why.find("symbolic link"), std::string::npos);
    }
  }
}

TEST(GcPlan, RefusesToKeepNoGeneration) {
  try {
    (void)plan_gc({2, 0, {}, {}});
    FAIL() << "keep 0 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("keep at least 1"), std::string::npos);
  }
  EXPECT_THROW((void)plan_gc({-1, 1, {}, {}}), Error);
}

}  // namespace
}  // namespace mssqlcdc::checkpoint
