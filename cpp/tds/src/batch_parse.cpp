// The batch's statement tree (batch.hpp). Control-of-flow follows Microsoft's pages: BEGIN...END
// (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/begin-end-transact-sql),
// IF...ELSE, WHILE with BREAK and CONTINUE, and TRY...CATCH
// (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/try-catch-transact-sql): each
// IF, ELSE and WHILE governs one statement, which may be a BEGIN ... END block.
#include "batch.hpp"

#include <string>

#include "builtins.hpp"

namespace mssqlcdc::tds {
namespace {

// How deeply blocks, IF, WHILE and TRY may nest in one batch (error 191 past it).
constexpr int kMaxBlockNesting = 128;

[[noreturn]] void syntax_error_at(const std::vector<SqlToken>& t, std::size_t at) {
  if (at >= t.size()) sql_error(102, "Incorrect syntax near '" + (t.empty() ? std::string(";") : t.back().text) + "'.");
  const bool block_word = t[at].is("END") || t[at].is("ELSE") || t[at].is("TRY") || t[at].is("CATCH");
  if (t[at].kind == TokenKind::Word && (is_keyword(t[at]) || block_word)) {
    sql_error(156, "Incorrect syntax near the keyword '" + t[at].text + "'.");
  }
  sql_error(102, "Incorrect syntax near '" + t[at].text + "'.");
}

bool word_at(const std::vector<SqlToken>& t, std::size_t i, std::string_view w) {
  return i < t.size() && t[i].kind == TokenKind::Word && t[i].is(w);
}

// BEGIN that opens a block: not BEGIN TRAN, BEGIN DISTRIBUTED, BEGIN TRY or BEGIN CATCH.
bool opens_block(const std::vector<SqlToken>& t, std::size_t i) {
  return word_at(t, i, "BEGIN") && !word_at(t, i + 1, "TRAN") && !word_at(t, i + 1, "TRANSACTION") &&
         !word_at(t, i + 1, "DISTRIBUTED") && !word_at(t, i + 1, "TRY") && !word_at(t, i + 1, "CATCH");
}

// Statements whose text may hold words that elsewhere start a statement (GRANT SELECT, ALTER
// DATABASE ... SET, CREATE VIEW ... AS SELECT, DROP TABLE IF EXISTS): only a semicolon,
// END, ELSE or a control-of-flow word ends them.
bool opaque_head(const SqlToken& head) {
  for (const char* w : {"CREATE", "ALTER", "DROP", "GRANT", "REVOKE", "DENY", "MERGE", "BACKUP", "RESTORE", "DBCC"}) {
    if (head.is(w)) return true;
  }
  return false;
}

bool control_word(const std::vector<SqlToken>& t, std::size_t i) {
  const SqlToken& x = t[i];
  if (x.is("IF")) return !(word_at(t, i + 1, "EXISTS") && !(i + 2 < t.size() && t[i + 2].is_symbol('(')));
  for (const char* w : {"WHILE", "DECLARE", "PRINT", "BREAK", "CONTINUE", "RAISERROR", "THROW", "RETURN", "USE",
                        "WAITFOR", "GOTO", "TRUNCATE"}) {
    if (x.is(w)) return true;
  }
  return opens_block(t, i) || word_at(t, i, "BEGIN");
}

// WITH name AS ( or WITH name ( columns ) AS (: a common table expression, not a table hint.
bool starts_cte(const std::vector<SqlToken>& t, std::size_t i) {
  if (!word_at(t, i, "WITH") || i + 1 >= t.size() || !t[i + 1].is_name()) return false;
  std::size_t k = i + 2;
  if (k < t.size() && t[k].is_symbol('(')) {
    while (k < t.size() && !t[k].is_symbol(')')) ++k;
    ++k;
  }
  return word_at(t, k, "AS") && k + 1 < t.size() && t[k + 1].is_symbol('(');
}

class BatchParser {
 public:
  explicit BatchParser(const std::vector<SqlToken>& t) : t_(t) {}

  std::vector<BatchNode> batch() {
    std::vector<BatchNode> out = list([](const std::vector<SqlToken>&, std::size_t) { return false; });
    if (i_ < t_.size()) syntax_error_at(t_, i_);
    return out;
  }

 private:
  template <typename Stop>
  std::vector<BatchNode> list(Stop stop) {
    std::vector<BatchNode> out;
    while (true) {
      skip_semicolons();
      if (i_ >= t_.size() || stop(t_, i_)) return out;
      if (word_at(t_, i_, "END") || word_at(t_, i_, "ELSE")) syntax_error_at(t_, i_);
      out.push_back(statement());
    }
  }

  void skip_semicolons() {
    while (i_ < t_.size() && t_[i_].is_symbol(';')) ++i_;
  }

  void expect_words(std::string_view a, std::string_view b) {
    if (!word_at(t_, i_, a)) syntax_error_at(t_, i_);
    if (!word_at(t_, i_ + 1, b)) syntax_error_at(t_, i_ + 1);
    i_ += 2;
  }

  BatchNode statement() {
    // Blocks, branches and loops nest by recursion here and when they run: bounded as the
    // query parser bounds parentheses, with SQL Server's error for a statement nested too deeply.
    struct Level {
      int& depth;
      explicit Level(int& d) : depth(d) {
        if (++depth > kMaxBlockNesting) {
          sql_error(191,
                    "Some part of your SQL statement is nested too deeply. Rewrite the query or break it up into "
                    "smaller queries.");
        }
      }
      ~Level() { --depth; }
      Level(const Level&) = delete;
      Level& operator=(const Level&) = delete;
    } level(depth_);
    skip_semicolons();
    if (i_ >= t_.size()) syntax_error_at(t_, i_);
    BatchNode n;
    if (word_at(t_, i_, "BEGIN") && word_at(t_, i_ + 1, "TRY")) {
      i_ += 2;
      n.kind = BatchNode::Kind::Try;
      n.body = list([](const auto& t, std::size_t i) { return word_at(t, i, "END") && word_at(t, i + 1, "TRY"); });
      expect_words("END", "TRY");
      skip_semicolons();
      expect_words("BEGIN", "CATCH");
      n.other = list([](const auto& t, std::size_t i) { return word_at(t, i, "END") && word_at(t, i + 1, "CATCH"); });
      expect_words("END", "CATCH");
      return n;
    }
    if (opens_block(t_, i_)) {
      ++i_;
      n.kind = BatchNode::Kind::Block;
      n.body = list([](const auto& t, std::size_t i) {
        return word_at(t, i, "END") && !word_at(t, i + 1, "TRY") && !word_at(t, i + 1, "CATCH");
      });
      if (!word_at(t_, i_, "END")) syntax_error_at(t_, i_);
      ++i_;
      return n;
    }
    if (word_at(t_, i_, "IF") || word_at(t_, i_, "WHILE")) {
      n.kind = word_at(t_, i_, "IF") ? BatchNode::Kind::If : BatchNode::Kind::While;
      ++i_;
      n.tokens = condition();
      n.body.push_back(statement());
      if (n.kind == BatchNode::Kind::If) {
        std::size_t k = i_;
        while (k < t_.size() && t_[k].is_symbol(';')) ++k;
        if (word_at(t_, k, "ELSE")) {
          i_ = k + 1;
          n.other.push_back(statement());
        }
      }
      return n;
    }
    if (word_at(t_, i_, "BREAK") || word_at(t_, i_, "CONTINUE")) {
      n.kind = word_at(t_, i_, "BREAK") ? BatchNode::Kind::Break : BatchNode::Kind::Continue;
      ++i_;
      return n;
    }
    n.tokens = simple();
    return n;
  }

  // An IF or WHILE condition: up to the first top-level word that starts a statement.
  std::vector<SqlToken> condition() {
    const std::size_t start = i_;
    int depth = 0;
    int cases = 0;
    for (; i_ < t_.size(); ++i_) {
      const SqlToken& x = t_[i_];
      if (x.is_symbol('(')) ++depth;
      if (x.is_symbol(')')) --depth;
      if (x.kind != TokenKind::Word) continue;
      if (x.is("CASE")) ++cases;
      if (x.is("END") && cases > 0) {
        --cases;
        continue;
      }
      if (depth == 0 && cases == 0 && i_ > start && (is_keyword(x) || x.is("END"))) break;
    }
    if (i_ == start || i_ >= t_.size()) syntax_error_at(t_, i_);
    return {t_.begin() + static_cast<std::ptrdiff_t>(start), t_.begin() + static_cast<std::ptrdiff_t>(i_)};
  }

  // One statement that is no control of flow: to a semicolon, a top-level END or ELSE (outside
  // a CASE), or a word that starts another statement.
  std::vector<SqlToken> simple() {
    const std::size_t start = i_;
    if (starts_transaction_statement(t_, i_)) {
      i_ += transaction_statement_length(t_, i_);
      return {t_.begin() + static_cast<std::ptrdiff_t>(start), t_.begin() + static_cast<std::ptrdiff_t>(i_)};
    }
    const SqlToken& head = t_[start];
    const bool opaque = opaque_head(head);
    // The statement's verb: its head, or for WITH the first SELECT/INSERT/UPDATE/DELETE after the CTEs.
    std::string verb = head.kind == TokenKind::Word && !head.is("WITH") ? lower(head.text) : "";
    bool set_seen = false;     // UPDATE's SET
    bool source_seen = false;  // INSERT's VALUES, SELECT, EXEC or DEFAULT VALUES
    int depth = 0;
    int cases = 0;
    // CREATE TABLE t (...) ends at its column list when a statement follows (decision 1436).
    const bool create_table = head.is("CREATE") && start + 1 < t_.size() && t_[start + 1].is("TABLE");
    bool list_closed = false;
    for (++i_; i_ < t_.size(); ++i_) {
      const SqlToken& x = t_[i_];
      if (x.is_symbol('(')) ++depth;
      if (x.is_symbol(')') && --depth == 0) list_closed = create_table;
      if (list_closed && depth == 0 && x.kind == TokenKind::Word && is_keyword(x)) break;
      if (depth != 0) continue;
      if (x.is_symbol(';')) break;
      if (x.kind != TokenKind::Word) continue;
      if (x.is("CASE")) {
        ++cases;
        continue;
      }
      if (x.is("END") && cases > 0) {
        --cases;
        continue;
      }
      if (cases > 0) continue;
      if (x.is("END") || x.is("ELSE") || starts_transaction_statement(t_, i_) || control_word(t_, i_)) break;
      if (opaque) continue;
      if (starts_cte(t_, i_)) break;
      const bool data = x.is("SELECT") || x.is("INSERT") || x.is("UPDATE") || x.is("DELETE");
      if (data && verb.empty()) {
        verb = lower(x.text);  // the statement a WITH's CTEs belong to
        continue;
      }
      if (x.is("SELECT")) {
        const SqlToken& before = t_[i_ - 1];
        if (before.is("UNION") || before.is("ALL") || before.is("EXCEPT") || before.is("INTERSECT")) continue;
        if (verb == "insert" && !source_seen) {
          source_seen = true;
          continue;
        }
        break;
      }
      if (x.is("VALUES") || x.is("DEFAULT")) source_seen = true;
      if (x.is("EXEC") || x.is("EXECUTE")) {
        if (verb == "insert" && !source_seen) {
          source_seen = true;
          continue;
        }
        break;
      }
      if (x.is("SET")) {
        if (verb == "update" && !set_seen) {
          set_seen = true;
          continue;
        }
        break;
      }
      if (data) break;
    }
    return {t_.begin() + static_cast<std::ptrdiff_t>(start), t_.begin() + static_cast<std::ptrdiff_t>(i_)};
  }

  const std::vector<SqlToken>& t_;
  std::size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

bool is_keyword(const SqlToken& t) {
  static const char* const kKeywords[] = {
      "SELECT",  "INSERT",  "UPDATE", "DELETE", "MERGE",      "CREATE",  "ALTER",    "DROP",    "IF",
      "WHILE",   "DECLARE", "BEGIN",  "COMMIT", "ROLLBACK",   "WITH",    "SET",      "USE",     "EXEC",
      "EXECUTE", "PRINT",   "RETURN", "GRANT",  "REVOKE",     "DENY",    "TRUNCATE", "WAITFOR", "RAISERROR",
      "THROW",   "OPEN",    "CLOSE",  "FETCH",  "DEALLOCATE", "DBCC",    "KILL",     "BULK",    "CHECKPOINT",
      "BACKUP",  "RESTORE", "SAVE",   "GOTO",   "BREAK",      "CONTINUE"};
  for (const char* k : kKeywords) {
    if (t.is(k)) return true;
  }
  return false;
}

bool starts_transaction_statement(const std::vector<SqlToken>& t, std::size_t i) {
  if (t[i].kind != TokenKind::Word) return false;
  if (t[i].is("COMMIT") || t[i].is("ROLLBACK")) return true;
  const bool tran = i + 1 < t.size() && (t[i + 1].is("TRAN") || t[i + 1].is("TRANSACTION"));
  return (t[i].is("BEGIN") || t[i].is("SAVE")) && tran;
}

std::size_t transaction_statement_length(const std::vector<SqlToken>& t, std::size_t i) {
  std::size_t n = 1;
  if (i + n < t.size() && (t[i + n].is("TRAN") || t[i + n].is("TRANSACTION") || t[i + n].is("WORK"))) ++n;
  if (i + n < t.size() && !t[i + 1].is("WORK")) {
    const SqlToken& name = t[i + n];
    if (name.kind == TokenKind::Variable || name.kind == TokenKind::QuotedName ||
        (name.kind == TokenKind::Word && !is_keyword(name) && !name.is("END") && !name.is("ELSE"))) {
      ++n;
    }
  }
  return n;
}

std::vector<BatchNode> parse_batch(const std::vector<SqlToken>& tokens) { return BatchParser(tokens).batch(); }

}  // namespace mssqlcdc::tds
