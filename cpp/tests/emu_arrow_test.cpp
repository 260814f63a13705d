#include <gtest/gtest.h>

#include <cstring>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {
namespace {

// A minimal C Data Interface consumer: reads every batch, checking the layout rules.
struct Consumed {
  std::vector<std::string> formats;
  std::vector<std::string> names;
  std::int64_t rows = 0;
  std::vector<std::int64_t> batch_rows;
  std::vector<std::string> start_lsns;
  std::vector<std::int32_t> ops;
  std::vector<bool> amount_valid;
};

Consumed consume(ArrowArrayStream* s) {
  Consumed c;
  ArrowSchema schema{};
  EXPECT_EQ(s->get_schema(s, &schema), 0);
  EXPECT_STREQ(schema.format, "+s");
  for (std::int64_t i = 0; i < schema.n_children; ++i) {
    c.formats.emplace_back(schema.children[i]->format);
    c.names.emplace_back(schema.children[i]->name);
    EXPECT_TRUE(schema.children[i]->flags & ARROW_FLAG_NULLABLE);
  }
  schema.release(&schema);
  EXPECT_EQ(schema.release, nullptr);
  for (;;) {
    ArrowArray batch{};
    EXPECT_EQ(s->get_next(s, &batch), 0);
    if (batch.release == nullptr) break;
    c.rows += batch.length;
    c.batch_rows.push_back(batch.length);
    const ArrowArray* lsn = batch.children[0];
    EXPECT_EQ(lsn->n_buffers, 3);
    for (std::int64_t b = 1; b < lsn->n_buffers; ++b) {
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(lsn->buffers[b]) % 64, 0u) << "64-byte aligned";
    }
    const auto* offsets = static_cast<const std::int32_t*>(lsn->buffers[1]);
    const auto* data = static_cast<const char*>(lsn->buffers[2]);
    const auto* ops = static_cast<const std::int32_t*>(batch.children[2]->buffers[1]);
    const ArrowArray* amount = batch.children[batch.n_children - 1];
    const auto* validity = static_cast<const std::uint8_t*>(amount->buffers[0]);
    for (std::int64_t r = 0; r < batch.length; ++r) {
      c.start_lsns.emplace_back(data + offsets[r], static_cast<std::size_t>(offsets[r + 1] - offsets[r]));
      c.ops.push_back(ops[r]);
      c.amount_valid.push_back(validity == nullptr || ((validity[r / 8] >> (r % 8)) & 1) != 0);
    }
    batch.release(&batch);
    EXPECT_EQ(batch.release, nullptr);
  }
  return c;
}

TEST(EmuArrow, ReadChangesExportsTheDocumentedSchemaAndBoundedBatches) {
  TempFile f;
  auto e = orders_file(f.path());
  std::vector<Lsn> commits;
  for (int i = 0; i < 10; ++i) {
    Row row{{"order_id", I(i)}};
    if (i % 2 == 0) row.emplace_back("amount", D("1.25"));
    commits.push_back(e->commit({insert("dbo.orders", row)}, kStart + (i + 1) * kSecond));
  }
  Reader r(f.path());
  ChangeReadOptions o;
  o.batch_rows = 3;
  ArrowArrayStream s{};
  r.read_changes("dbo_orders", commits.front(), commits.back(), o, &s);
  const Consumed c = consume(&s);
  s.release(&s);
  EXPECT_EQ(c.names, (std::vector<std::string>{"_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts",
                                               "order_id", "status", "amount"}));
  EXPECT_EQ(c.formats, (std::vector<std::string>{"u", "u", "i", "i", "tsu:", "i", "u", "d:18,2"}));
  EXPECT_EQ(c.rows, 10);
  EXPECT_EQ(c.batch_rows, (std::vector<std::int64_t>{3, 3, 3, 1}));
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(c.start_lsns[i], commits[i].to_string());
    EXPECT_EQ(c.ops[i], 2);
    EXPECT_EQ(c.amount_valid[i], i % 2 == 0);
  }
}

TEST(EmuArrow, ReleasingAStreamEarlyEndsItsReadTransaction) {
  TempFile f;
  auto e = orders_file(f.path());
  std::vector<Lsn> commits;
  for (int i = 0; i < 10; ++i)
    commits.push_back(e->commit({insert("dbo.orders", {{"order_id", I(i)}})}, kStart + (i + 1) * kSecond));
  Reader r(f.path());
  ChangeReadOptions o;
  o.batch_rows = 2;
  ArrowArrayStream s{};
  r.read_changes("dbo_orders", commits.front(), commits.back(), o, &s);
  ArrowArray batch{};
  ASSERT_EQ(s.get_next(&s, &batch), 0);
  batch.release(&batch);
  s.release(&s);
  e->commit({insert("dbo.orders", {{"order_id", I(100)}})}, kStart + 100 * kSecond);
  // A truncating checkpoint succeeds only if no reader still holds an old snapshot.
  int log = -1;
  int done = -1;
  ASSERT_EQ(sqlite3_wal_checkpoint_v2(e->db().raw(), nullptr, SQLITE_CHECKPOINT_TRUNCATE, &log, &done), SQLITE_OK);
}

TEST(EmuArrow, RangeChecksRaiseBeforeAnyStreamExists) {
  TempFile f;
  auto e = orders_file(f.path());
  const Lsn c = e->commit({insert("dbo.orders", {{"order_id", I(1)}})}, kStart + kSecond);
  Reader r(f.path());
  ArrowArrayStream s{};
  try {
    r.read_changes("dbo_orders", c, c.increment(), ChangeReadOptions{}, &s);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::EmuInvalidRange);
    EXPECT_EQ(err.number(), 313);
  }
  EXPECT_EQ(s.release, nullptr);
  try {
    r.read_changes("nope", c, c, ChangeReadOptions{}, &s);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.number(), 208);
  }
}

TEST(EmuArrow, ReadTableStreamsKeyOrderWithinBounds) {
  TempFile f;
  auto e = orders_file(f.path());
  std::vector<Change> changes;
  for (int i = 20; i > 0; --i) changes.push_back(insert("dbo.orders", {{"order_id", I(i)}}));
  e->commit(changes, kStart + kSecond);
  Reader r(f.path());
  KeyRange range{Key{I(5)}, Key{I(9)}};
  TableReadOptions o;
  ArrowArrayStream s{};
  r.read_table("dbo.orders", range, o, &s);
  ArrowArray batch{};
  ASSERT_EQ(s.get_next(&s, &batch), 0);
  ASSERT_EQ(batch.length, 4);
  const auto* ids = static_cast<const std::int32_t*>(batch.children[0]->buffers[1]);
  EXPECT_EQ(std::vector<std::int32_t>(ids, ids + 4), (std::vector<std::int32_t>{5, 6, 7, 8}));
  batch.release(&batch);
  s.release(&s);
}

}  // namespace
}  // namespace mssqlcdc::emu::test
