// workload.hpp: the seeded OLTP workload generator behind `mssql-cdc emulator workload`.
// Randomness is xoshiro256** seeded through splitmix64 with its own value
// mappings (no std:: distributions), so seed, arguments and starting file fix the result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mssqlcdc/emu/engine.hpp"

namespace mssqlcdc::emu {

// The xoshiro256** generator: the same seed gives the same sequence on every platform. Not
// thread-safe.
class Xoshiro256 {
 public:
  // Seeds the four words of state from `seed` through splitmix64.
  explicit Xoshiro256(std::uint64_t seed);
  // The next 64 random bits.
  std::uint64_t next();
  std::uint64_t below(std::uint64_t n);  // uniform in [0, n), n > 0, without modulo bias
  double unit();                         // uniform in [0, 1) with 53 random bits

 private:
  std::uint64_t s_[4];
};

// What run_workload() generates: which table, how fast, for how long and which mix.
struct WorkloadOptions {
  std::string table;  // a table with a primary key that is not an identity column
  double rate = 10;   // commits per simulated second
  double duration_seconds = 60;
  std::optional<Micros> start;  // default: just after the emulator's last time
  std::uint64_t seed = 1;
  int insert_weight = 50, update_weight = 40, delete_weight = 10;  // the mix; non-negative, sum > 0
  int min_rows = 1, max_rows = 5;                                  // operations per commit
  double idle_every_seconds = 0;                                   // 0: no idle entries
  double cleanup_every_seconds = 0;                                // 0: no cleanup job runs
  int chunk = 1000;                                                // transactions per commit_many
};

// What a workload did: counts, and the times and LSNs of its first and last commits.
struct WorkloadResult {
  std::int64_t commits = 0;
  std::int64_t inserts = 0, updates = 0, deletes = 0;
  std::int64_t idle_entries = 0, cleanups = 0;
  Micros first_time = 0, last_time = 0;
  std::optional<Lsn> first_lsn, last_lsn;
};

// Commits random transactions on `options.table` through `engine` at simulated times with
// exponential gaps, about `rate` a second for `duration_seconds`, with idle entries and cleanup
// runs at their intervals. Throws
// InvalidArgument for options out of range (rate above 0 up to 1000, spans up to 366 days, at
// most 10000000 commits, 1 <= min_rows <= max_rows) or a table it cannot drive (a heap, an
// identity key), and what Engine::commit_many throws.
WorkloadResult run_workload(Engine& engine, const WorkloadOptions& options);

}  // namespace mssqlcdc::emu
