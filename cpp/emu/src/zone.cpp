// zone.cpp: TZif files (RFC 8536) and POSIX TZ rules, UTC -> local only (see zone.hpp).
#include "mssqlcdc/emu/zone.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

constexpr std::int64_t kDay = 86'400;

std::int64_t days_from_civil(int y, unsigned m, unsigned d) {
  using namespace std::chrono;
  return sys_days{year{y} / month{m} / day{d}}.time_since_epoch().count();
}

int year_of_day(std::int64_t day) {
  using namespace std::chrono;
  return static_cast<int>(year_month_day{sys_days{days{day}}}.year());
}

bool is_leap(int y) { return std::chrono::year{y}.is_leap(); }

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
}

class RuleParser {
 public:
  explicit RuleParser(std::string_view text) : text_(text) {}

  PosixRule parse() {
    PosixRule r;
    name();
    r.std_offset = -hms(24);
    if (done()) return r;
    r.has_dst = true;
    name();
    r.dst_offset = r.std_offset + 3600;
    if (!done() && peek() != ',') r.dst_offset = -hms(24);
    if (done()) {  // no dates: POSIX leaves them to the implementation; the US rules, as glibc
      r.start = {PosixRule::Date::Kind::MonthWeekDay, 0, 3, 2, 7200};
      r.end = {PosixRule::Date::Kind::MonthWeekDay, 0, 11, 1, 7200};
      return r;
    }
    expect(',');
    r.start = date();
    expect(',');
    r.end = date();
    if (!done()) fail();
    return r;
  }

 private:
  [[noreturn]] void fail() const {
    throw Error(ErrorKind::InvalidArgument, "time zone rule '" + std::string(text_) + "' is not a POSIX TZ string");
  }
  [[nodiscard]] bool done() const { return pos_ >= text_.size(); }
  [[nodiscard]] char peek() const { return done() ? '\0' : text_[pos_]; }
  void expect(char c) {
    if (peek() != c) fail();
    ++pos_;
  }
  bool digit() const { return peek() >= '0' && peek() <= '9'; }
  int number() {
    if (!digit()) fail();
    int n = 0;
    while (digit() && n < 100000) n = n * 10 + (text_[pos_++] - '0');
    return n;
  }
  void name() {
    if (peek() == '<') {
      const auto close = text_.find('>', pos_);
      if (close == std::string_view::npos) fail();
      pos_ = close + 1;
      return;
    }
    const std::size_t from = pos_;
    while (!done() && ((peek() >= 'A' && peek() <= 'Z') || (peek() >= 'a' && peek() <= 'z'))) ++pos_;
    if (pos_ - from < 3) fail();
  }
  // [+-]hh[:mm[:ss]] in seconds, hours up to max_hours.
  std::int64_t hms(int max_hours) {
    int sign = 1;
    if (peek() == '+' || peek() == '-') sign = text_[pos_++] == '-' ? -1 : 1;
    const int h = number();
    int m = 0;
    int s = 0;
    if (peek() == ':') {
      ++pos_;
      m = number();
      if (peek() == ':') {
        ++pos_;
        s = number();
      }
    }
    if (h > max_hours || m > 59 || s > 59) fail();
    return sign * (h * 3600LL + m * 60LL + s);
  }
  PosixRule::Date date() {
    PosixRule::Date d;
    if (peek() == 'J') {
      ++pos_;
      d.kind = PosixRule::Date::Kind::Julian1;
      d.day = number();
      if (d.day < 1 || d.day > 365) fail();
    } else if (peek() == 'M') {
      ++pos_;
      d.kind = PosixRule::Date::Kind::MonthWeekDay;
      d.month = number();
      expect('.');
      d.week = number();
      expect('.');
      d.day = number();
      if (d.month < 1 || d.month > 12 || d.week < 1 || d.week > 5 || d.day > 6) fail();
    } else {
      d.kind = PosixRule::Date::Kind::Julian0;
      d.day = number();
      if (d.day > 365) fail();
    }
    if (peek() == '/') {
      ++pos_;
      d.time = hms(167);  // RFC 8536 allows -167..167 hours
    }
    return d;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// Days since 1970 of a rule date in year y.
std::int64_t day_of(const PosixRule::Date& d, int y) {
  const std::int64_t jan1 = days_from_civil(y, 1, 1);
  switch (d.kind) {
    case PosixRule::Date::Kind::Julian1: return jan1 + d.day - 1 + (is_leap(y) && d.day >= 60 ? 1 : 0);
    case PosixRule::Date::Kind::Julian0: return jan1 + d.day;
    case PosixRule::Date::Kind::MonthWeekDay: break;
  }
  const std::int64_t first = days_from_civil(y, static_cast<unsigned>(d.month), 1);
  const std::int64_t next =
      d.month == 12 ? days_from_civil(y + 1, 1, 1) : days_from_civil(y, static_cast<unsigned>(d.month + 1), 1);
  const std::int64_t first_weekday = (first % 7 + 11) % 7;  // 1970-01-01 was a Thursday (4)
  std::int64_t day = first + (d.day - first_weekday + 7) % 7 + (d.week - 1) * 7;
  while (day >= next) day -= 7;  // week 5: the last such weekday of the month
  return day;
}

std::uint32_t be32(const std::string& b, std::size_t at) {
  return (static_cast<std::uint32_t>(static_cast<unsigned char>(b[at])) << 24) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 1])) << 16) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 2])) << 8) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 3]));
}

std::int64_t be64(const std::string& b, std::size_t at) {
  return static_cast<std::int64_t>((static_cast<std::uint64_t>(be32(b, at)) << 32) | be32(b, at + 4));
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.front() == '/' || name.back() == '/') return false;
  for (const char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '+' || c == '/' || c == '.';
    if (!ok) return false;
  }
  std::size_t from = 0;
  while (from <= name.size()) {  // no empty, "." or ".." component: the name stays inside the folder
    const auto slash = name.find('/', from);
    const auto part = name.substr(from, slash == std::string_view::npos ? std::string_view::npos : slash - from);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string_view::npos) break;
    from = slash + 1;
  }
  return true;
}

}  // namespace

PosixRule PosixRule::parse(std::string_view text) { return RuleParser(text).parse(); }

std::int64_t PosixRule::offset_at(std::int64_t utc_seconds) const {
  if (!has_dst) return std_offset;
  const int y = year_of_day(floor_div(utc_seconds + std_offset, kDay));
  const std::int64_t on = day_of(start, y) * kDay + start.time - std_offset;  // local standard time then
  const std::int64_t off = day_of(end, y) * kDay + end.time - dst_offset;     // local daylight time then
  const bool dst = on < off ? (utc_seconds >= on && utc_seconds < off) : !(utc_seconds >= off && utc_seconds < on);
  return dst ? dst_offset : std_offset;
}

TimeZone TimeZone::load(std::string_view name) {
  TimeZone z;
  z.name_ = std::string(name);
  if (name == "UTC") {
    z.offsets_ = {0};
    return z;
  }
  const char* env = std::getenv("TZDIR");
  const std::string folder = env != nullptr && *env != '\0' ? env : "/usr/share/zoneinfo";
  const std::string unknown = "time zone '" + std::string(name) + "' is not in the IANA time zone database (" + folder +
                              "); give an IANA name such as America/New_York or Europe/Berlin, or UTC";
  if (!valid_name(name)) throw Error(ErrorKind::InvalidArgument, unknown);
  std::ifstream in(folder + "/" + std::string(name), std::ios::binary);
  if (!in) throw Error(ErrorKind::InvalidArgument, unknown);
  const std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (b.size() < 44 || b.compare(0, 4, "TZif") != 0) throw Error(ErrorKind::InvalidArgument, unknown);
  const auto bad = [&]() {
    return Error(ErrorKind::InvalidArgument, folder + "/" + std::string(name) + " is not a valid TZif file");
  };

  std::size_t at = 0;
  const bool v2 = b[4] != '\0';
  for (int pass = 0; pass < (v2 ? 2 : 1); ++pass) {
    if (b.size() < at + 44) throw bad();
    const std::size_t isut = be32(b, at + 20), isstd = be32(b, at + 24), leap = be32(b, at + 28),
                      timecnt = be32(b, at + 32), typecnt = be32(b, at + 36), charcnt = be32(b, at + 40);
    const std::size_t tsize = pass == 0 ? 4 : 8;
    const std::size_t body = timecnt * tsize + timecnt + typecnt * 6 + charcnt + leap * (tsize + 4) + isstd + isut;
    at += 44;
    if (typecnt == 0 || b.size() < at + body) throw bad();
    if (v2 && pass == 0) {
      at += body;  // the version 1 block, 32-bit times: version 2 repeats it with 64-bit ones
      continue;
    }
    z.transitions_.clear();
    z.type_of_.clear();
    z.offsets_.clear();
    for (std::size_t i = 0; i < timecnt; ++i) {
      z.transitions_.push_back(tsize == 8 ? be64(b, at + i * 8) : static_cast<std::int32_t>(be32(b, at + i * 4)));
    }
    const std::size_t types_at = at + timecnt * tsize;
    for (std::size_t i = 0; i < timecnt; ++i) {
      const auto t = static_cast<std::uint8_t>(b[types_at + i]);
      if (t >= typecnt) throw bad();
      z.type_of_.push_back(t);
    }
    const std::size_t info_at = types_at + timecnt;
    for (std::size_t i = 0; i < typecnt; ++i) z.offsets_.push_back(static_cast<std::int32_t>(be32(b, info_at + i * 6)));
    at += body;
  }
  if (v2 && at < b.size() && b[at] == '\n') {
    const auto close = b.find('\n', at + 1);
    if (close == std::string::npos) throw bad();
    const std::string footer = b.substr(at + 1, close - at - 1);
    if (!footer.empty()) {
      z.rule_ = PosixRule::parse(footer);
      z.has_rule_ = true;
    }
  }
  if (!std::is_sorted(z.transitions_.begin(), z.transitions_.end())) throw bad();
  return z;
}

std::int64_t TimeZone::offset_at(std::int64_t utc_seconds) const {
  if (transitions_.empty() || utc_seconds < transitions_.front()) {
    if (transitions_.empty() && has_rule_) return rule_.offset_at(utc_seconds);
    return offsets_.front();  // RFC 8536: type 0 before the first transition
  }
  if (has_rule_ && utc_seconds >= transitions_.back()) {
    // The footer governs after the last transition; at the transition itself the file's type
    // and the rule agree.
    if (utc_seconds > transitions_.back()) return rule_.offset_at(utc_seconds);
  }
  const auto it = std::upper_bound(transitions_.begin(), transitions_.end(), utc_seconds);
  return offsets_[type_of_[static_cast<std::size_t>(it - transitions_.begin()) - 1]];
}

std::int64_t TimeZone::to_local(std::int64_t utc_micros) const {
  return utc_micros + offset_at(floor_div(utc_micros, 1'000'000)) * 1'000'000;
}

}  // namespace mssqlcdc::emu
