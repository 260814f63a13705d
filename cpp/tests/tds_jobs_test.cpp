// The job procedures' rules (decisions 1363, 1364): how @continuous and @pollinginterval
// combine, as the sys.sp_cdc_change_job page states them
// (https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sys-sp-cdc-change-job-transact-sql),
// and what stopping and starting the capture job leaves in the engine's settings.
#include <gtest/gtest.h>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/error.hpp"
#include "tds/src/jobs.hpp"
#include "tds/src/statements.hpp"
#include "tds_test_util.hpp"

namespace mssqlcdc::tds {
namespace {

class TdsJobs : public ::testing::Test {
 protected:
  TdsJobs() : engine_(emu::test::orders_file(file_.path(), "manual")) {}

  void change(std::map<std::string, std::int64_t> values, const std::string& type = "capture") {
    change_job(*engine_, JobCall{type, std::move(values)});
  }

  int refusal(std::map<std::string, std::int64_t> values, const std::string& type = "capture") {
    try {
      change(std::move(values), type);
    } catch (const Error& e) {
      return e.number();
    }
    ADD_FAILURE() << "no error";
    return 0;
  }

  emu::test::TempFile file_;
  std::unique_ptr<emu::Engine> engine_;
};

TEST_F(TdsJobs, APollingIntervalAboveZeroWithContinuousOmittedMakesTheJobContinuous) {
  change({{"@pollinginterval", 9}});
  EXPECT_EQ(engine_->setting("polling_interval_seconds"), "9");
}

TEST_F(TdsJobs, ContinuousZeroSetsTheIntervalToZeroIgnoringTheOneGiven) {
  change({{"@pollinginterval", 9}});
  change({{"@continuous", 0}, {"@pollinginterval", 30}});
  EXPECT_EQ(engine_->setting("polling_interval_seconds"), "null");
}

TEST_F(TdsJobs, ContinuousOneWithoutAnIntervalTakesTheAddJobDefault) {
  change({{"@continuous", 1}});
  EXPECT_EQ(engine_->setting("polling_interval_seconds"), "5");
}

TEST_F(TdsJobs, ARefusedCallStoresNothing) {
  EXPECT_EQ(refusal({{"@maxtrans", 7}, {"@retention", 60}}), 22996);
  EXPECT_EQ(refusal({{"@retention", 52'494'801}}, "cleanup"), 22994);
  EXPECT_EQ(refusal({{"@threshold", 0}}, "cleanup"), 22850);
  EXPECT_EQ(refusal({{"@pollinginterval", -1}}), 22999);
  EXPECT_EQ(engine_->setting("maxtrans"), "500");
  EXPECT_EQ(engine_->setting("retention_minutes"), "4320");
}

TEST_F(TdsJobs, AStoppedCaptureJobKeepsItsIntervalAndStartRestoresIt) {
  change({{"@pollinginterval", 8}});
  stop_job(*engine_, JobCall{});
  EXPECT_EQ(engine_->setting("polling_interval_seconds"), "null");
  const ResultSet rs = help_jobs(*engine_, "shop").at(0);
  EXPECT_EQ(rs.rows.at(0).at(6), Value{std::int64_t{8}});
  EXPECT_EQ(rs.rows.at(0).at(2), Value{std::string("cdc.shop_capture")});
  change({{"@pollinginterval", 12}});  // while stopped: stored for the start
  EXPECT_EQ(engine_->setting("polling_interval_seconds"), "null");
  start_job(*engine_, JobCall{});
  EXPECT_EQ(engine_->setting("polling_interval_seconds"), "12");
}

TEST_F(TdsJobs, StoppingImmediateCaptureHoldsCommitsUntilTheStart) {
  engine_->configure("capture", "immediate");
  stop_job(*engine_, JobCall{std::string("CAPTURE"), {}});
  engine_->commit({emu::test::insert("dbo.orders", {{"order_id", emu::test::I(1)}})}, std::nullopt);
  EXPECT_EQ(engine_->pending_capture(), 1);
  start_job(*engine_, JobCall{});
  EXPECT_EQ(engine_->setting("capture"), "immediate");
  EXPECT_EQ(engine_->pending_capture(), 0);
}

TEST_F(TdsJobs, AnUnknownJobTypeIsRefusedByEveryJobProcedure) {
  const JobCall purge{std::string("purge"), {}};
  for (const auto& run : {start_job, stop_job, change_job}) {
    try {
      run(*engine_, purge);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.number(), 22992);
    }
  }
}

}  // namespace
}  // namespace mssqlcdc::tds
