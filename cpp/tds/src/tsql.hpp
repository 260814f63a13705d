// tsql.hpp: the T-SQL the front end reads. A lexer turns text into tokens (words, bracketed or
// quoted names, N'..' strings, numbers, @variables, @@globals, symbols) and drops comments;
// statements are split at top-level semicolons. The recognizer in statements.hpp matches token
// shapes, so a literal pymssql inlined and a parameter ODBC bound are the same kind of operand.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mssqlcdc::tds {

enum class TokenKind { Word, QuotedName, String, UnicodeString, Number, Variable, Symbol };

struct SqlToken {
  TokenKind kind = TokenKind::Word;
  std::string text;  // strings unquoted and unescaped; names without brackets; symbols as written
  int line = 1;      // the batch line the token starts on, from 1 (ERROR_LINE reads it)

  // Case-insensitive keyword match; quoted names never match a keyword.
  [[nodiscard]] bool is(std::string_view word) const;
  [[nodiscard]] bool is_symbol(char c) const { return kind == TokenKind::Symbol && text.size() == 1 && text[0] == c; }
  [[nodiscard]] bool is_name() const { return kind == TokenKind::Word || kind == TokenKind::QuotedName; }
};

// Throws Error(Sql, 105) for an unclosed quotation mark, as SQL Server does.
[[nodiscard]] std::vector<SqlToken> lex(std::string_view sql);
// Top-level statements: split at ';' outside parentheses; empty statements are dropped.
[[nodiscard]] std::vector<std::vector<SqlToken>> split_statements(const std::vector<SqlToken>& tokens);
[[nodiscard]] std::string lower(std::string_view text);

}  // namespace mssqlcdc::tds
