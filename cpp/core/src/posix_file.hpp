// posix_file.hpp: the POSIX file pieces of the state file's atomic write (internal to src/).
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <random>
#include <string>
#include <string_view>
#include <utility>

namespace mssqlcdc::posix {

// A file descriptor owned from birth; closing twice is impossible.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Writes all of `body`; returns 0, or the errno of the write that failed.
inline int write_all(int fd, std::string_view body) {
  std::size_t done = 0;
  while (done < body.size()) {
    const ssize_t n = ::write(fd, body.data() + done, body.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

// 16 random lower-case hex digits: names of temporary files, tokens of lock holders.
inline std::string random_hex16() {
  std::random_device rd;
  std::uniform_int_distribution<unsigned> nibble(0, 15);
  std::string out;
  for (int i = 0; i < 16; ++i) out.push_back("0123456789abcdef"[nibble(rd)]);
  return out;
}

}  // namespace mssqlcdc::posix
