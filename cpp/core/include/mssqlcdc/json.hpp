// json.hpp: a small, strict JSON value for the files the core owns (the generation state file,
// the source offset on line 3 of Spark's offset log). Parsing accepts exactly RFC 8259: no
// comments, no trailing commas, no duplicate keys, no lone surrogates, nothing after the value.
// Numbers keep their text, so an integer is told apart from 1.0 and never rounds through double.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace mssqlcdc::json {

class Value;
using Array = std::vector<Value>;
// Members keep their order of appearance, so a writer reproduces the order it was given.
using Object = std::vector<std::pair<std::string, Value>>;

// A JSON number, kept as its text; as_int64() reads it as an integer where it is one.
struct Number {
  std::string text;  // as written in the document, already validated against the JSON grammar
};

// One JSON value: null, a boolean, a number, a string (UTF-8), an array or an object. A plain
// value type: copies are deep, and a Value no thread writes may be read from many threads.
class Value {
 public:
  // Implicit conversions from the C++ value of each type, so documents can be written as
  // nested initializer lists. Strings must be UTF-8; dump() does not check them.
  Value() = default;  // null
  Value(std::nullptr_t) {}
  Value(bool b) : v_(b) {}
  Value(std::int64_t i) : v_(Number{std::to_string(i)}) {}
  Value(int i) : v_(Number{std::to_string(i)}) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(Array a) : v_(std::move(a)) {}
  Value(Object o) : v_(std::move(o)) {}
  // A number given as text. `n.text` must already match the JSON number grammar: dump() writes
  // it unchanged, so anything else would make the output invalid.
  static Value number(Number n) {
    Value v;
    v.v_ = std::move(n);
    return v;
  }

  // Which of the six types this value holds.
  [[nodiscard]] bool is_null() const { return std::holds_alternative<std::monostate>(v_); }
  [[nodiscard]] bool is_bool() const { return std::holds_alternative<bool>(v_); }
  [[nodiscard]] bool is_number() const { return std::holds_alternative<Number>(v_); }
  [[nodiscard]] bool is_string() const { return std::holds_alternative<std::string>(v_); }
  [[nodiscard]] bool is_array() const { return std::holds_alternative<Array>(v_); }
  [[nodiscard]] bool is_object() const { return std::holds_alternative<Object>(v_); }

  // Accessors for a type already checked with is_*(); a wrong type is a programming error and
  // throws std::bad_variant_access.
  [[nodiscard]] bool as_bool() const { return std::get<bool>(v_); }
  [[nodiscard]] const std::string& as_string() const { return std::get<std::string>(v_); }
  [[nodiscard]] const Number& as_number() const { return std::get<Number>(v_); }
  [[nodiscard]] const Array& as_array() const { return std::get<Array>(v_); }
  [[nodiscard]] const Object& as_object() const { return std::get<Object>(v_); }

  // The number as a signed 64-bit integer when its text is one (no fraction, no exponent, in
  // range); std::nullopt for any other number and for every other type.
  [[nodiscard]] std::optional<std::int64_t> as_int64() const;

  // The member named `key` of an object, or nullptr when absent or when this is no object.
  [[nodiscard]] const Value* find(std::string_view key) const;

  // A short name of the type for messages: "null", "a boolean", "a number", "a string", ...
  [[nodiscard]] const char* type_name() const;

 private:
  std::variant<std::monostate, bool, Number, std::string, Array, Object> v_;
};

// Parses one complete document. Malformed input, and nesting deeper than 64 arrays or objects,
// throws Error(InvalidArgument) whose message says what is wrong and at which byte offset;
// callers prefix it with the file it came from.
[[nodiscard]] Value parse(std::string_view text);

// Compact text (no spaces), member order kept, strings escaped as RFC 8259 requires: `"`, `\`
// and control characters; other UTF-8 is written as is.
[[nodiscard]] std::string dump(const Value& value);

// A JSON string literal, quotes included: for building messages and documents by hand.
[[nodiscard]] std::string quote(std::string_view text);

}  // namespace mssqlcdc::json
