// collation.cpp: the modelled collations as sort keys, and their SQLite collating sequences.
#include "mssqlcdc/emu/collation.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>

#include "ascii.hpp"

namespace mssqlcdc::emu {

namespace {

// The next code point of UTF-8 `s` at `i`; a byte that starts no valid sequence stands for itself.
char32_t next_code_point(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  const std::size_t extra = b0 >= 0xF0 && b0 < 0xF8 ? 3 : b0 >= 0xE0 && b0 < 0xF0 ? 2 : b0 >= 0xC0 && b0 < 0xE0 ? 1 : 0;
  char32_t cp = extra == 3 ? (b0 & 0x07u) : extra == 2 ? (b0 & 0x0Fu) : (b0 & 0x1Fu);
  if (extra == 0 || i + extra >= s.size()) {
    ++i;
    return b0;
  }
  for (std::size_t k = 1; k <= extra; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0u) != 0x80u) {
      ++i;
      return b0;
    }
    cp = (cp << 6) | (b & 0x3Fu);
  }
  i += extra + 1;
  return cp;
}

// The simple lower-case form of Latin, Greek and Cyrillic letters; others are unchanged.
char32_t fold_case(char32_t c) {
  if (c >= U'A' && c <= U'Z') return c + 32;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x0130) return U'i';
  if ((c >= 0x0100 && c <= 0x0137) || (c >= 0x014A && c <= 0x0177)) return c % 2 == 0 ? c + 1 : c;
  if ((c >= 0x0139 && c <= 0x0148) || (c >= 0x0179 && c <= 0x017E)) return c % 2 == 1 ? c + 1 : c;
  if (c == 0x0178) return 0xFF;
  if (c >= 0x0391 && c <= 0x03A9 && c != 0x03A2) return c + 32;
  if (c == 0x0386) return 0x03AC;
  if (c >= 0x0388 && c <= 0x038A) return c + 37;
  if (c == 0x038C) return 0x03CC;
  if (c == 0x038E || c == 0x038F) return c + 63;
  if (c >= 0x0410 && c <= 0x042F) return c + 32;
  if (c >= 0x0400 && c <= 0x040F) return c + 80;
  return c;
}

// The letter of a lower-case Latin-1 or Greek letter without its accent; others are unchanged.
char32_t base_letter(char32_t c) {
  if (c >= 0xE0 && c <= 0xFF) {
    // à..ÿ: the base letter, or 0 where the character is a letter of its own (æ ð ÷ þ).
    static constexpr char32_t kLatin1[32] = {U'a', U'a', U'a', U'a', U'a', U'a', 0,    U'c', U'e', U'e', U'e',
                                             U'e', U'i', U'i', U'i', U'i', 0,    U'n', U'o', U'o', U'o', U'o',
                                             U'o', 0,    U'o', U'u', U'u', U'u', U'u', U'y', 0,    U'y'};
    const char32_t b = kLatin1[c - 0xE0];
    return b == 0 ? c : b;
  }
  switch (c) {
    case 0x03AC: return 0x03B1;  // ά α
    case 0x03AD: return 0x03B5;  // έ ε
    case 0x03AE: return 0x03B7;  // ή η
    case 0x03AF:
    case 0x0390:
    case 0x03CA: return 0x03B9;  // ί ΐ ϊ ι
    case 0x03CC: return 0x03BF;  // ό ο
    case 0x03CD:
    case 0x03B0:
    case 0x03CB: return 0x03C5;  // ύ ΰ ϋ υ
    case 0x03CE: return 0x03C9;  // ώ ω
    default: return c;
  }
}

// Three bytes of c + 1, so that the level separator (three zero bytes) sorts below any letter.
void put(std::string& out, char32_t c) {
  const std::uint32_t v = static_cast<std::uint32_t>(c) + 1;
  out += static_cast<char>((v >> 16) & 0xFF);
  out += static_cast<char>((v >> 8) & 0xFF);
  out += static_cast<char>(v & 0xFF);
}

std::string_view without_trailing_spaces(std::string_view s) {
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

int sqlite_compare(void* arg, int na, const void* a, int nb, const void* b) {
  const auto* c = static_cast<const Collation*>(arg);
  return c->compare(std::string_view(static_cast<const char*>(a), static_cast<std::size_t>(na)),
                    std::string_view(static_cast<const char*>(b), static_cast<std::size_t>(nb)));
}

}  // namespace

const std::vector<const Collation*>& Collation::all() {
  static const std::vector<std::unique_ptr<const Collation>> owned = [] {
    std::vector<std::unique_ptr<const Collation>> v;
    v.push_back(std::make_unique<const Collation>("SQL_Latin1_General_CP1_CI_AS", false, false));
    v.push_back(std::make_unique<const Collation>("SQL_Latin1_General_CP1_CS_AS", false, true));
    v.push_back(std::make_unique<const Collation>("Latin1_General_CI_AS", false, false));
    v.push_back(std::make_unique<const Collation>("Latin1_General_CS_AS", false, true));
    v.push_back(std::make_unique<const Collation>("Latin1_General_100_CI_AS", false, false));
    v.push_back(std::make_unique<const Collation>("Latin1_General_100_CS_AS", false, true));
    v.push_back(std::make_unique<const Collation>("Latin1_General_BIN2", true, true));
    v.push_back(std::make_unique<const Collation>("Latin1_General_100_BIN2", true, true));
    v.push_back(std::make_unique<const Collation>("Greek_CI_AS", false, false));
    v.push_back(std::make_unique<const Collation>("Greek_CS_AS", false, true));
    return v;
  }();
  static const std::vector<const Collation*> views = [] {
    std::vector<const Collation*> v;
    for (const auto& c : owned) v.push_back(c.get());
    return v;
  }();
  return views;
}

const Collation& Collation::database_default() { return *all().front(); }

const Collation* Collation::find(std::string_view name) {
  const std::string want = ascii_lower(name);
  for (const Collation* c : all()) {
    if (ascii_lower(c->name()) == want) return c;
  }
  return nullptr;
}

std::string Collation::supported_names() {
  std::string out;
  for (const Collation* c : all()) out += (out.empty() ? "" : ", ") + c->name();
  return out;
}

void Collation::register_all(sqlite3* db) {
  for (const Collation* c : all()) {
    sqlite3_create_collation_v2(db, c->sqlite_name().c_str(), SQLITE_UTF8, const_cast<Collation*>(c), sqlite_compare,
                                nullptr);
  }
}

std::string Collation::sqlite_name() const { return std::string("mssql_").append(ascii_lower(name_)); }

std::string Collation::sort_key(std::string_view text) const {
  const std::string_view s = without_trailing_spaces(text);
  if (binary_) return std::string(s);  // UTF-8's byte order is code point order
  std::string letters, accents, cases;
  for (std::size_t i = 0; i < s.size();) {
    const char32_t c = next_code_point(s, i);
    const char32_t lower = fold_case(c);
    put(letters, base_letter(lower));
    put(accents, lower);
    if (case_sensitive_) cases += static_cast<char>(lower != c ? 1 : 0);
  }
  std::string key = letters;
  key.append(3, '\0');
  key += accents;
  if (case_sensitive_) {
    key.append(3, '\0');
    key += cases;
  }
  return key;
}

int Collation::compare(std::string_view a, std::string_view b) const {
  a = without_trailing_spaces(a);
  b = without_trailing_spaces(b);
  const auto sign = [](int c) { return c < 0 ? -1 : c > 0 ? 1 : 0; };
  if (binary_) return sign(a.compare(b));
  const auto ascii = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  };
  if (!ascii(a) || !ascii(b)) return sign(sort_key(a).compare(sort_key(b)));
  // ASCII has no accents, so sort_key()'s levels come down to the folded letters, then the
  // first difference in case (lower case first); the same order without building the keys.
  const auto fold = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  int case_order = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const char x = fold(a[i]), y = fold(b[i]);
    if (x != y) return x < y ? -1 : 1;
    if (case_order == 0 && a[i] != b[i]) case_order = a[i] == x ? -1 : 1;
  }
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return case_sensitive_ ? case_order : 0;
}

}  // namespace mssqlcdc::emu
