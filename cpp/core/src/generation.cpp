#include "mssqlcdc/generation.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/utc_time.hpp"
#include "posix_file.hpp"

namespace mssqlcdc::checkpoint {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRepair =
    "; restore the file or correct it by hand; deleting it would restart generation 0 under an "
    "app_id whose batches exist";

[[noreturn]] void corrupt(const std::string& origin, const std::string& defect) {
  throw Error(ErrorKind::Corrupt, origin + ": " + defect + kRepair);
}

bool is_commit_ts(const std::string& text) {
  return text.empty() || utc::parse_millis(text, utc::Zone::Forbidden).has_value();
}

bool is_instant(const std::string& text) { return utc::parse_millis(text, utc::Zone::Required).has_value(); }

json::Value offset_to_json(const Offset& offset) {
  return json::Object{{"lsn", offset.lsn.to_string()}, {"commit_ts", offset.commit_ts}};
}

const json::Value* member(const json::Value& doc, const char* key) {
  const json::Value* v = doc.find(key);
  return v != nullptr && !v->is_null() ? v : nullptr;
}

std::string string_member(const json::Value& v, const char* key, const std::string& origin) {
  if (!v.is_string()) {
    corrupt(origin, std::string("\"") + key + "\" is " + v.type_name() + ", expected a string");
  }
  return v.as_string();
}

// Stored LSNs are written in full, so a short or unprefixed one was not written by this library.
bool is_stored_lsn(const std::string& text) {
  return text.size() == 22 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X') &&
         text.find_first_not_of("0123456789abcdefABCDEF", 2) == std::string::npos;
}

Lsn lsn_member(const json::Value& v, const char* key, const std::string& origin) {
  const std::string text = string_member(v, key, origin);
  if (!is_stored_lsn(text)) {
    corrupt(origin, std::string("\"") + key + "\" " + json::quote(text) + " is not an LSN (0x + 20 hex digits)");
  }
  return Lsn::parse(text);
}

std::string commit_ts_member(const json::Value& v, const char* key, const std::string& origin) {
  std::string text = string_member(v, key, origin);
  if (!is_commit_ts(text)) {
    corrupt(origin, std::string("\"") + key + "\" " + json::quote(text) +
                        " is not a commit time (YYYY-MM-DDTHH:MM:SS.mmm, or \"\" when unknown)");
  }
  return text;
}

std::string instant_member(const json::Value& v, const char* key, const std::string& origin) {
  std::string text = string_member(v, key, origin);
  if (!is_instant(text)) {
    corrupt(origin,
            std::string("\"") + key + "\" " + json::quote(text) + " is not a UTC time (YYYY-MM-DDTHH:MM:SS+00:00)");
  }
  return text;
}

// Removes the temporary file unless the rename consumed it.
class TempFile {
 public:
  explicit TempFile(fs::path path) : path_(std::move(path)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  [[nodiscard]] const fs::path& path() const { return path_; }
  void committed() { path_.clear(); }

 private:
  fs::path path_;
};

[[noreturn]] void io_error(const std::string& what, const fs::path& path, int err) {
  throw Error(ErrorKind::Io, what + " " + path.string() + ": " + std::strerror(err) +
                                 "; check the permissions of the checkpoint folder and that it has space");
}

std::string strip_trailing_slashes(std::string text) {
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

}  // namespace

void validate_state(const State& s) {
  auto bad = [](const std::string& why) { throw Error(ErrorKind::InvalidArgument, "generation state " + why); };
  if (s.generation < 0) bad("has generation " + std::to_string(s.generation) + "; it must be >= 0");
  if (s.generation > 0 && (!s.snapshot || !s.at)) {
    bad("of generation " + std::to_string(s.generation) + " needs snapshot_lsn, commit_ts and at");
  }
  if (s.generation == 0 && (s.snapshot || s.at)) {
    bad("of generation 0 holds only generation, recovering and failed_at");
  }
  if (s.snapshot && !is_commit_ts(s.snapshot->commit_ts)) {
    bad("commit_ts '" + s.snapshot->commit_ts + "' is not YYYY-MM-DDTHH:MM:SS.mmm or empty");
  }
  if (s.recovering && !is_commit_ts(s.recovering->commit_ts)) {
    bad("recovering commit_ts '" + s.recovering->commit_ts + "' is not YYYY-MM-DDTHH:MM:SS.mmm or empty");
  }
  if (s.at && !is_instant(*s.at)) bad("at '" + *s.at + "' is not YYYY-MM-DDTHH:MM:SS+00:00");
  if (s.failed_at && !is_instant(*s.failed_at)) {
    bad("failed_at '" + *s.failed_at + "' is not YYYY-MM-DDTHH:MM:SS+00:00");
  }
}

json::Value state_to_json(const State& s) {
  validate_state(s);
  json::Object doc{{"generation", s.generation}};
  if (s.snapshot) {
    doc.emplace_back("snapshot_lsn", s.snapshot->lsn.to_string());
    doc.emplace_back("commit_ts", s.snapshot->commit_ts);
  }
  if (s.at) doc.emplace_back("at", *s.at);
  if (s.recovering) doc.emplace_back("recovering", offset_to_json(*s.recovering));
  if (s.failed_at) doc.emplace_back("failed_at", *s.failed_at);
  return doc;
}

State state_from_json(const json::Value& doc, const std::string& origin) {
  if (!doc.is_object()) corrupt(origin, std::string("holds ") + doc.type_name() + ", not a JSON object");
  // Unknown keys are ignored and not written back, so an older reader is not refused by a newer
  // file, nor a newer reader by an older one (decision 0616).
  State s;
  const json::Value* gen = doc.find("generation");
  if (gen == nullptr) corrupt(origin, "has no \"generation\"");
  const auto g = gen->as_int64();
  if (!g || *g < 0 || *g > 1'000'000'000) {
    const std::string shown = gen->is_number() ? gen->as_number().text : json::dump(*gen);
    corrupt(origin, "\"generation\" is " + shown + ", not a non-negative integer");
  }
  s.generation = static_cast<int>(*g);

  const json::Value* lsn = member(doc, "snapshot_lsn");
  const json::Value* ts = doc.find("commit_ts");
  const json::Value* at = member(doc, "at");
  if (s.generation > 0) {
    const std::string gen_text = "generation " + std::to_string(s.generation);
    if (lsn == nullptr) corrupt(origin, gen_text + " has no \"snapshot_lsn\"");
    if (ts == nullptr || ts->is_null()) corrupt(origin, gen_text + " has no \"commit_ts\"");
    if (at == nullptr) corrupt(origin, gen_text + " has no \"at\"");
    s.snapshot = Offset{lsn_member(*lsn, "snapshot_lsn", origin), commit_ts_member(*ts, "commit_ts", origin)};
    s.at = instant_member(*at, "at", origin);
  } else if (lsn != nullptr || at != nullptr) {
    corrupt(origin, "generation 0 has \"snapshot_lsn\" or \"at\"; only a generation above 0 starts at a snapshot");
  }

  if (const json::Value* rec = member(doc, "recovering")) {
    if (!rec->is_object())
      corrupt(origin, std::string("\"recovering\" is ") + rec->type_name() + ", expected an offset object");
    const json::Value* rl = rec->find("lsn");
    const json::Value* rt = rec->find("commit_ts");
    if (rl == nullptr || rt == nullptr) corrupt(origin, "\"recovering\" needs \"lsn\" and \"commit_ts\"");
    s.recovering =
        Offset{lsn_member(*rl, "recovering.lsn", origin), commit_ts_member(*rt, "recovering.commit_ts", origin)};
  }
  if (const json::Value* failed = member(doc, "failed_at")) s.failed_at = instant_member(*failed, "failed_at", origin);
  return s;
}

std::optional<State> read_state(const fs::path& checkpoint) {
  const fs::path file = checkpoint / kStateFileName;
  std::error_code kind_ec;
  if (fs::exists(file, kind_ec) && !fs::is_regular_file(file, kind_ec)) io_error("cannot read", file, EISDIR);
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    const int err = errno;
    std::error_code ec;
    if (!fs::exists(file, ec) && !ec) return std::nullopt;
    io_error("cannot read", file, err);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) io_error("cannot read", file, EIO);
  json::Value doc;
  try {
    doc = json::parse(text.str());
  } catch (const Error& e) {
    corrupt(file.string(), std::string("is not valid JSON (") + e.what() + ")");
  }
  return state_from_json(doc, file.string());
}

namespace {

// The atomic replace: a complete temporary file renamed over the state file.
void write_atomically(const fs::path& checkpoint, const std::string& body) {
  std::error_code ec;
  fs::create_directories(checkpoint, ec);
  if (ec) io_error("cannot create the checkpoint folder", checkpoint, ec.value());
  const fs::path target = checkpoint / kStateFileName;
  TempFile temp(checkpoint / (std::string(kStateFileName) + "." + posix::random_hex16() + ".tmp"));
  {
    posix::Fd fd(::open(temp.path().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (fd.get() < 0) io_error("cannot create", temp.path(), errno);
    if (const int err = posix::write_all(fd.get(), body); err != 0) io_error("cannot write", temp.path(), err);
    if (::fsync(fd.get()) != 0) io_error("cannot fsync", temp.path(), errno);
    if (::close(fd.release()) != 0) io_error("cannot close", temp.path(), errno);
  }
  if (::rename(temp.path().c_str(), target.c_str()) != 0) io_error("cannot rename over", target, errno);
  temp.committed();
  // Makes the rename durable; FUSE mounts may refuse a directory fsync, and the file is
  // already complete under its name either way.
  posix::Fd dir(::open(checkpoint.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) (void)::fsync(dir.get());
}

std::string state_body(const State& state) { return json::dump(state_to_json(state)) + "\n"; }

}  // namespace

void write_state(const fs::path& checkpoint, const State& state) {
  const std::string body = state_body(state);  // an invalid state is refused before any file is touched
  write_atomically(checkpoint, body);
}

bool replace_state(const fs::path& checkpoint, const State& expected, const State& next) {
  const std::string body = state_body(next);
  // No file and a bare generation 0 mean the same stream, so they compare equal.
  if (read_state(checkpoint).value_or(State{}) != expected) return false;
  write_atomically(checkpoint, body);
  return true;
}

GenerationPaths generation_paths(const std::string& checkpoint, const std::string& app_id, int generation,
                                 const std::optional<std::string>& metrics_path) {
  if (checkpoint.empty())
    throw Error(ErrorKind::InvalidArgument, "checkpoint is empty; pass the stream's checkpoint folder");
  if (app_id.empty()) throw Error(ErrorKind::InvalidArgument, "app_id is empty; pass the stream's app_id");
  if (generation < 0) {
    throw Error(ErrorKind::InvalidArgument, "generation " + std::to_string(generation) + " is negative");
  }
  const std::string root = strip_trailing_slashes(checkpoint);
  const std::string sep = root == "/" ? "" : "/";
  GenerationPaths p;
  p.generation = generation;
  p.checkpoint = generation == 0 ? root : root + sep + "_generations/" + std::to_string(generation);
  p.app_id = generation == 0 ? app_id : app_id + ".g" + std::to_string(generation);
  if (metrics_path && !metrics_path->empty()) {
    const std::string m = strip_trailing_slashes(*metrics_path);
    p.metrics_path = m + (m == "/" ? "" : "/") + p.app_id;
  } else {
    p.metrics_path = p.checkpoint + (p.checkpoint == "/" ? "" : "/") + "_mssql_cdc_metrics";
  }
  p.state_file = root + sep + kStateFileName;
  return p;
}

bool in_family(const std::string& a, const std::string& app_id, int generation) {
  if (generation < 0) return false;
  if (generation == 0) return a == app_id;
  return a == app_id + ".g" + std::to_string(generation);
}

}  // namespace mssqlcdc::checkpoint
