#include "mssqlcdc/checkpoint.hpp"

#include <dirent.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/json.hpp"
#include "mssqlcdc/utc_time.hpp"

namespace mssqlcdc::checkpoint {
namespace {

namespace fs = std::filesystem;

// Spark names log files by batch id alone; anything else in the folder (".0.crc", "0.tmp",
// ".0.<uuid>.tmp" from an interrupted rename, editor backups) is not a log entry.
std::optional<std::int64_t> batch_id_of(std::string_view name) {
  if (name.empty()) return std::nullopt;
  for (const char c : name) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  std::int64_t id = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
  if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  return id;
}

struct CloseDir {
  void operator()(DIR* d) const noexcept { ::closedir(d); }
};
using DirHandle = std::unique_ptr<DIR, CloseDir>;

// A line of the offset log as a message quotes it: a junk line can be megabytes long.
std::string excerpt(std::string_view text) {
  constexpr std::size_t kShown = 80;
  if (text.size() <= kShown) return std::string(text);
  return std::string(text.substr(0, kShown)) + "...(" + std::to_string(text.size()) + " bytes)";
}

[[noreturn]] void corrupt_checkpoint(const std::string& file, const std::string& defect) {
  throw Error(ErrorKind::Corrupt, "corrupt checkpoint: " + file + " " + defect +
                                      "; Spark cannot resume from it either: restore the checkpoint, or start a new "
                                      "checkpoint with a new app_id");
}

}  // namespace

std::optional<LastOffset> last_committed_offset(const fs::path& spark_dir) {
  const fs::path commits = spark_dir / "commits";
  // readdir on the raw names: no path object per entry, so the scan costs about what the
  // kernel's listing does (B3); commits/ may hold thousands of batches.
  const DirHandle dir(::opendir(commits.c_str()));
  if (!dir) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    throw Error(ErrorKind::Io, "cannot list " + commits.string() + ": " + std::strerror(errno) +
                                   "; check that the checkpoint is readable from this process");
  }
  std::optional<std::int64_t> highest;
  errno = 0;
  while (const dirent* entry = ::readdir(dir.get())) {
    const auto id = batch_id_of(entry->d_name);
    if (id && (!highest || *id > *highest)) highest = id;
  }
  if (errno != 0) {
    throw Error(ErrorKind::Io, "cannot list " + commits.string() + ": " + std::strerror(errno) +
                                   "; check that the checkpoint is readable from this process");
  }
  if (!highest) return std::nullopt;

  const fs::path file = spark_dir / "offsets" / std::to_string(*highest);
  std::ifstream in(file, std::ios::binary);
  if (!in) corrupt_checkpoint(file.string(), "is missing although batch " + std::to_string(*highest) + " is committed");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  if (text.empty()) corrupt_checkpoint(file.string(), "is empty");

  std::string_view rest = text;
  auto next_line = [&rest]() -> std::optional<std::string_view> {
    if (rest.empty()) return std::nullopt;
    const std::size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    return line;
  };
  const std::string_view version = *next_line();
  if (version != "v1") {
    const bool looks_like_version = version.size() >= 2 && version[0] == 'v' &&
                                    version.find_first_not_of("0123456789", 1) == std::string_view::npos;
    if (!looks_like_version) corrupt_checkpoint(file.string(), "does not start with a version line such as 'v1'");
    throw Error(ErrorKind::InvalidArgument,
                "offset log version '" + excerpt(version) + "' in " + file.string() +
                    ": the pre-flight reads Spark's offset log format v1 only; run this stream with "
                    "on_data_loss='fail', or start a new checkpoint and app_id with "
                    "spark.sql.streaming.offsetLog.formatVersion=1");
  }
  if (!next_line()) corrupt_checkpoint(file.string(), "has no batch metadata line");
  const auto source = next_line();
  if (!source || source->empty()) corrupt_checkpoint(file.string(), "has no source offset on line 3");
  if (*source == "-") corrupt_checkpoint(file.string(), "has no offset for the source ('-' on line 3)");
  return LastOffset{*highest, std::string(*source), file.string()};
}

bool has_metadata(const fs::path& spark_dir) {
  std::error_code ec;
  return fs::is_regular_file(spark_dir / "metadata", ec);
}

Offset parse_source_offset(std::string_view json_text, const std::string& origin) {
  auto bad = [&origin, json_text](const std::string& why) -> Error {
    return Error(ErrorKind::Corrupt, origin + ": the source offset " + excerpt(json_text) + " " + why +
                                         "; it must be {\"lsn\": \"0x...\", \"commit_ts\": \"...\"} as this library's "
                                         "source writes it: was the checkpoint written by another source?");
  };
  json::Value doc;
  try {
    doc = json::parse(json_text);
  } catch (const Error& e) {
    throw bad(std::string("is not valid JSON (") + e.what() + ")");
  }
  if (!doc.is_object()) throw bad("is not a JSON object");
  const json::Value* lsn = doc.find("lsn");
  const json::Value* ts = doc.find("commit_ts");
  if (lsn == nullptr || ts == nullptr || doc.as_object().size() != 2) {
    throw bad("does not have exactly the keys lsn and commit_ts");
  }
  if (!lsn->is_string() || !ts->is_string()) throw bad("has a value that is not a string");
  Offset out;
  try {
    out.lsn = Lsn::parse(lsn->as_string());
  } catch (const Error&) {
    throw bad("has an lsn that is not an LSN");
  }
  out.commit_ts = ts->as_string();
  if (!out.commit_ts.empty() && !utc::parse_millis(out.commit_ts, utc::Zone::Forbidden)) {
    throw bad("has a commit_ts that is not YYYY-MM-DDTHH:MM:SS.mmm");
  }
  return out;
}

std::string source_offset_json(const Offset& offset) {
  // The spacing of Python's json.dumps, which is how the source writes its offsets.
  return "{\"lsn\": " + json::quote(offset.lsn.to_string()) + ", \"commit_ts\": " + json::quote(offset.commit_ts) + "}";
}

}  // namespace mssqlcdc::checkpoint
