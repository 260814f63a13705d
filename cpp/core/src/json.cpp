#include "mssqlcdc/json.hpp"
#include "mssqlcdc/utf8.hpp"

#include <charconv>
#include <cstdio>

#include "mssqlcdc/error.hpp"

namespace mssqlcdc::json {
namespace {

// Deep enough for any file the core reads; bounded so hostile input cannot exhaust the stack.
constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Value document() {
    skip_space();
    Value v = value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    std::string message = "invalid JSON at byte ";
    message.append(std::to_string(pos_)).append(": ").append(what);
    throw Error(ErrorKind::InvalidArgument, message);
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
  }

  void expect_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) fail("expected a JSON value");
    pos_ += word.size();
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail("nested deeper than 64 levels");
    if (at_end()) fail("unexpected end of input, expected a value");
    switch (peek()) {
      case '{': return object(depth);
      case '[': return array(depth);
      case '"': return Value(string());
      case 't': expect_word("true"); return Value(true);
      case 'f': expect_word("false"); return Value(false);
      case 'n': expect_word("null"); return Value(nullptr);
      default: return number();
    }
  }

  Value object(int depth) {
    ++pos_;  // '{'
    Object members;
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return Value(std::move(members));
    }
    for (;;) {
      skip_space();
      if (peek() != '"') fail("expected a string key");
      std::string key = string();
      for (const auto& [existing, unused] : members) {
        if (existing == key) fail("duplicate key " + quote(key));
      }
      skip_space();
      if (peek() != ':') fail("expected ':' after a key");
      ++pos_;
      skip_space();
      Value v = value(depth + 1);
      members.emplace_back(std::move(key), std::move(v));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return Value(std::move(members));
      }
      fail("expected ',' or '}' in an object");
    }
  }

  Value array(int depth) {
    ++pos_;  // '['
    Array items;
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return Value(std::move(items));
    }
    for (;;) {
      skip_space();
      items.push_back(value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return Value(std::move(items));
      }
      fail("expected ',' or ']' in an array");
    }
  }

  Value number() {
    const std::size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      fail("expected a JSON value");
    }
    if (peek() == '.') {
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit after '.'");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit in the exponent");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    return Value::number(Number{std::string(text_.substr(start, pos_ - start))});
  }

  unsigned hex4() {
    if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else fail("bad hex digit in a \\u escape");
    }
    return v;
  }

  // One raw UTF-8 sequence, validated (no overlong forms, no surrogates, at most U+10FFFF).
  void utf8_sequence(std::string& out) {
    const auto lead = static_cast<unsigned char>(text_[pos_]);
    int extra = 0;
    unsigned cp = 0;
    if (lead >= 0xC2 && lead <= 0xDF) {
      extra = 1;
      cp = lead & 0x1Fu;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      extra = 2;
      cp = lead & 0x0Fu;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      extra = 3;
      cp = lead & 0x07u;
    } else {
      fail("invalid UTF-8 in a string");
    }
    if (pos_ + static_cast<std::size_t>(extra) >= text_.size()) fail("truncated UTF-8 in a string");
    for (int i = 1; i <= extra; ++i) {
      const auto c = static_cast<unsigned char>(text_[pos_ + static_cast<std::size_t>(i)]);
      if ((c & 0xC0u) != 0x80u) fail("invalid UTF-8 in a string");
      cp = (cp << 6) | (c & 0x3Fu);
    }
    const bool overlong = (extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000);
    if (overlong || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) fail("invalid UTF-8 in a string");
    out.append(text_.substr(pos_, static_cast<std::size_t>(extra) + 1));
    pos_ += static_cast<std::size_t>(extra) + 1;
  }

  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (at_end()) fail("unterminated string");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("control character inside a string");
      if (static_cast<unsigned char>(c) >= 0x80) {
        utf8_sequence(out);
        continue;
      }
      ++pos_;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (at_end()) fail("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate in a \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u") fail("high surrogate without its low half");
            pos_ += 2;
            const unsigned low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("high surrogate without its low half");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default: fail(std::string("unknown escape \\") + e);
      }
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

void dump_to(std::string& out, const Value& v) {
  if (v.is_null()) {
    out.append("null");
  } else if (v.is_bool()) {
    out.append(v.as_bool() ? "true" : "false");
  } else if (v.is_number()) {
    out.append(v.as_number().text);
  } else if (v.is_string()) {
    out.append(quote(v.as_string()));
  } else if (v.is_array()) {
    out.push_back('[');
    bool first = true;
    for (const Value& item : v.as_array()) {
      if (!first) out.push_back(',');
      first = false;
      dump_to(out, item);
    }
    out.push_back(']');
  } else {
    out.push_back('{');
    bool first = true;
    for (const auto& [key, item] : v.as_object()) {
      if (!first) out.push_back(',');
      first = false;
      out.append(quote(key)).push_back(':');
      dump_to(out, item);
    }
    out.push_back('}');
  }
}

}  // namespace

std::optional<std::int64_t> Value::as_int64() const {
  if (!is_number()) return std::nullopt;
  const std::string& t = as_number().text;
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  if (ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return out;
}

const Value* Value::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& [name, member] : as_object()) {
    if (name == key) return &member;
  }
  return nullptr;
}

const char* Value::type_name() const {
  if (is_null()) return "null";
  if (is_bool()) return "a boolean";
  if (is_number()) return "a number";
  if (is_string()) return "a string";
  if (is_array()) return "an array";
  return "an object";
}

Value parse(std::string_view text) { return Parser(text).document(); }

std::string dump(const Value& value) {
  std::string out;
  dump_to(out, value);
  return out;
}

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out.append(buf);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace mssqlcdc::json
