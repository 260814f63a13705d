#include "statement_log.hpp"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "builtins.hpp"
#include "mssqlcdc/error.hpp"
#include "scalar_text.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {
namespace {

constexpr const char* kMask = "******";

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '@'; }

// The end of the quoted literal that starts at `at` ('...' with '' inside).
std::size_t literal_end(std::string_view s, std::size_t at) {
  for (std::size_t k = at + 1; k < s.size(); ++k) {
    if (s[k] != '\'') continue;
    if (k + 1 < s.size() && s[k + 1] == '\'') {
      ++k;
      continue;
    }
    return k + 1;
  }
  return s.size();
}

// One line: newlines and tabs escaped, so each event stays one line of the log.
std::string escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

bool is_password_name(const std::string& name) {
  const std::string n = lower(name);
  return n.find("password") != std::string::npos || n.find("passwd") != std::string::npos || n == "@pwd";
}

std::string value_text(const RpcParam& p) {
  if (is_null(p.value)) return "NULL";
  if (const auto* s = std::get_if<std::string>(&p.value)) return "N'" + mask_passwords(*s) + "'";
  // Bytes as SQL Server writes a binary literal: raw bytes would put NULs and line ends in the log.
  if (const auto* b = std::get_if<Bytes>(&p.value)) return scalar::hex(*b, true);
  try {
    return text_of(TypedValue{p.type, p.value}, 0);
  } catch (const std::exception&) {
    return "?";
  }
}

}  // namespace

std::string mask_passwords(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  bool mask_next = false;          // the next literal is a password
  bool mask_to_semicolon = false;  // inside sp_addlogin / sp_password
  for (std::size_t i = 0; i < sql.size();) {
    const char c = sql[i];
    if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {  // a line comment
      const std::size_t end = std::min(sql.find('\n', i), sql.size());
      out.append(sql.substr(i, end - i));
      i = end;
      continue;
    }
    if (c == '\'' ||
        ((c == 'N' || c == 'n') && i + 1 < sql.size() && sql[i + 1] == '\'' && (i == 0 || !word_char(sql[i - 1])))) {
      const std::size_t open = c == '\'' ? i : i + 1;
      const std::size_t end = literal_end(sql, open);
      if (mask_next || mask_to_semicolon) {
        out.append(sql.substr(i, open - i + 1));
        out += kMask;
        out += '\'';
      } else {
        out.append(sql.substr(i, end - i));
      }
      mask_next = false;
      i = end;
      continue;
    }
    if (word_char(c)) {
      std::size_t end = i;
      while (end < sql.size() && word_char(sql[end])) ++end;
      const std::string word = lower(sql.substr(i, end - i));
      if (mask_next && word.starts_with("0x")) {
        out += kMask;
        mask_next = false;
        i = end;
        continue;
      }
      mask_next = false;
      if (word.ends_with("password") || word.ends_with("passwd")) {
        // Masks the literal after "= " (or a bare one after the word, as sp_addlogin's @passwd).
        std::size_t k = end;
        while (k < sql.size() && std::isspace(static_cast<unsigned char>(sql[k])) != 0) ++k;
        if (k < sql.size() && sql[k] == '=') mask_next = true;
      }
      if (word == "sp_addlogin" || word == "sp_password") mask_to_semicolon = true;
      out.append(sql.substr(i, end - i));
      i = end;
      continue;
    }
    if (c == ';') mask_to_semicolon = false;
    if (mask_next && c != '=' && std::isspace(static_cast<unsigned char>(c)) == 0) mask_next = false;
    out += c;
    ++i;
  }
  return out;
}

StatementLog::StatementLog(const std::string& target) {
  if (target == "-") return;
  file_.reset(std::fopen(target.c_str(), "a"));
  if (!file_) {
    throw Error(ErrorKind::Io, "Cannot open the statement log '" + target + "': " + std::strerror(errno) +
                                   ". Give a file in a folder that exists and can be written, or - for stderr.");
  }
}

void StatementLog::line(std::uint16_t spid, const std::string& text) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[96];
  std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(ms));
  const std::string whole = std::string(stamp) + " spid " + std::to_string(spid) + " " + text + "\n";
  const std::lock_guard<std::mutex> lock(mutex_);
  std::FILE* f = file_ ? file_.get() : stderr;
  std::fputs(whole.c_str(), f);
  std::fflush(f);
}

void StatementLog::login(std::uint16_t spid, const std::string& user, const std::string& database) {
  line(spid, "login: user " + user + ", database " + database);
}

void StatementLog::batch(std::uint16_t spid, std::string_view sql) {
  line(spid, "batch: " + escaped(mask_passwords(sql)));
}

void StatementLog::rpc(std::uint16_t spid, const RpcCall& call) {
  std::string text = "rpc: " + call.procedure;
  for (std::size_t k = 0; k < call.params.size(); ++k) {
    const RpcParam& p = call.params[k];
    text += k == 0 ? " " : ", ";
    if (p.name.empty()) {
      text += '#';  // appended piecewise: GCC 12's -Wrestrict misreads "#" + std::string at -O3
      text += std::to_string(k + 1);
    } else {
      text += p.name;
    }
    text += "=";
    text += is_password_name(p.name) ? std::string(kMask) : value_text(p);
    if (p.output) text += " OUTPUT";
  }
  line(spid, escaped(text));
}

void StatementLog::error(std::uint16_t spid, const ServerMessage& m) {
  line(spid, escaped("error " + std::to_string(m.number) + ", severity " + std::to_string(m.severity) + ", state " +
                     std::to_string(m.state) + ": " + m.text));
}

}  // namespace mssqlcdc::tds
