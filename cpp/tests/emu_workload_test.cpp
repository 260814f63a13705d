#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/workload.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {
namespace {

std::vector<std::string> dump(Engine& e) {
  std::vector<std::string> out;
  for (const char* sql :
       {"SELECT quote(\"__$start_lsn\") || quote(\"__$seqval\") || \"__$operation\" || quote(order_id) || "
        "quote(status) || quote(amount) FROM \"cdc.dbo_orders_CT\" ORDER BY 1",
        "SELECT quote(start_lsn) || tran_end_time FROM \"cdc.lsn_time_mapping\" ORDER BY 1"}) {
    auto st = e.db().prepare(sql);
    while (st.step()) out.push_back(st.text(0));
  }
  return out;
}

TEST(EmuWorkload, XoshiroMatchesItsReferenceSequenceForSeedZeroState) {
  // splitmix64(0) seeds; the first outputs are fixed for every platform.
  Xoshiro256 a(0);
  Xoshiro256 b(0);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
  Xoshiro256 c(1);
  EXPECT_NE(Xoshiro256(0).next(), c.next());
  for (int i = 0; i < 1000; ++i) {
    const double u = c.unit();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    EXPECT_LT(c.below(7), 7u);
  }
}

TEST(EmuWorkload, TheSameSeedAndArgumentsGiveIdenticalFiles) {
  TempFile f1;
  TempFile f2;
  auto e1 = orders_file(f1.path());
  auto e2 = orders_file(f2.path());
  WorkloadOptions o;
  o.table = "dbo.orders";
  o.rate = 50;
  o.duration_seconds = 20;
  o.start = kStart + kSecond;
  o.seed = 99;
  o.idle_every_seconds = 0.5;
  const auto r1 = run_workload(*e1, o);
  const auto r2 = run_workload(*e2, o);
  EXPECT_GT(r1.commits, 500);
  EXPECT_EQ(r1.commits, r2.commits);
  EXPECT_EQ(r1.last_lsn, r2.last_lsn);
  EXPECT_EQ(dump(*e1), dump(*e2));
  o.seed = 100;
  TempFile f3;
  auto e3 = orders_file(f3.path());
  run_workload(*e3, o);
  EXPECT_NE(dump(*e1), dump(*e3));
}

TEST(EmuWorkload, RatesDurationsAndIntervalsOutOfBoundsAreRefusedBeforeAnyCommit) {
  TempFile f;
  auto e = orders_file(f.path());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<std::function<void(WorkloadOptions&)>, std::string>> cases = {
      {[](WorkloadOptions& o) { o.rate = 0; }, "rate 0 commits"},
      {[&](WorkloadOptions& o) { o.rate = nan; }, "rate nan commits"},
      {[&](WorkloadOptions& o) { o.rate = inf; }, "rate inf commits"},
      {[](WorkloadOptions& o) { o.rate = 1001; }, "rate 1001 commits"},
      {[](WorkloadOptions& o) { o.duration_seconds = -1; }, "duration -1 s"},
      {[&](WorkloadOptions& o) { o.duration_seconds = inf; }, "duration inf s"},
      {[](WorkloadOptions& o) { o.duration_seconds = 1e12; }, "duration 1e+12 s"},
      {[](WorkloadOptions& o) {
         o.rate = 1000;
         o.duration_seconds = 86400;
       },
       "about 8.64e+07 commits"},
      {[&](WorkloadOptions& o) { o.idle_every_seconds = nan; }, "idle_every nan s"},
      {[&](WorkloadOptions& o) { o.cleanup_every_seconds = inf; }, "cleanup_every inf s"},
  };
  for (const auto& [change, expected] : cases) {
    WorkloadOptions o;
    o.table = "dbo.orders";
    change(o);
    try {
      run_workload(*e, o);
      ADD_FAILURE() << "accepted: " << expected;
    } catch (const Error& err) {
      EXPECT_EQ(err.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(err.what()).find(expected), std::string::npos) << err.what();
    }
  }
  TempFile fresh_file;
  EXPECT_EQ(dump(*e), dump(*orders_file(fresh_file.path())));  // nothing was committed
}

}  // namespace
}  // namespace mssqlcdc::emu::test
