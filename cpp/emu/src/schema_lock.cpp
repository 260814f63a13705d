// schema_lock.cpp: schema locks as open-file-description locks polled until a deadline, since
// fcntl's blocking wait has no timeout.
#include "schema_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

#ifdef F_OFD_SETLK
constexpr int kSetLock = F_OFD_SETLK;
#else
constexpr int kSetLock = F_SETLK;  // per process: two handles of one process never conflict
#endif

bool try_lock(int fd, std::int64_t object_id, SchemaLock::Mode mode) {
  struct flock fl;
  std::memset(&fl, 0, sizeof fl);
  fl.l_type = mode == SchemaLock::Mode::Shared ? F_RDLCK : F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = static_cast<off_t>(object_id);
  fl.l_len = 1;
  if (::fcntl(fd, kSetLock, &fl) == 0) return true;
  if (errno == EAGAIN || errno == EACCES || errno == EINTR) return false;
  throw Error(ErrorKind::Io, std::string("cannot lock a capture instance: ") + std::strerror(errno));
}

int open_lock_file(const std::filesystem::path& database) {
  const std::string file = database.string() + "-locks";
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(ErrorKind::Io, file + ": cannot open the schema lock file: " + std::strerror(errno));
  return fd;
}

}  // namespace

std::optional<SchemaLock> SchemaLock::try_take(const std::filesystem::path& database, std::int64_t object_id,
                                               Mode mode) {
  SchemaLock out;
  out.fd_ = open_lock_file(database);
  if (!try_lock(out.fd_, object_id, mode)) return std::nullopt;
  return out;
}

SchemaLock::SchemaLock(const std::filesystem::path& database, std::int64_t object_id, Mode mode,
                       std::int64_t timeout_ms) {
  fd_ = open_lock_file(database);
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::milliseconds(1);
  while (!try_lock(fd_, object_id, mode)) {
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    if (timeout_ms >= 0 && waited >= timeout_ms) {
      release();
      throw Error(ErrorKind::EmuBusy,
                  "Lock request time out period exceeded. (error 1222): " +
                      std::string(mode == Mode::Exclusive ? "a reader holds" : "a schema change holds") +
                      " the capture instance (object id " + std::to_string(object_id) + ") after " +
                      std::to_string(timeout_ms) + " ms; finish or close the open reads, or raise lock_timeout_ms",
                  1222);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

SchemaLock& SchemaLock::operator=(SchemaLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void SchemaLock::release() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::int64_t lock_timeout_ms(Db& db) { return std::stoll(get_setting(db, "lock_timeout_ms")); }

}  // namespace mssqlcdc::emu
