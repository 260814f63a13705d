// A request's cancellation and memory bound; see watch.hpp.
#include "watch.hpp"

#include <string>
#include <utility>
#include <variant>

#include "builtins.hpp"

namespace mssqlcdc::tds {
namespace {

thread_local Watch* current = nullptr;

}  // namespace

Watch::Watch(std::function<bool()> stop, std::size_t memory, std::chrono::milliseconds poll_every)
    : stop_(std::move(stop)),
      memory_(memory),
      poll_every_(poll_every),
      last_poll_(std::chrono::steady_clock::now()),
      outer_(current) {
  current = this;
}

Watch::~Watch() { current = outer_; }

void checkpoint() {
  Watch* w = current;
  if (w == nullptr || (++w->calls_ & 0xFF) != 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - w->last_poll_ < w->poll_every_) return;
  w->last_poll_ = now;
  if (w->stop_ && w->stop_()) throw Cancelled{};
}

void hold(std::size_t bytes) {
  Watch* w = current;
  if (w == nullptr) return;
  w->held_ += bytes;
  if (w->held_ > w->memory_) {
    // MSSQLSERVER_701's text; the emulator has one pool, named as SQL Server's default one.
    sql_error(701, "There is insufficient system memory in resource pool 'default' to run this query.");
  }
  checkpoint();
}

std::size_t row_bytes(const std::vector<Value>& row) {
  std::size_t n = sizeof(row) + row.size() * sizeof(Value);
  for (const Value& v : row) {
    if (const auto* s = std::get_if<std::string>(&v)) n += s->capacity();
    if (const auto* b = std::get_if<Bytes>(&v)) n += b->capacity();
  }
  return n;
}

}  // namespace mssqlcdc::tds
