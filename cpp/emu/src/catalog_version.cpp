// catalog_version.cpp: the catalog's version and token (format.hpp), which let a connection
// keep the catalog it loaded until another one changes it. They read and write emu_meta with
// statements of their own, so that readers of the token need nothing else of the format.
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "mssqlcdc/emu/format.hpp"

namespace mssqlcdc::emu {
namespace {

std::optional<std::string> stored(Db& db, const char* key) {
  auto st = db.prepare("SELECT value FROM emu_meta WHERE key = ?");
  st.bind(1, std::string_view(key));
  if (!st.step() || st.is_null(0)) return std::nullopt;
  return st.text(0);
}

void store(Db& db, const char* key, const std::string& value) {
  db.prepare("INSERT INTO emu_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
      .bind(1, std::string_view(key))
      .bind(2, std::string_view(value))
      .run();
}

}  // namespace

std::int64_t catalog_version(Db& db) {
  const auto v = stored(db, "catalog_version");
  return v ? std::stoll(*v) : 0;
}

namespace {

// Everything Reader::objects() reads: the catalog tables, the metadata that holds identities,
// NOT NULL and computed columns (all of emu_meta: more than needed only makes tokens differ
// more), and the enable records that say whether capture has established an instance.
constexpr const char* kCatalogRows[] = {
    "SELECT * FROM \"sys.tables\" ORDER BY object_id",
    "SELECT * FROM \"sys.columns\" ORDER BY object_id, column_id",
    "SELECT * FROM \"cdc.change_tables\" ORDER BY object_id",
    "SELECT * FROM \"cdc.captured_columns\" ORDER BY object_id, column_ordinal",
    "SELECT * FROM \"cdc.index_columns\" ORDER BY object_id, index_ordinal",
    "SELECT key, value FROM emu_meta WHERE key <> 'catalog_token' ORDER BY key",
    "SELECT commit_lsn FROM emu_log WHERE kind = 'enable' ORDER BY commit_lsn",
};

// Two FNV-1a streams with different offsets over each cell's type, length and bytes: 128 bits,
// far past any chance of two catalogs meeting by accident.
class Digest {
 public:
  void mix(const void* data, std::size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) {
      a_ = (a_ ^ p[i]) * kPrime;
      b_ = (b_ ^ p[i]) * kPrime;
    }
  }
  template <typename T>
  void mix_value(T v) {
    mix(&v, sizeof v);
  }
  [[nodiscard]] std::string digest_text() const {
    char out[33];
    std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(a_),
                  static_cast<unsigned long long>(b_));
    return out;
  }

 private:
  static constexpr std::uint64_t kPrime = 0x100000001b3ULL;
  std::uint64_t a_ = 0xcbf29ce484222325ULL;
  std::uint64_t b_ = 0x84222325cbf29ce4ULL;
};

std::string catalog_digest(Db& db) {
  Digest d;
  for (const char* sql : kCatalogRows) {
    auto st = db.prepare(sql);
    d.mix(sql, std::strlen(sql));
    while (st.step()) {
      for (int c = 0; c < st.columns(); ++c) {
        sqlite3_stmt* raw = st.raw();
        const int type = sqlite3_column_type(raw, c);
        d.mix_value(type);
        if (type == SQLITE_INTEGER) {
          d.mix_value(sqlite3_column_int64(raw, c));
        } else if (type == SQLITE_FLOAT) {
          d.mix_value(sqlite3_column_double(raw, c));
        } else if (type != SQLITE_NULL) {
          const void* bytes = sqlite3_column_blob(raw, c);
          const auto size = static_cast<std::size_t>(sqlite3_column_bytes(raw, c));
          d.mix_value(size);
          if (size > 0) d.mix(bytes, size);
        }
      }
    }
  }
  return d.digest_text();
}

void store_token(Db& db) { store(db, "catalog_token", catalog_digest(db)); }

}  // namespace

void bump_catalog(Db& db) {
  store(db, "catalog_version", std::to_string(catalog_version(db) + 1));
  // The token names the catalog as the transaction commits it, after all of its changes.
  if (db.in_transaction()) {
    db.before_commit("catalog_token", [&db] { store_token(db); });
  } else {
    store_token(db);
  }
}

std::string catalog_token(Db& db) { return stored(db, "catalog_token").value_or(""); }

}  // namespace mssqlcdc::emu
