// watch.hpp: what one request may take of the server while it computes. The engine calls
// checkpoint() once per row it makes, joins, sorts or holds and hold() for each row it keeps;
// the Watch a session installs on its thread for the request turns those calls into a
// cancellation (the client sent ATTENTION or left, or the server is stopping) and a memory
// bound (SQL Server's error 701). Without a Watch on the thread both are free no-ops, so the
// engine runs as before inside tests and tools (decisions 1415, 1416). Internal to src/tds.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "mssqlcdc/tds/types.hpp"

namespace mssqlcdc::tds {

// Thrown by checkpoint() when the request must stop. Not a std::exception, so no handler that
// turns errors into SQL Server messages (or a T-SQL CATCH) takes it: it unwinds to the session,
// which answers DONE(ATTN). Cleanup that rethrows (catch (...)) still runs.
struct Cancelled {};

// The bytes a request may hold in rows it buffers (sorts, groups, join sides) before it fails
// with error 701: 256 MiB.
inline constexpr std::size_t kDefaultStatementMemory = std::size_t{256} << 20;

// A request's watch, installed on the calling thread for its lifetime (one at a time).
class Watch {
 public:
  // `stop` says whether the request must end now; it is asked at most every `poll_every` of
  // wall time (it may make a system call). `memory` bounds the bytes hold() counts.
  Watch(std::function<bool()> stop, std::size_t memory = kDefaultStatementMemory,
        std::chrono::milliseconds poll_every = std::chrono::milliseconds(20));
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  // Bytes counted by hold() so far.
  [[nodiscard]] std::size_t held() const { return held_; }

 private:
  friend void checkpoint();
  friend void hold(std::size_t bytes);
  std::function<bool()> stop_;
  std::size_t memory_;
  std::chrono::milliseconds poll_every_;
  std::chrono::steady_clock::time_point last_poll_;
  std::uint32_t calls_ = 0;
  std::size_t held_ = 0;
  Watch* outer_ = nullptr;
};

// A point where the running request may stop: throws Cancelled when the thread's Watch says so.
// Cheap: it reads the clock once per 256 calls.
void checkpoint();

// Counts `bytes` more held by the running request; throws error 701 past its Watch's bound.
void hold(std::size_t bytes);

// About what a row of values holds in memory: its slots and its strings' and binaries' bytes.
[[nodiscard]] std::size_t row_bytes(const std::vector<Value>& row);

}  // namespace mssqlcdc::tds
