// write_values.cpp: see write_values.hpp (decision 1436).
#include "write_values.hpp"

#include <string>

namespace mssqlcdc::tds {
namespace {

bool plain(const std::vector<SqlToken>& e) {
  if (e.size() == 1) {
    const SqlToken& x = e[0];
    return x.kind == TokenKind::String || x.kind == TokenKind::UnicodeString || x.kind == TokenKind::Number ||
           x.kind == TokenKind::Variable || x.is("NULL") || x.is("DEFAULT");
  }
  return e.size() == 2 && (e[0].is_symbol('-') || e[0].is_symbol('+')) && e[1].kind == TokenKind::Number;
}

class Binder {
 public:
  Binder(const std::vector<SqlToken>& t, Params& params, const Evaluate& evaluate)
      : t_(t), params_(params), evaluate_(evaluate) {}

  std::vector<SqlToken> run() {
    const bool insert = !t_.empty() && t_[0].is("INSERT");
    const bool update = !t_.empty() && t_[0].is("UPDATE");
    int depth = 0;
    bool in_values = false;
    bool in_set = false;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const SqlToken& x = t_[i];
      if (depth == 0 && insert && x.is("VALUES")) in_values = true;
      if (depth == 0 && update && x.is("SET")) in_set = true;
      if (depth == 0 && update && (x.is("WHERE") || x.is("FROM") || x.is("OUTPUT"))) in_set = false;
      if (in_values && depth == 0 && x.is_symbol('(')) {
        // One tuple: items between commas up to its closing parenthesis.
        out_.push_back(x);
        i = items(i + 1, true);
        if (i < t_.size()) out_.push_back(t_[i]);  // ')'
        continue;
      }
      if (in_set && depth == 0 && x.is_symbol('=')) {
        out_.push_back(x);
        i = items(i + 1, false) - 1;
        continue;
      }
      if (x.is_symbol('(')) ++depth;
      if (x.is_symbol(')')) --depth;
      out_.push_back(x);
    }
    return std::move(out_);
  }

 private:
  // Copies the expressions from `at` (one, or a tuple's comma-separated items) and returns
  // the index of the token that ends them: the tuple's ')' or the SET item's ',' / WHERE.
  std::size_t items(std::size_t at, bool tuple) {
    std::vector<SqlToken> e;
    int depth = 0;
    for (; at < t_.size(); ++at) {
      const SqlToken& x = t_[at];
      if (depth == 0 && (x.is_symbol(',') || x.is_symbol(')') ||
                         (!tuple && (x.is("WHERE") || x.is("FROM") || x.is("OUTPUT") || x.is_symbol(';'))))) {
        emit(e, tuple);
        e.clear();
        if (!tuple || x.is_symbol(')')) return at;
        out_.push_back(x);  // ','
        continue;
      }
      if (x.is_symbol('(')) ++depth;
      if (x.is_symbol(')')) --depth;
      e.push_back(x);
    }
    emit(e, tuple);
    return at;
  }

  void emit(const std::vector<SqlToken>& e, bool tuple) {
    if (e.empty() || plain(e)) {
      out_.insert(out_.end(), e.begin(), e.end());
      return;
    }
    std::vector<SqlToken> select{SqlToken{TokenKind::Word, "SELECT"}, SqlToken{TokenKind::Symbol, "("}};
    select.insert(select.end(), e.begin(), e.end());
    select.push_back(SqlToken{TokenKind::Symbol, ")"});
    const std::string name = "@__write_value_" + std::to_string(++count_);
    try {
      params_[name] = evaluate_(select);
    } catch (const Error& err) {
      // A SET value that reads the row's own columns (SET qty = qty + 1) has no value before
      // the rows are read: it stays, parenthesized, for the UPDATE to compute per row.
      if (tuple || (err.number() != 207 && err.number() != 4104)) throw;
      out_.push_back(SqlToken{TokenKind::Symbol, "("});
      out_.insert(out_.end(), e.begin(), e.end());
      out_.push_back(SqlToken{TokenKind::Symbol, ")"});
      return;
    }
    out_.push_back(SqlToken{TokenKind::Variable, name});
  }

  const std::vector<SqlToken>& t_;
  Params& params_;
  const Evaluate& evaluate_;
  std::vector<SqlToken> out_;
  int count_ = 0;
};

}  // namespace

std::vector<SqlToken> bind_write_expressions(const std::vector<SqlToken>& tokens, Params& params,
                                             const Evaluate& evaluate) {
  return Binder(tokens, params, evaluate).run();
}

}  // namespace mssqlcdc::tds
