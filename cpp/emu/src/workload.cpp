#include "mssqlcdc/emu/workload.hpp"

#include <cmath>
#include <set>
#include <sstream>
#include <utility>

#include "mssqlcdc/emu/reader.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

constexpr Micros kSecond = 1'000'000;

// Commits are at least 1 ms apart, so a higher rate could not be honoured; a year of simulated
// time and ten million commits (minutes of work, gigabytes of file) bound one run. NaN fails
// every comparison below, so it is refused with the rest.
constexpr double kMaxRate = 1000;
constexpr double kMaxSpanSeconds = 366.0 * 86400;
constexpr double kMaxCommits = 10'000'000;

std::string number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

void check_bounds(const WorkloadOptions& o) {
  auto refuse = [](const std::string& message) { throw Error(ErrorKind::InvalidArgument, "workload: " + message); };
  if (!(o.rate > 0 && o.rate <= kMaxRate))
    refuse("rate " + number(o.rate) +
           " commits per simulated second is out of range; pass a number above 0 "
           "and at most 1000");
  if (!(o.duration_seconds > 0 && o.duration_seconds <= kMaxSpanSeconds))
    refuse("duration " + number(o.duration_seconds) + " s is out of range; pass a span above 0 and at most 366 days");
  if (o.rate * o.duration_seconds > kMaxCommits)
    refuse("rate " + number(o.rate) + " for " + number(o.duration_seconds) + " s asks for about " +
           number(o.rate * o.duration_seconds) +
           " commits, more than 10000000; run shorter workloads one after another");
  for (const auto& [name, value] :
       {std::pair{"idle_every", o.idle_every_seconds}, std::pair{"cleanup_every", o.cleanup_every_seconds}}) {
    if (!(value >= 0 && value <= kMaxSpanSeconds))
      refuse(std::string(name) + " " + number(value) + " s is out of range; pass 0 (never) up to 366 days");
  }
}

// A random value for a column; keys draw from a wider range so inserts rarely collide.
Value random_value(Xoshiro256& rng, const SqlType& t, bool key, Micros now) {
  Value v;
  switch (t.base) {
    case Base::Bit:
      v.kind = Value::Kind::Bool;
      v.i = static_cast<std::int64_t>(rng.below(2));
      return v;
    case Base::TinyInt:
      v.kind = Value::Kind::Int;
      v.i = static_cast<std::int64_t>(rng.below(256));
      return v;
    case Base::SmallInt:
      v.kind = Value::Kind::Int;
      v.i = static_cast<std::int64_t>(rng.below(32768));
      return v;
    case Base::Int:
    case Base::BigInt:
      v.kind = Value::Kind::Int;
      v.i = static_cast<std::int64_t>(rng.below(key ? 2'000'000'000ULL : 1'000'000ULL));
      return v;
    case Base::Decimal:
    case Base::Numeric:
    case Base::Money:
    case Base::SmallMoney: {
      const int whole = std::min(t.precision - t.scale, 6);
      std::uint64_t limit = 1;
      for (int i = 0; i < whole; ++i) limit *= 10;
      std::string s = std::to_string(rng.below(limit));
      if (t.scale > 0) {
        std::string frac;
        for (int i = 0; i < t.scale; ++i) frac += static_cast<char>('0' + rng.below(10));
        s += "." + frac;
      }
      v.kind = Value::Kind::Decimal;
      v.s = s;
      return v;
    }
    case Base::Real:
    case Base::Float:
      v.kind = Value::Kind::Float;
      v.f = std::floor(rng.unit() * 1e6) / 100;
      return v;
    case Base::Date:
      v.kind = Value::Kind::Date;
      v.i = 20454 + static_cast<std::int64_t>(rng.below(365));
      return v;
    case Base::Time:
      v.kind = Value::Kind::Time;
      v.i = static_cast<std::int64_t>(rng.below(86'400ULL)) * kSecond;
      return v;
    case Base::DateTime:
    case Base::SmallDateTime:
    case Base::DateTime2:
      v.kind = Value::Kind::DateTime;
      v.i = now - static_cast<std::int64_t>(rng.below(86'400ULL)) * kSecond;
      return v;
    case Base::DateTimeOffset:
      v.kind = Value::Kind::DateTimeTz;
      v.i = now - static_cast<std::int64_t>(rng.below(86'400ULL)) * kSecond;
      return v;
    case Base::UniqueIdentifier: {
      static constexpr char kHex[] = "0123456789ABCDEF";
      std::string s;
      for (int i = 0; i < 32; ++i) {
        if (i == 8 || i == 12 || i == 16 || i == 20) s += '-';
        s += kHex[rng.below(16)];
      }
      v.kind = Value::Kind::Text;
      v.s = s;
      return v;
    }
    case Base::Binary:
    case Base::VarBinary:
    case Base::Image:
    case Base::SqlVariant:
    case Base::HierarchyId:
    case Base::Geometry:
    case Base::Geography: {
      const std::uint64_t cap = t.length > 0 ? std::min<std::uint64_t>(static_cast<std::uint64_t>(t.length), 16) : 16;
      v.kind = Value::Kind::Bytes;
      for (std::uint64_t i = 0, n = 1 + rng.below(cap); i < n; ++i) v.s += static_cast<char>(rng.below(256));
      return v;
    }
    case Base::RowVersion: return v;
    default: {
      const std::uint64_t cap = t.length > 0 ? std::min<std::uint64_t>(static_cast<std::uint64_t>(t.length), 20) : 20;
      v.kind = Value::Kind::Text;
      for (std::uint64_t i = 0, n = 1 + rng.below(cap); i < n; ++i) v.s += static_cast<char>('a' + rng.below(26));
      return v;
    }
  }
}

// Columns the engine fills: giving them a value is an error (273, 544, 271).
bool generated(const Column& c) { return c.type.base == Base::RowVersion || c.is_identity || c.computed; }

std::string key_text(const Row& key) {
  std::string s;
  for (const auto& [n, v] : key)
    s += std::to_string(static_cast<int>(v.kind)) + ":" + std::to_string(v.i) + ":" + v.s + "|";
  return s;
}

}  // namespace

Xoshiro256::Xoshiro256(std::uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

std::uint64_t Xoshiro256::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

std::uint64_t Xoshiro256::below(std::uint64_t n) {
  // Rejection keeps every value equally likely.
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::uint64_t x = next();
  while (x >= limit) x = next();
  return x % n;
}

double Xoshiro256::unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

WorkloadResult run_workload(Engine& engine, const WorkloadOptions& o) {
  check_bounds(o);
  if (o.min_rows < 1 || o.max_rows < o.min_rows)
    throw Error(ErrorKind::InvalidArgument, "workload: rows per commit must be 1 <= min <= max");
  if (o.insert_weight < 0 || o.update_weight < 0 || o.delete_weight < 0 ||
      o.insert_weight + o.update_weight + o.delete_weight == 0) {
    throw Error(ErrorKind::InvalidArgument, "workload: the mix needs non-negative weights with a positive sum");
  }
  Table table;
  std::vector<Row> live;
  std::set<std::string> live_set;
  {
    ReadTxn r(engine.db());
    table = load_table(engine.db(), o.table);
    const auto key = table.key();
    if (key.empty())
      throw Error(ErrorKind::InvalidArgument, table.full_name() + " is a heap; the workload needs a primary key");
    for (const Column* k : key) {
      if (k->is_identity)
        throw Error(ErrorKind::InvalidArgument, table.full_name() + " is keyed on identity column " + k->name +
                                                    "; the workload draws its own keys, so key the table otherwise");
    }
    std::string sql = "SELECT ";
    for (std::size_t i = 0; i < key.size(); ++i) sql += (i ? ", " : "") + quote_ident(key[i]->name);
    auto st = engine.db().prepare(sql + " FROM " + table.storage() + " ORDER BY 1");
    while (st.step()) {
      Row k;
      for (std::size_t i = 0; i < key.size(); ++i)
        k.emplace_back(key[i]->name, Reader::to_value(st.cell(static_cast<int>(i)), key[i]->type));
      live_set.insert(key_text(k));
      live.push_back(std::move(k));
    }
  }
  const auto key = table.key();
  Xoshiro256 rng(o.seed);
  WorkloadResult res;
  Micros now = o.start ? *o.start : engine.last_time() + 1000;
  const Micros end = now + static_cast<Micros>(o.duration_seconds * 1e6);
  Micros last_event = now;
  Micros next_cleanup =
      o.cleanup_every_seconds > 0 ? now + static_cast<Micros>(o.cleanup_every_seconds * 1e6) : INT64_MAX;
  const Micros idle_gap = o.idle_every_seconds > 0 ? static_cast<Micros>(o.idle_every_seconds * 1e6) : 0;
  std::vector<std::vector<Change>> chunk;
  std::vector<std::optional<Micros>> times;
  auto flush = [&]() {
    if (chunk.empty()) return;
    const auto lsns = engine.commit_many(chunk, times);
    if (!res.first_lsn) res.first_lsn = lsns.front();
    res.last_lsn = lsns.back();
    chunk.clear();
    times.clear();
  };
  const int total_weight = o.insert_weight + o.update_weight + o.delete_weight;
  for (;;) {
    // Exponential gaps between commits: -ln(1 - u) / rate seconds.
    const double gap = -std::log(1.0 - rng.unit()) / o.rate;
    const Micros at = now + std::max<Micros>(1000, static_cast<Micros>(gap * 1e6));
    while (idle_gap > 0 && last_event + idle_gap < std::min(at, end)) {
      flush();
      last_event += idle_gap;
      engine.idle(last_event);
      ++res.idle_entries;
    }
    while (next_cleanup <= std::min(at, end)) {
      flush();
      engine.run_cleanup_job(std::nullopt);
      ++res.cleanups;
      next_cleanup += static_cast<Micros>(o.cleanup_every_seconds * 1e6);
    }
    if (at > end) break;
    now = at;
    const int ops = o.min_rows + static_cast<int>(rng.below(static_cast<std::uint64_t>(o.max_rows - o.min_rows + 1)));
    std::vector<Change> txn;
    for (int i = 0; i < ops; ++i) {
      const int pick = static_cast<int>(rng.below(static_cast<std::uint64_t>(total_weight)));
      if (pick < o.insert_weight || live.empty()) {
        Row k;
        for (int attempt = 0; attempt < 100; ++attempt) {
          k.clear();
          for (const Column* c : key) k.emplace_back(c->name, random_value(rng, c->type, true, now));
          if (live_set.count(key_text(k)) == 0) break;
        }
        if (live_set.count(key_text(k)) != 0) continue;
        Row row = k;
        for (const auto& c : table.columns) {
          if (generated(c)) continue;
          if (c.key_ordinal == 0) row.emplace_back(c.name, random_value(rng, c.type, false, now));
        }
        txn.push_back(Change{Change::Kind::Insert, table.full_name(), std::move(row), std::nullopt});
        live_set.insert(key_text(k));
        live.push_back(std::move(k));
        ++res.inserts;
      } else {
        const std::size_t idx = static_cast<std::size_t>(rng.below(live.size()));
        if (pick < o.insert_weight + o.update_weight) {
          Row row = live[idx];
          std::vector<const Column*> others;
          for (const auto& c : table.columns) {
            if (c.key_ordinal == 0 && !generated(c)) others.push_back(&c);
          }
          if (others.empty()) continue;
          const Column* c = others[rng.below(others.size())];
          row.emplace_back(c->name, random_value(rng, c->type, false, now));
          txn.push_back(Change{Change::Kind::Update, table.full_name(), std::move(row), std::nullopt});
          ++res.updates;
        } else {
          txn.push_back(Change{Change::Kind::Delete, table.full_name(), live[idx], std::nullopt});
          live_set.erase(key_text(live[idx]));
          live[idx] = std::move(live.back());
          live.pop_back();
          ++res.deletes;
        }
      }
    }
    if (txn.empty()) continue;
    chunk.push_back(std::move(txn));
    times.emplace_back(now);
    last_event = now;
    if (res.commits == 0) res.first_time = now;
    res.last_time = now;
    ++res.commits;
    if (static_cast<int>(chunk.size()) >= o.chunk) flush();
  }
  flush();
  return res;
}

}  // namespace mssqlcdc::emu
