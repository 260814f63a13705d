// The server time zone: TZif and POSIX rules against offsets published for these zones, and the
// engine storing local catalog times with UTC twins.
#include <gtest/gtest.h>

#include <chrono>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/emu/zone.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {
namespace {

constexpr std::int64_t kHour = 3600;

// UTC seconds of a civil UTC time.
std::int64_t utc(int y, unsigned mo, unsigned d, int h, int mi = 0, int s = 0) {
  using namespace std::chrono;
  return sys_days{year{y} / month{mo} / day{d}}.time_since_epoch().count() * 86'400 + h * 3600 + mi * 60 + s;
}

Micros micros(int y, unsigned mo, unsigned d, int h, int mi = 0) { return utc(y, mo, d, h, mi) * 1'000'000; }

TEST(EmuZone, UtcHasNoOffset) { EXPECT_EQ(TimeZone::load("UTC").offset_at(utc(2026, 7, 1, 12)), 0); }

TEST(EmuZone, NewYorkSwitchesAtTwoLocalInMarchAndNovemberFromTheFileAndFromItsRuleAfter2037) {
  const auto ny = TimeZone::load("America/New_York");
  // 2026: second Sunday of March (the 8th) and first Sunday of November (the 1st).
  EXPECT_EQ(ny.offset_at(utc(2026, 3, 8, 6, 59, 59)), -5 * kHour);
  EXPECT_EQ(ny.offset_at(utc(2026, 3, 8, 7)), -4 * kHour);
  EXPECT_EQ(ny.offset_at(utc(2026, 11, 1, 5, 59, 59)), -4 * kHour);
  EXPECT_EQ(ny.offset_at(utc(2026, 11, 1, 6)), -5 * kHour);
  // 2050 lies past the file's transitions: the footer rule EST5EDT,M3.2.0,M11.1.0 decides
  // (March 13 and November 6, 2050).
  EXPECT_EQ(ny.offset_at(utc(2050, 3, 13, 6, 59, 59)), -5 * kHour);
  EXPECT_EQ(ny.offset_at(utc(2050, 3, 13, 7)), -4 * kHour);
  EXPECT_EQ(ny.offset_at(utc(2050, 11, 6, 5, 59, 59)), -4 * kHour);
  EXPECT_EQ(ny.offset_at(utc(2050, 11, 6, 6)), -5 * kHour);
  EXPECT_EQ(ny.to_local(micros(2026, 3, 8, 7, 30)), micros(2026, 3, 8, 3, 30));
}

TEST(EmuZone, SouthernZonesHaveSummerAcrossTheNewYearAndHalfHourZonesKeepTheirMinutes) {
  const auto sydney = TimeZone::load("Australia/Sydney");
  EXPECT_EQ(sydney.offset_at(utc(2050, 1, 15, 0)), 11 * kHour);
  EXPECT_EQ(sydney.offset_at(utc(2050, 7, 15, 0)), 10 * kHour);
  EXPECT_EQ(TimeZone::load("Asia/Kolkata").offset_at(utc(2040, 1, 1, 0)), 5 * kHour + 30 * 60);
}

TEST(EmuZone, UnknownOrEscapingNamesAreRefusedWithAHint) {
  for (const char* name : {"Mars/Olympus", "../../etc/passwd", "America/../America/New_York", "", "/etc/localtime"}) {
    try {
      (void)TimeZone::load(name);
      FAIL() << name;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("IANA name such as America/New_York"), std::string::npos) << e.what();
    }
  }
}

TEST(EmuZone, PosixRulesParseAngleNamesAndRejectGarbage) {
  EXPECT_EQ(PosixRule::parse("<+0330>-3:30").offset_at(0), 3 * kHour + 30 * 60);
  const auto chile = PosixRule::parse("<-04>4<-03>,M9.1.6/24,M4.1.6/24");
  EXPECT_EQ(chile.offset_at(utc(2050, 1, 15, 12)), -3 * kHour);
  EXPECT_EQ(chile.offset_at(utc(2050, 6, 15, 12)), -4 * kHour);
  for (const char* bad : {"", "E5", "EST", "EST5EDT,M13.1.0,M11.1.0", "EST5EDT,M3.2.0"}) {
    EXPECT_THROW((void)PosixRule::parse(bad), Error) << bad;
  }
}

std::unique_ptr<Engine> new_york_file(const std::filesystem::path& p, Micros start) {
  auto e = empty_file(p, start);
  e->configure("time_zone", "America/New_York");
  e->create_table("dbo.orders", {{"order_id", "int"}, {"status", "nvarchar(20)"}}, {"order_id"});
  e->enable_cdc("dbo.orders", std::nullopt, std::nullopt);
  return e;
}

Change order(int id) { return insert("dbo.orders", {{"order_id", I(id)}}); }

TEST(EmuZone, TheZoneCanBeSetOnlyBeforeTheFirstLsnAndMustExist) {
  TempFile f;
  auto e = new_york_file(f.path(), micros(2026, 3, 8, 5));
  EXPECT_THROW(e->configure("time_zone", "Europe/Berlin"), Error);
  e->configure("time_zone", "America/New_York");  // the same zone again changes nothing
  EXPECT_EQ(e->setting("time_zone"), "America/New_York");
  TempFile g;
  const auto fresh = empty_file(g.path(), 0);
  EXPECT_THROW(fresh->configure("time_zone", "Mars/Olympus"), Error);
  EXPECT_EQ(fresh->setting("time_zone"), "UTC");
}

TEST(EmuZone, CatalogTimesAreLocalAcrossSpringForwardWithUtcTwins) {
  TempFile f;
  auto e = new_york_file(f.path(), micros(2026, 3, 8, 5));
  const Lsn before = e->commit({order(1)}, micros(2026, 3, 8, 6, 30));  // 01:30 EST
  const Lsn after = e->commit({order(2)}, micros(2026, 3, 8, 7, 30));   // 03:30 EDT
  Reader r(f.path());
  EXPECT_EQ(r.server_time_zone(), "America/New_York");
  EXPECT_EQ(r.lsn_to_time(before), micros(2026, 3, 8, 1, 30));
  EXPECT_EQ(r.lsn_to_time(after), micros(2026, 3, 8, 3, 30));
  EXPECT_EQ(r.lsn_to_utc(after), micros(2026, 3, 8, 7, 30));
  EXPECT_EQ(r.time_to_lsn(Relation::LargestLessOrEqual, micros(2026, 3, 8, 2, 30)), before);
  EXPECT_EQ(r.capture_instances("dbo.orders").at(0).create_date, micros(2026, 3, 8, 0));
  EXPECT_EQ(r.capture_instances("dbo.orders").at(0).create_date_utc, micros(2026, 3, 8, 5));
}

TEST(EmuZone, TimeAtOrBelowTakesTheNewestEntryNotAboveTheLsn) {
  TempFile f;
  auto e = new_york_file(f.path(), micros(2026, 3, 8, 5));
  Reader r(f.path());
  const Lsn first = e->commit({order(1)}, micros(2026, 3, 8, 6, 30));
  EXPECT_EQ(r.time_at_or_below(Lsn(0x27, 0x20, 1)), std::nullopt);  // below every entry
  const Lsn idle = e->idle(micros(2026, 3, 8, 7, 30));
  EXPECT_EQ(r.time_at_or_below(first), micros(2026, 3, 8, 1, 30));
  EXPECT_EQ(r.time_at_or_below(first.increment()), micros(2026, 3, 8, 1, 30));
  EXPECT_EQ(r.time_at_or_below(idle.increment()), micros(2026, 3, 8, 3, 30));  // idle entries count
}

TEST(EmuZone, TheCleanupJobCountsRetentionOnLocalTimesAcrossFallBack) {
  TempFile f;
  auto e = new_york_file(f.path(), micros(2026, 11, 1, 4));
  const Lsn c0 = e->commit({order(1)}, micros(2026, 11, 1, 4, 40));  // 00:40 EDT
  const Lsn c1 = e->commit({order(2)}, micros(2026, 11, 1, 5, 10));  // 01:10 EDT
  e->commit({order(3)}, micros(2026, 11, 1, 5, 50));                 // 01:50 EDT, the newest local time
  e->commit({order(4)}, micros(2026, 11, 1, 6, 20));                 // 01:20 EST
  // Local: newest 01:50, minus 60 minutes is 00:50, so the mark is the 00:40 commit. Counted in
  // UTC it would have been the 05:10 one: SQL Server computes on its stored local times.
  e->run_cleanup_job(60);
  Reader r(f.path());
  EXPECT_EQ(r.min_lsn("dbo_orders").lsn, c0);
  EXPECT_NE(c0, c1);
}

}  // namespace
}  // namespace mssqlcdc::emu::test
