#include <gtest/gtest.h>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/emu/log.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {
namespace {

// A cursor at a chosen position, through the stored form WriteState::load reads from a new
// orders file.
LsnCursor cursor_at(const Lsn& next, std::int64_t records) {
  TempFile f;
  (void)orders_file(f.path());
  Db db(f.path(), false);
  WriteState s = WriteState::load(db);
  s.cursor = LsnCursor::at(next, records);
  s.store(db);
  return WriteState::load(db).cursor;
}

TEST(EmuLog, TheFirstLsnIsTheDocumentedOne) { EXPECT_EQ(LsnCursor::initial().to_string(), "0x00000027000000200001"); }

TEST(EmuLog, TakeAdvancesTheSlotAndCarriesPastFFFEIntoTheNextBlock) {
  LsnCursor c = cursor_at(Lsn(0x27, 0x30, 0xFFFE), 0);
  EXPECT_EQ(c.take(), Lsn(0x27, 0x30, 0xFFFE));
  EXPECT_EQ(c.take(), Lsn(0x27, 0x31, 1));
  EXPECT_EQ(c.take(), Lsn(0x27, 0x31, 2));
}

TEST(EmuLog, FlushMovesOneBlockPlusOnePer32RecordsAndResetsTheSlot) {
  LsnCursor c = cursor_at(Lsn(0x27, 0x40, 1), 0);
  for (int i = 0; i < 70; ++i) (void)c.take();
  c.flush();  // 70 records: block + 1 + 2
  EXPECT_EQ(c.take(), Lsn(0x27, 0x43, 1));
}

TEST(EmuLog, ABlockReaching0x1000StartsTheNextVlf) {
  LsnCursor c = cursor_at(Lsn(0x27, 0xFFF, 5), 1);
  c.flush();
  EXPECT_EQ(c.take(), Lsn(0x28, 0x20, 1));
}

TEST(EmuLog, LsnArgumentsAreRightPaddedLikeBinary10) {
  EXPECT_EQ(parse_lsn_arg("0x0000002A", "lsn").to_string(), "0x0000002A000000000000");
  EXPECT_EQ(parse_lsn_arg("0x00000027000000200001", "lsn").to_string(), "0x00000027000000200001");
  EXPECT_EQ(parse_lsn_arg("0xab", "lsn").to_string(), "0xAB000000000000000000");
  for (const char* bad : {"0x", "0x1", "27", "0x0000002700000020000100", "0xZZ"}) {
    EXPECT_THROW((void)parse_lsn_arg(bad, "lsn"), Error) << bad;
  }
}

TEST(EmuLog, RecordsRoundTripThroughTheirPayload) {
  LogRecord r;
  r.kind = LogRecord::Kind::Txn;
  RowOp op;
  op.kind = RowOp::Kind::KeyUpdate;
  op.table_id = 1001;
  op.seqval = Lsn(0x27, 0x21, 2);
  op.command_id = 3;
  op.before = {{1, Cell::integer(7)}, {2, Cell::text("a")}, {3, Cell::null()}};
  op.after = {{1, Cell::integer(8)}, {2, Cell::real(1.5)}, {3, Cell::blob(std::string("\0\1", 2))}};
  op.set_columns = {1, 2};
  r.ops.push_back(op);
  TempFile f;
  orders_file(f.path());
  Db db(f.path(), false);
  db.exec("CREATE TEMP TABLE t (commit_lsn, kind, begin_lsn, tran_id, begin_time, end_time, payload)");
  db.prepare("INSERT INTO t VALUES (?, 'txn', ?, ?, 1, 2, ?)")
      .bind_blob(1, lsn_blob(Lsn(0x27, 0x21, 3)))
      .bind_blob(2, lsn_blob(Lsn(0x27, 0x21, 1)))
      .bind_blob(3, tran_id_bytes(5))
      .bind_blob(4, r.payload())
      .run();
  auto st = db.prepare("SELECT * FROM t");
  ASSERT_TRUE(st.step());
  const LogRecord back = LogRecord::from_row(st);
  ASSERT_EQ(back.ops.size(), 1u);
  EXPECT_EQ(back.ops[0].before, op.before);
  EXPECT_EQ(back.ops[0].after, op.after);
  EXPECT_EQ(back.ops[0].set_columns, op.set_columns);
  EXPECT_EQ(back.ops[0].seqval, op.seqval);
  EXPECT_EQ(back.tran_id, tran_id_bytes(5));
}

TEST(EmuLog, CommitLsnsRiseAcrossManyCommitsAndSeqvalsStayBelowTheirCommit) {
  TempFile f;
  auto e = orders_file(f.path());
  Lsn last;
  for (int i = 0; i < 200; ++i) {
    const Lsn c = e->commit({insert("dbo.orders", {{"order_id", I(i)}})}, kStart + (i + 1) * kSecond);
    EXPECT_LT(last, c);
    last = c;
  }
  auto st = e->db().prepare("SELECT count(*) FROM \"cdc.dbo_orders_CT\" WHERE \"__$seqval\" >= \"__$start_lsn\"");
  st.step();
  EXPECT_EQ(st.i64(0), 0);
}

}  // namespace
}  // namespace mssqlcdc::emu::test
