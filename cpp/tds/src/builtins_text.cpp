// The built-in functions over text and bytes that a reconcile's tile query needs (decision 1100):
// SUBSTRING, NCHAR and HASHBYTES, with SQL Server's documented types and NULL handling. Text is
// measured in UTF-16 units, as SQL Server counts nvarchar without a supplementary-character
// collation; HASHBYTES hashes an nvarchar's UTF-16LE bytes and a varchar's own bytes.
#include <openssl/evp.h>

#include <algorithm>
#include <memory>

#include "builtins.hpp"
#include "mssqlcdc/tds/wire.hpp"
#include "scalar_kinds.hpp"
#include "scalar_numeric.hpp"
#include "scalar_text.hpp"
#include "tsql.hpp"

namespace mssqlcdc::tds::scalar {

namespace {

const ColumnType kIntType{SqlKind::Int};

void expect_arity(std::string_view fn, const std::vector<TypedValue>& args, std::size_t n) {
  if (args.size() != n) {
    sql_error(174, "The " + std::string(fn) + " function requires " + std::to_string(n) + " argument(s).");
  }
}

[[noreturn]] void invalid_argument(const TypedValue& v, int position, std::string_view fn) {
  sql_error(8116, "Argument data type " + kind_name(v.type) + " is invalid for argument " + std::to_string(position) +
                      " of " + std::string(fn) + " function.");
}

std::int64_t int_argument(const TypedValue& v) { return std::get<std::int64_t>(convert(kIntType, v, 0).value); }

// [from, from + count) of `n` items, SQL Server's way: a start below 1 still counts toward the
// length, and a start past the end gives nothing.
std::pair<std::size_t, std::size_t> window(std::int64_t start, std::int64_t length, std::size_t n) {
  if (length < 0) sql_error(537, "Invalid length parameter passed to the LEFT or SUBSTRING function.");
  const std::int64_t first = std::max<std::int64_t>(start, 1);
  const std::int64_t end = std::min<std::int64_t>(start + length, static_cast<std::int64_t>(n) + 1);
  if (end <= first) return {0, 0};
  return {static_cast<std::size_t>(first - 1), static_cast<std::size_t>(end - first)};
}

TypedValue substring(const std::vector<TypedValue>& args) {
  expect_arity("substring", args, 3);
  const TypedValue& v = args[0];
  const SqlKind k = v.type.kind;
  ColumnType t;
  if (is_binary(k)) t = ColumnType{SqlKind::VarBinary, v.type.length};
  else if (k == SqlKind::NChar || k == SqlKind::NVarChar) t = ColumnType{SqlKind::NVarChar, v.type.length};
  else if (is_text(k)) t = ColumnType{SqlKind::VarChar, v.type.length};
  else invalid_argument(v, 1, "substring");
  if (is_null(v.value) || is_null(args[1].value) || is_null(args[2].value)) return {t, std::monostate{}};
  const std::int64_t start = int_argument(args[1]), length = int_argument(args[2]);
  if (const auto* b = std::get_if<Bytes>(&v.value)) {
    const auto [at, count] = window(start, length, b->size());
    const auto from = b->begin() + static_cast<std::ptrdiff_t>(at);
    return {t, Bytes(from, from + static_cast<std::ptrdiff_t>(count))};
  }
  Bytes units;
  append_utf16le(units, std::get<std::string>(v.value));
  const auto [at, count] = window(start, length, units.size() / 2);
  // A cut through a surrogate pair leaves half a character, which reads back as U+FFFD.
  return {t, utf16le_to_utf8(std::span<const std::uint8_t>(units).subspan(at * 2, count * 2))};
}

TypedValue nchar(const std::vector<TypedValue>& args) {
  expect_arity("nchar", args, 1);
  const ColumnType t{SqlKind::NChar, 1};
  if (is_null(args[0].value)) return {t, std::monostate{}};
  const std::int64_t code = int_argument(args[0]);
  if (code < 0 || code > 0xFFFF) return {t, std::monostate{}};  // outside the collation's range
  const Bytes unit{static_cast<std::uint8_t>(code & 0xFF), static_cast<std::uint8_t>(code >> 8)};
  return {t, utf16le_to_utf8(unit)};
}

struct FreeDigest {
  void operator()(EVP_MD* md) const noexcept { EVP_MD_free(md); }
};
struct FreeContext {
  void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
};

// OpenSSL's name for a HASHBYTES algorithm; empty for a name HASHBYTES does not know.
std::string digest_name(const std::string& algorithm) {
  const std::string a = lower(trim(algorithm));
  if (a == "md2" || a == "md4" || a == "md5") return a;
  if (a == "sha" || a == "sha1") return "sha1";
  if (a == "sha2_256") return "sha256";
  if (a == "sha2_512") return "sha512";
  return {};
}

Bytes digest(const std::string& name, std::string_view algorithm, const Bytes& input) {
  const std::unique_ptr<EVP_MD, FreeDigest> md(EVP_MD_fetch(nullptr, name.c_str(), nullptr));
  if (!md) {
    // OpenSSL 3 keeps MD2 and MD4 in its legacy provider, which the emulator does not load.
    sql_error(50000, "The emulator's TDS front end cannot compute HASHBYTES('" + std::string(algorithm) +
                         "'); use MD5, SHA1, SHA2_256 or SHA2_512.");
  }
  const std::unique_ptr<EVP_MD_CTX, FreeContext> ctx(EVP_MD_CTX_new());
  Bytes out(static_cast<std::size_t>(EVP_MD_get_size(md.get())));
  unsigned int written = 0;
  if (!ctx || EVP_DigestInit_ex2(ctx.get(), md.get(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), input.data(), input.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), out.data(), &written) != 1) {
    sql_error(50000, "The emulator's TDS front end failed to compute HASHBYTES('" + std::string(algorithm) + "').");
  }
  out.resize(written);
  return out;
}

TypedValue hashbytes(const std::vector<TypedValue>& args) {
  expect_arity("hashbytes", args, 2);
  const ColumnType t{SqlKind::VarBinary, 8000};
  const TypedValue& input = args[1];
  const SqlKind k = input.type.kind;
  if (!is_text(k) && !is_binary(k)) invalid_argument(input, 2, "hashbytes");
  if (is_null(args[0].value) || is_null(input.value)) return {t, std::monostate{}};
  const std::string algorithm = text_of(args[0], 0);
  const std::string name = digest_name(algorithm);
  if (name.empty()) return {t, std::monostate{}};  // SQL Server answers NULL for an unknown algorithm
  Bytes bytes;
  if (const auto* b = std::get_if<Bytes>(&input.value)) bytes = *b;
  else if (k == SqlKind::NChar || k == SqlKind::NVarChar) append_utf16le(bytes, std::get<std::string>(input.value));
  else bytes.assign(std::get<std::string>(input.value).begin(), std::get<std::string>(input.value).end());
  return {t, digest(name, algorithm, bytes)};
}

}  // namespace

// CONCAT (https://learn.microsoft.com/en-us/sql/t-sql/functions/concat-transact-sql): 2 to 254
// arguments, each converted to text as CAST does, NULL as an empty string; nvarchar when any
// argument is nchar or nvarchar, else varchar, as long as the arguments together, (max) past 4000
// (nvarchar) or 8000 (varchar) characters.
TypedValue concat(const std::vector<TypedValue>& args) {
  if (args.size() < 2 || args.size() > 254) sql_error(189, "The concat function requires 2 to 254 arguments.");
  bool unicode = false;
  std::size_t length = 0;
  bool max = false;
  for (const TypedValue& a : args) {
    const SqlKind k = a.type.kind;
    unicode = unicode || k == SqlKind::NChar || k == SqlKind::NVarChar;
    if (a.type.length == kMax) max = true;
    length += is_text(k) || is_binary(k) ? a.type.length : 40;  // a number or a time as text
  }
  const std::size_t limit = unicode ? 4000 : 8000;
  const ColumnType t{unicode ? SqlKind::NVarChar : SqlKind::VarChar,
                     max || length > limit ? kMax : static_cast<std::uint16_t>(std::max<std::size_t>(length, 1))};
  std::string out;
  for (const TypedValue& a : args) {
    if (is_null(a.value)) continue;
    const TypedValue text = convert(ColumnType{SqlKind::NVarChar, kMax}, a, 0);
    if (const auto* s = std::get_if<std::string>(&text.value)) out += *s;
  }
  return {t, out};
}

std::optional<TypedValue> text_builtin(std::string_view fn, const std::vector<TypedValue>& args) {
  if (fn == "concat") return concat(args);
  if (fn == "substring") return substring(args);
  if (fn == "nchar") return nchar(args);
  if (fn == "hashbytes") return hashbytes(args);
  if (fn == "format") return format_builtin(args);
  return std::nullopt;
}

}  // namespace mssqlcdc::tds::scalar
