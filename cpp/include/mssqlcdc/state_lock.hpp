// state_lock.hpp: the short critical section around a change of the generation state file.
//
// A run changes <checkpoint>/_mssql_cdc_generation.json only under the lock file
// <checkpoint>/_mssql_cdc_generation.lock, created with O_EXCL, and holds it for a
// read-check-write of that one file: milliseconds, never a snapshot (decision 0615). The file
// holds {"pid", "host", "at_ms", "token"}. A lock older than `stale_after`, or left on this host
// by a process that no longer exists, is stale and taken over, so a crashed run never blocks
// the next one for longer than that. On a FUSE volume whose exclusive create is not exclusive,
// the holder reads its token back before it proceeds.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

namespace mssqlcdc::checkpoint {

inline constexpr const char* kLockFileName = "_mssql_cdc_generation.lock";

struct LockTiming {
  std::chrono::milliseconds wait{90'000};         // how long to wait for a live holder
  std::chrono::milliseconds stale_after{60'000};  // a lock older than this is a crashed run's
};

// Held from a successful acquire until destruction; the destructor removes the lock file only
// while it still holds this holder's token.
class StateLock {
 public:
  // Creates <checkpoint> if missing and takes the lock, waiting while another run holds it.
  // Throws Error(State) naming the file, its holder and its age when `timing.wait` passes,
  // Error(Io) when the lock file cannot be created or read.
  [[nodiscard]] static StateLock acquire(const std::filesystem::path& checkpoint, const LockTiming& timing = {});

  StateLock(StateLock&& other) noexcept;
  StateLock& operator=(StateLock&&) = delete;
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;
  ~StateLock();

 private:
  StateLock(std::filesystem::path file, std::string token) : file_(std::move(file)), token_(std::move(token)) {}
  std::filesystem::path file_;
  std::string token_;  // empty once moved from
};

}  // namespace mssqlcdc::checkpoint
