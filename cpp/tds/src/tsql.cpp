#include "tsql.hpp"

#include <algorithm>

#include <cctype>

#include "mssqlcdc/error.hpp"
#include "mssqlcdc/tds/wire.hpp"

namespace mssqlcdc::tds {
namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '#' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool ident_char(char c) {
  return ident_start(c) || std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '$' || c == '@';
}

// Reads a quoted run that ends at `close`, where a doubled `close` stands for one.
std::string quoted(std::string_view sql, std::size_t& i, char close) {
  std::string out;
  ++i;
  while (i < sql.size()) {
    if (sql[i] == close) {
      if (i + 1 < sql.size() && sql[i + 1] == close) {
        out.push_back(close);
        i += 2;
        continue;
      }
      ++i;
      return out;
    }
    out.push_back(sql[i++]);
  }
  throw Error(ErrorKind::Sql, "Unclosed quotation mark after the character string '" + out + "'.", 105);
}

// An identifier (a name, bracketed or double-quoted, or a variable) holds at most 128
// characters; a longer one is error 103, quoting its first 128 (Database identifiers:
// https://learn.microsoft.com/en-us/sql/relational-databases/databases/database-identifiers).
std::string identifier(std::string name) {
  constexpr std::size_t kMax = 128;
  if (utf16_units(name) > kMax) {
    std::size_t at = 0;
    for (std::size_t units = 0; at < name.size() && units < kMax; ++units) {
      const auto lead = static_cast<unsigned char>(name[at]);
      at += lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    }
    throw Error(ErrorKind::Sql,
                "The identifier that starts with '" + name.substr(0, at) + "' is too long. Maximum length is 128.",
                103);
  }
  return name;
}

}  // namespace

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool SqlToken::is(std::string_view word) const { return kind == TokenKind::Word && lower(text) == lower(word); }

std::vector<SqlToken> lex(std::string_view sql) {
  std::vector<SqlToken> out;
  std::size_t i = 0;
  std::size_t counted = 0;  // newlines are counted up to here
  int line = 1;
  while (i < sql.size()) {
    const char c = sql[i];
    const std::size_t start = i, tokens = out.size();
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++i;
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      while (i < sql.size() && sql[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < sql.size() && sql[i + 1] == '*') {
      const std::size_t end = sql.find("*/", i + 2);
      i = end == std::string_view::npos ? sql.size() : end + 2;
    } else if ((c == 'N' || c == 'n') && i + 1 < sql.size() && sql[i + 1] == '\'') {
      ++i;
      out.push_back({TokenKind::UnicodeString, quoted(sql, i, '\'')});
    } else if (c == '\'') {
      out.push_back({TokenKind::String, quoted(sql, i, '\'')});
    } else if (c == '[') {
      out.push_back({TokenKind::QuotedName, identifier(quoted(sql, i, ']'))});
    } else if (c == '"') {
      out.push_back({TokenKind::QuotedName, identifier(quoted(sql, i, '"'))});
    } else if (c == '@') {
      std::size_t j = i + 1;
      if (j < sql.size() && sql[j] == '@') ++j;
      while (j < sql.size() && ident_char(sql[j])) ++j;
      out.push_back({TokenKind::Variable, identifier(std::string(sql.substr(i, j - i)))});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c)) != 0 ||
               (c == '.' && i + 1 < sql.size() && std::isdigit(static_cast<unsigned char>(sql[i + 1])) != 0)) {
      std::size_t j = i;
      while (j < sql.size() && (std::isalnum(static_cast<unsigned char>(sql[j])) != 0 || sql[j] == '.')) ++j;
      out.push_back({TokenKind::Number, std::string(sql.substr(i, j - i))});
      i = j;
    } else if (ident_start(c)) {
      std::size_t j = i;
      while (j < sql.size() && ident_char(sql[j])) ++j;
      out.push_back({TokenKind::Word, identifier(std::string(sql.substr(i, j - i)))});
      i = j;
    } else {
      out.push_back({TokenKind::Symbol, std::string(1, c)});
      ++i;
    }
    if (out.size() > tokens) {  // a token began at `start`: stamp the line it starts on
      line += static_cast<int>(std::count(sql.begin() + static_cast<std::ptrdiff_t>(counted),
                                          sql.begin() + static_cast<std::ptrdiff_t>(start), '\n'));
      counted = start;
      out.back().line = line;
    }
  }
  return out;
}

std::vector<std::vector<SqlToken>> split_statements(const std::vector<SqlToken>& tokens) {
  std::vector<std::vector<SqlToken>> out(1);
  int depth = 0;
  for (const SqlToken& t : tokens) {
    if (t.is_symbol('(')) ++depth;
    if (t.is_symbol(')')) --depth;
    if (depth == 0 && t.is_symbol(';')) {
      out.emplace_back();
      continue;
    }
    out.back().push_back(t);
  }
  std::erase_if(out, [](const auto& s) { return s.empty(); });
  return out;
}

}  // namespace mssqlcdc::tds
