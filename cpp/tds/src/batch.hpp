// batch.hpp: a T-SQL batch as a tree of statements, internal to src/tds. parse_batch() reads
// BEGIN ... END blocks, IF/ELSE, WHILE, BREAK, CONTINUE and BEGIN TRY ... END TRY BEGIN CATCH
// ... END CATCH, and cuts the statements between them at semicolons or, without one, where a
// word that can only start a statement begins (SELECT after a SET, PRINT after a SELECT...).
// statements.cpp runs the tree (Database::run); the statements themselves are read there.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "mssqlcdc/tds/types.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds {

// One statement of a batch.
struct BatchNode {
  enum class Kind { Simple, Block, If, While, Break, Continue, Try };
  Kind kind = Kind::Simple;
  std::vector<SqlToken> tokens;  // Simple: the statement; If and While: the condition
  std::vector<BatchNode> body;   // Block, Try: its statements; If: the branch taken; While: the loop's
  std::vector<BatchNode> other;  // If: the ELSE branch (none or one); Try: the CATCH block's statements
};

// The batch's statements. Throws SQL Server's 102 (156 at a keyword) for an END without a
// BEGIN, a BEGIN without its END, a TRY without its CATCH, or an IF or WHILE with no statement.
[[nodiscard]] std::vector<BatchNode> parse_batch(const std::vector<SqlToken>& tokens);

// Words that start a statement: a batch whose first word is none of them calls a procedure.
[[nodiscard]] bool is_keyword(const SqlToken& t);
// Whether a BEGIN/SAVE TRAN[SACTION], COMMIT or ROLLBACK statement starts at `i`.
[[nodiscard]] bool starts_transaction_statement(const std::vector<SqlToken>& t, std::size_t i);
// How many tokens the transaction statement at `i` takes: its word, TRAN/TRANSACTION/WORK,
// then a name or @variable when one follows.
[[nodiscard]] std::size_t transaction_statement_length(const std::vector<SqlToken>& t, std::size_t i);

// RAISERROR's message from its format and arguments: printf's % [flags] [width] [.precision]
// [h|l] type for d, i, u, o, x, X and s, * widths and precisions, %% for a percent sign; a
// missing or NULL argument prints "(null)". Throws 50000 for a number conversion of a string.
[[nodiscard]] std::string format_raiserror(const std::string& format, const std::vector<Value>& args);

}  // namespace mssqlcdc::tds
