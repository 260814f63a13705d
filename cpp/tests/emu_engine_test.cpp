#include <gtest/gtest.h>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {
namespace {

struct ChangeRow {
  Lsn start;
  Lsn seqval;
  Operation op;
  int command_id;
  std::string mask;
};

std::vector<ChangeRow> change_rows(Engine& e, const std::string& ci) {
  std::vector<ChangeRow> out;
  auto st = e.db().prepare(
      "SELECT \"__$start_lsn\", \"__$seqval\", \"__$operation\", \"__$command_id\", \"__$update_mask\" FROM " +
      quote_ident("cdc." + ci + "_CT") + " ORDER BY 1, 4, 2, 3");
  while (st.step())
    out.push_back({lsn_from_blob(st.blob(0)), lsn_from_blob(st.blob(1)), static_cast<Operation>(st.i64(2)),
                   static_cast<int>(st.i64(3)), st.blob(4)});
  return out;
}

TEST(EmuEngine, FirstCommitTakesTheDocumentedLsnsAndLaterCommitsRise) {
  TempFile f;
  auto e = orders_file(f.path());
  // enable took 0x27:0x20:1 (begin) and :2 (commit), then the log flushed to block 0x21.
  const Lsn c1 = e->commit({insert("dbo.orders", {{"order_id", I(1)}, {"status", S("new")}})}, kStart + kSecond);
  EXPECT_EQ(c1.to_string(), "0x00000027000000210003");  // begin :1, row :2, commit :3
  const Lsn c2 = e->commit({insert("dbo.orders", {{"order_id", I(2)}})}, kStart + 2 * kSecond);
  EXPECT_EQ(c2.to_string(), "0x00000027000000220003");
  EXPECT_EQ(e->max_lsn(), c2);
}

TEST(EmuEngine, UpdateWritesOperationsThreeAndFourWithOneSeqvalAndTheSetListMask) {
  TempFile f;
  auto e = orders_file(f.path());
  e->commit({insert("dbo.orders", {{"order_id", I(1)}, {"status", S("new")}, {"amount", D("1.5")}})}, kStart + kSecond);
  const Lsn c = e->commit({update("dbo.orders", {{"order_id", I(1)}, {"amount", D("2")}})}, kStart + 2 * kSecond);
  const auto rows = change_rows(*e, "dbo_orders");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].op, Operation::UpdateBefore);
  EXPECT_EQ(rows[2].op, Operation::UpdateAfter);
  EXPECT_EQ(rows[1].start, c);
  EXPECT_EQ(rows[1].seqval, rows[2].seqval);
  EXPECT_LT(rows[1].seqval, c);
  EXPECT_EQ(rows[1].mask, std::string(1, '\x04'));  // amount is ordinal 3
  EXPECT_EQ(rows[0].mask, std::string(1, '\x07'));  // an insert marks every captured column
}

TEST(EmuEngine, KeyUpdateWritesDeleteThenInsertWithConsecutiveCommandIds) {
  TempFile f;
  auto e = orders_file(f.path());
  e->commit({insert("dbo.orders", {{"order_id", I(1)}, {"status", S("a")}})}, kStart + kSecond);
  e->commit({key_update("dbo.orders", {{"order_id", I(9)}}, {{"order_id", I(1)}})}, kStart + 2 * kSecond);
  const auto rows = change_rows(*e, "dbo_orders");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].op, Operation::Delete);
  EXPECT_EQ(rows[2].op, Operation::Insert);
  EXPECT_EQ(rows[1].command_id, 1);
  EXPECT_EQ(rows[2].command_id, 2);
  EXPECT_EQ(rows[1].seqval, rows[2].seqval);
}

TEST(EmuEngine, AFailedTransactionChangesNothingAndConsumesNoLsn) {
  TempFile f;
  auto e = orders_file(f.path());
  e->commit({insert("dbo.orders", {{"order_id", I(1)}})}, kStart + kSecond);
  const auto before = e->max_lsn();
  try {
    e->commit({insert("dbo.orders", {{"order_id", I(2)}}), insert("dbo.orders", {{"order_id", I(1)}})},
              kStart + 2 * kSecond);
    FAIL() << "a duplicate key must raise";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::EmuConstraint);
    EXPECT_EQ(err.number(), 2627);
  }
  const Lsn next = e->commit({insert("dbo.orders", {{"order_id", I(3)}})}, kStart + 3 * kSecond);
  EXPECT_EQ(next.to_string(), "0x00000027000000220003");  // the failed one left no gap
  EXPECT_NE(before, e->max_lsn());
}

TEST(EmuEngine, TimeGoingBackwardsIsAClockError) {
  TempFile f;
  auto e = orders_file(f.path());
  e->commit({insert("dbo.orders", {{"order_id", I(1)}})}, kStart + 10 * kSecond);
  try {
    e->commit({insert("dbo.orders", {{"order_id", I(2)}})}, kStart + 5 * kSecond);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::EmuClock);
  }
}

TEST(EmuEngine, CleanupDeletesRowsStrictlyBelowTheMarkAndPrunesTheMapping) {
  TempFile f;
  auto e = orders_file(f.path());
  std::vector<Lsn> commits;
  for (int i = 1; i <= 4; ++i)
    commits.push_back(e->commit({insert("dbo.orders", {{"order_id", I(i)}})}, kStart + i * kSecond));
  e->cleanup("dbo_orders", commits[2]);
  const auto rows = change_rows(*e, "dbo_orders");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].start, commits[2]);
  Reader r(f.path());
  EXPECT_EQ(r.min_lsn("dbo_orders").lsn, commits[2]);
  EXPECT_EQ(r.lsn_time_mapping().size(), 2u);
  EXPECT_FALSE(r.lsn_to_time(commits[1]).has_value());
}

TEST(EmuEngine, CleanupJobKeepsTheRetentionCountedFromTheNewestEntry) {
  TempFile f;
  auto e = orders_file(f.path());
  std::vector<Lsn> commits;
  for (int i = 0; i < 5; ++i)
    commits.push_back(e->commit({insert("dbo.orders", {{"order_id", I(i)}})}, kStart + i * 60 * kSecond));
  e->run_cleanup_job(2);  // newest at minute 4: T = minute 2, at_or_before picks the commit at minute 2
  Reader r(f.path());
  EXPECT_EQ(r.min_lsn("dbo_orders").lsn, commits[2]);
  EXPECT_EQ(change_rows(*e, "dbo_orders").size(), 3u);
}

TEST(EmuEngine, ManualModeCapturesAtMostMaxtransPerCycle) {
  TempFile f;
  auto e = orders_file(f.path(), "manual");
  e->configure("maxtrans", "2");
  for (int i = 0; i < 5; ++i) e->commit({insert("dbo.orders", {{"order_id", I(i)}})}, kStart + (i + 1) * kSecond);
  EXPECT_FALSE(e->max_lsn().has_value());
  EXPECT_EQ(e->pending_capture(), 5);
  e->capture();
  EXPECT_EQ(change_rows(*e, "dbo_orders").size(), 2u);
  e->drain();
  EXPECT_EQ(change_rows(*e, "dbo_orders").size(), 5u);
  EXPECT_EQ(e->pending_capture(), 0);
}

TEST(EmuEngine, AManualEnableIsEstablishedOnlyWhenACaptureCyclePassesIt) {
  TempFile f;
  auto e = orders_file(f.path(), "manual");
  Reader r(f.path());
  EXPECT_FALSE(r.resolve_instance("dbo_orders").established);
  EXPECT_EQ(r.min_lsn("dbo_orders").state, MinLsn::State::NotEstablished);
  EXPECT_EQ(e->pending_capture(), 0);  // an enable is no transaction
  e->configure("maxtrans", "1");
  e->drain();  // the enable alone in the log: one cycle reads to the end and passes it
  EXPECT_TRUE(r.resolve_instance("dbo_orders").established);
  const Lsn below = e->commit({insert("dbo.orders", {{"order_id", I(1)}})}, kStart + kSecond);
  e->enable_cdc("dbo.orders", std::string("dbo_orders_v2"), std::nullopt);
  e->commit({insert("dbo.orders", {{"order_id", I(2)}})}, kStart + 2 * kSecond);
  EXPECT_EQ(e->capture(), below);  // a full cycle that stops below the enable point
  const InstanceInfo v2 = r.resolve_instance("dbo_orders_v2");
  EXPECT_FALSE(v2.established);
  EXPECT_EQ(v2.start_lsn, v2.create_lsn);  // the mark is stored from the enable on
  e->drain();
  EXPECT_TRUE(r.resolve_instance("dbo_orders_v2").established);
}

TEST(EmuEngine, AnImmediateEnableIsEstablishedAtOnceAndADisabledPendingOneLeavesNoRecord) {
  TempFile f;
  auto e = orders_file(f.path());
  EXPECT_TRUE(Reader(f.path()).resolve_instance("dbo_orders").established);
  e->configure("capture", "manual");
  e->enable_cdc("dbo.orders", std::string("dbo_orders_v2"), std::nullopt);
  e->disable_cdc("dbo_orders_v2");
  auto st = e->db().prepare("SELECT count(*) FROM emu_log");
  st.step();
  EXPECT_EQ(st.i64(0), 0);
}

TEST(EmuEngine, OpenFailsClearlyOnANonEmulatorFile) {
  TempFile f;
  {
    std::FILE* fp = std::fopen(f.path().c_str(), "w");
    std::fputs("hello, not sqlite at all, just text that is long enough to be a header...........", fp);
    std::fclose(fp);
  }
  try {
    Engine e(f.path());
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::EmuFileFormat);
  }
}

}  // namespace
}  // namespace mssqlcdc::emu::test
