// io_stats.cpp: the read tallies (decision 1411).
#include "mssqlcdc/emu/io_stats.hpp"

#include <system_error>
#include <utility>

namespace mssqlcdc::emu {

void IoTally::start(const std::string& table, bool seek) {
  const std::lock_guard lock(mutex_);
  TableIo& t = tables_[table];
  ++(seek ? t.seeks : t.scans);
}

void IoTally::rows(const std::string& table, std::int64_t n) {
  const std::lock_guard lock(mutex_);
  tables_[table].rows_read += n;
}

IoByTable IoTally::totals() const {
  const std::lock_guard lock(mutex_);
  return tables_;
}

void IoTally::clear() {
  const std::lock_guard lock(mutex_);
  tables_.clear();
}

IoRead::IoRead(IoTallies tallies, std::string table, bool seek)
    : tallies_(std::move(tallies)), table_(std::move(table)) {
  for (const auto& t : tallies_) {
    if (t) t->start(table_, seek);
  }
}

void IoRead::rows(std::int64_t n) const {
  if (n == 0) return;
  for (const auto& t : tallies_) {
    if (t) t->rows(table_, n);
  }
}

std::shared_ptr<IoTally> file_io(const std::filesystem::path& path) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<IoTally>> files;
  std::error_code error;
  std::filesystem::path canonical = std::filesystem::weakly_canonical(path, error);
  if (error) canonical = std::filesystem::absolute(path);
  const std::lock_guard lock(mutex);
  auto& tally = files[canonical.string()];
  if (!tally) tally = std::make_shared<IoTally>();
  return tally;
}

}  // namespace mssqlcdc::emu
