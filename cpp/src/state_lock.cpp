#include "mssqlcdc/state_lock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/json.hpp"
#include "posix_file.hpp"

namespace mssqlcdc::checkpoint {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::int64_t now_ms() {
  return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

[[noreturn]] void lock_io_error(const std::string& what, const fs::path& path, int err) {
  throw Error(ErrorKind::Io, what + " " + path.string() + ": " + std::strerror(err) +
                                 "; check the permissions of the checkpoint folder and that it has space");
}

// What a lock file says about its holder. A holder that crashed between its create and its
// write leaves an empty file: its age is then the file's modification time.
struct Holder {
  std::string text;  // the content as read: a takeover removes only what it judged stale
  std::optional<std::int64_t> pid;
  std::string host;
  std::optional<std::int64_t> at_ms;
  std::string token;
};

// std::nullopt when there is no lock file (any more).
std::optional<Holder> read_holder(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) return std::nullopt;
    lock_io_error("cannot read the lock file", file, err);
  }
  std::ostringstream body;
  body << in.rdbuf();
  Holder h;
  h.text = body.str();
  try {
    const json::Value doc = json::parse(h.text);
    if (doc.is_object()) {
      if (const json::Value* v = doc.find("pid")) h.pid = v->as_int64();
      if (const json::Value* v = doc.find("host"); v != nullptr && v->is_string()) h.host = v->as_string();
      if (const json::Value* v = doc.find("at_ms")) h.at_ms = v->as_int64();
      if (const json::Value* v = doc.find("token"); v != nullptr && v->is_string()) h.token = v->as_string();
    }
  } catch (const Error&) {
    // Half-written by a holder that crashed: judged by the file's age below.
  }
  if (!h.at_ms) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) return std::nullopt;
    h.at_ms = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
  }
  return h;
}

bool is_stale(const Holder& h, const LockTiming& timing, const std::string& host) {
  if (now_ms() - *h.at_ms > timing.stale_after.count()) return true;
  // A holder on this host whose process is gone crashed: no need to wait out the age limit.
  return h.pid && !host.empty() && h.host == host && ::kill(static_cast<pid_t>(*h.pid), 0) != 0 && errno == ESRCH;
}

std::string describe(const Holder& h) {
  const std::string who = h.pid ? "pid " + std::to_string(*h.pid) + " on host " + (h.host.empty() ? "?" : h.host)
                                : "a holder that wrote no pid";
  return who + ", taken " + std::to_string((now_ms() - *h.at_ms) / 1000) + " s ago";
}

// True when this call created the file; false when it exists.
bool try_create(const fs::path& file, const std::string& host, const std::string& token) {
  posix::Fd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    if (errno == EEXIST) return false;
    lock_io_error("cannot create the lock file", file, errno);
  }
  const std::string body =
      json::dump(json::Object{
          {"pid", static_cast<std::int64_t>(::getpid())}, {"host", host}, {"at_ms", now_ms()}, {"token", token}}) +
      "\n";
  int err = posix::write_all(fd.get(), body);
  if (err == 0 && ::fsync(fd.get()) != 0) err = errno;
  if (err == 0 && ::close(fd.release()) != 0) err = errno;
  if (err != 0) {
    ::unlink(file.c_str());
    lock_io_error("cannot write the lock file", file, err);
  }
  return true;
}

void take_over(const fs::path& file, const Holder& stale) {
  // Another waiter may have taken it over first and hold a fresh lock under the same name:
  // remove only the content judged stale. (The window between this read and the unlink is the
  // part no POSIX call closes; a critical section of milliseconds keeps it theoretical.)
  const auto now = read_holder(file);
  if (now && now->text == stale.text && ::unlink(file.c_str()) != 0 && errno != ENOENT) {
    lock_io_error("cannot remove the stale lock file", file, errno);
  }
}

}  // namespace

StateLock StateLock::acquire(const fs::path& checkpoint, const LockTiming& timing) {
  std::error_code ec;
  fs::create_directories(checkpoint, ec);
  if (ec) lock_io_error("cannot create the checkpoint folder", checkpoint, ec.value());
  const fs::path file = checkpoint / kLockFileName;
  const std::string host = host_name();
  const auto deadline = std::chrono::steady_clock::now() + timing.wait;
  milliseconds pause{5};
  for (;;) {
    const std::string token = posix::random_hex16();
    std::optional<Holder> holder;
    if (try_create(file, host, token)) {
      holder = read_holder(file);
      // On a mount whose exclusive create is not exclusive, the last writer holds the lock.
      if (holder && holder->token == token) return StateLock(file, token);
    } else {
      holder = read_holder(file);
      if (!holder) continue;  // released meanwhile
      if (is_stale(*holder, timing, host)) {
        take_over(file, *holder);
        continue;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw Error(ErrorKind::State,
                  file.string() + " is held by " + (holder ? describe(*holder) : std::string("another run")) +
                      ": another run is changing this stream's generation state. Run one job per stream; if no "
                      "run is active, the lock is taken over once it is " +
                      std::to_string(timing.stale_after.count() / 1000) + " s old, or delete the file");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, milliseconds{200});
  }
}

StateLock::StateLock(StateLock&& other) noexcept
    : file_(std::move(other.file_)), token_(std::exchange(other.token_, std::string())) {}

StateLock::~StateLock() {
  if (token_.empty()) return;
  try {
    const auto holder = read_holder(file_);
    if (holder && holder->token == token_) ::unlink(file_.c_str());
  } catch (const Error&) {
    // An unreadable lock file is left for the age limit to clear: a destructor cannot report.
  }
}

}  // namespace mssqlcdc::checkpoint
