// file_pool.cpp: opening emulator files: open_file's checks and pragmas (format.hpp), and the
// process's idle read connections (file_pool.hpp).
#include "mssqlcdc/emu/file_pool.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

void set_pragmas(Db& db) {
  db.exec("PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY; PRAGMA mmap_size=268435456;");
}

std::unique_ptr<Db> open_file(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw Error(ErrorKind::FileNotFound, path.string() +
                                             " does not exist; create it with Emulator.create or "
                                             "'mssql-cdc emulator create'");
  }
  const std::string not_ours = path.string() +
                               " is not an mssql-cdc emulator file; create one with Emulator.create "
                               "or 'mssql-cdc emulator create'";
  auto db = std::make_unique<Db>(path, false);
  std::int64_t app = 0;
  std::int64_t version = 0;
  try {
    auto st = db->prepare("PRAGMA application_id");
    if (st.step()) app = st.i64(0);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::EmuFileFormat || e.kind() == ErrorKind::Io)
      throw Error(ErrorKind::EmuFileFormat, not_ours);
    throw;
  }
  if (app != kApplicationId) throw Error(ErrorKind::EmuFileFormat, not_ours);
  {
    auto st = db->prepare("PRAGMA user_version");
    if (st.step()) version = st.i64(0);
  }
  if (version > kFormatVersion) {
    throw Error(ErrorKind::EmuFormatVersion, path.string() + " has emulator format " + std::to_string(version) +
                                                 "; this mssql-cdc reads up to " + std::to_string(kFormatVersion) +
                                                 ": upgrade mssql-cdc");
  }
  if (version < 1) throw Error(ErrorKind::EmuFileFormat, not_ours);
  if (version < kFormatVersion) {
    throw Error(ErrorKind::EmuFormatVersion,
                path.string() + " has emulator format " + std::to_string(version) +
                    ", which stores time, datetime2 and datetimeoffset in microseconds; this mssql-cdc reads "
                    "format " +
                    std::to_string(kFormatVersion) + " (100-ns ticks): create the file again");
  }
  set_pragmas(*db);
  return db;
}

namespace {

struct FileId {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  bool operator==(const FileId&) const = default;
};

std::optional<FileId> file_id(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

// The idle read connections of this process, by file. Guarded, briefly: served connections
// read on threads of their own.
class IdleConnections {
 public:
  std::unique_ptr<Db> take_idle(const FileId& id, long process) {
    const std::lock_guard lock(mutex_);
    adopt_process(process);
    auto& idle = idle_[file_key(id)];
    if (idle.empty()) return nullptr;
    auto db = std::move(idle.back());
    idle.pop_back();
    return db;
  }
  void keep_idle(const FileId& id, long process, std::unique_ptr<Db> db) {
    const std::lock_guard lock(mutex_);
    adopt_process(process);
    auto& idle = idle_[file_key(id)];
    if (idle.size() < kPerFile) idle.push_back(std::move(db));
  }

 private:
  static constexpr std::size_t kPerFile = 8;
  static std::string file_key(const FileId& id) { return std::to_string(id.device) + ":" + std::to_string(id.inode); }
  // In a forked child every idle connection is the parent's: forget them without closing, as
  // closing could release locks the parent holds on the file.
  void adopt_process(long process) {
    if (process == pid_) return;
    for (auto& [file, idle] : idle_) {
      for (auto& db : idle) (void)db.release();
    }
    idle_.clear();
    pid_ = process;
  }
  std::mutex mutex_;
  long pid_ = static_cast<long>(::getpid());
  std::map<std::string, std::vector<std::unique_ptr<Db>>> idle_;
};

IdleConnections& idle_connections() {
  static IdleConnections pool;
  return pool;
}

}  // namespace

void ReturnToPool::operator()(Db* db) const {
  if (db == nullptr) return;
  // The parent's connection, let go in a forked child, is left open: closing it could release
  // locks the parent holds on the file.
  if (process != 0 && process != static_cast<long>(::getpid())) return;
  std::unique_ptr<Db> owned(db);
  if (process == 0 || owned->in_transaction()) return;  // not poolable: closed
  // An idle connection whose file is no longer at its path (deleted, replaced) is closed: it
  // keeps the old inode alive, so a new file never takes its identity while it is pooled.
  const auto now = file_id(owned->path());
  if (!now || *now != FileId{device, inode}) return;
  idle_connections().keep_idle(*now, process, std::move(owned));
}

PooledDb pooled_file(const std::filesystem::path& path) {
  const long process = static_cast<long>(::getpid());
  if (const auto id = file_id(path)) {
    if (auto db = idle_connections().take_idle(*id, process))
      return PooledDb(db.release(), {id->device, id->inode, process});
  }
  // Identify the file before opening it and check it after: a file replaced in between is not
  // pooled under either identity.
  const auto before = file_id(path);
  auto db = open_file(path);
  const auto after = file_id(path);
  if (!before || !after || *before != *after) return PooledDb(db.release(), {0, 0, 0});
  return PooledDb(db.release(), {after->device, after->inode, process});
}

}  // namespace mssqlcdc::emu
