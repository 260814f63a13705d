#include "mssqlcdc/emu/hooks.hpp"

#include <algorithm>
#include <cstring>

#include "mssqlcdc/emu/file_pool.hpp"
#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

class Out {
 public:
  void i64(std::int64_t v) {
    for (int i = 0; i < 8; ++i) s_.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF));
  }
  void str(std::string_view v) {
    i64(static_cast<std::int64_t>(v.size()));
    s_.append(v);
  }
  void value(const Value& v) {
    i64(static_cast<std::int64_t>(v.kind));
    i64(v.i);
    std::int64_t bits = 0;
    static_assert(sizeof bits == sizeof v.f);
    std::memcpy(&bits, &v.f, sizeof bits);
    i64(bits);
    str(v.s);
  }
  void row(const Row& r) {
    i64(static_cast<std::int64_t>(r.size()));
    for (const auto& [name, v] : r) {
      str(name);
      value(v);
    }
  }
  std::string s_;
};

class In {
 public:
  explicit In(std::string_view s) : s_(s) {}
  std::int64_t i64() {
    if (pos_ + 8 > s_.size()) throw Error(ErrorKind::Corrupt, "a stored hook is truncated");
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(s_[pos_ + i])) << (8 * i);
    pos_ += 8;
    return static_cast<std::int64_t>(v);
  }
  std::string str() {
    const auto n = static_cast<std::size_t>(i64());
    if (pos_ + n > s_.size()) throw Error(ErrorKind::Corrupt, "a stored hook is truncated");
    std::string out(s_.substr(pos_, n));
    pos_ += n;
    return out;
  }
  Value value() {
    Value v;
    v.kind = static_cast<Value::Kind>(i64());
    v.i = i64();
    const std::int64_t bits = i64();
    std::memcpy(&v.f, &bits, sizeof bits);
    v.s = str();
    return v;
  }
  Row row() {
    Row r(static_cast<std::size_t>(i64()));
    for (auto& [name, v] : r) {
      name = str();
      v = value();
    }
    return r;
  }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
};

std::string describe(const Hook& h) {
  if (h.kind == "commit_before_read") return "commit_before_read";
  if (h.kind == "inject_null_row") return "inject_null_row(read=" + h.read_kind + ")";
  return h.kind + "(" + h.capture_instance + ", " + h.mark.to_string() + ")";
}

}  // namespace

std::string encode_hook(const Hook& h) {
  Out o;
  o.str(h.capture_instance);
  o.str(lsn_blob(h.mark));
  o.i64(h.after_rows);
  o.i64(h.at ? 1 : 0);
  o.i64(h.at.value_or(0));
  o.i64(static_cast<std::int64_t>(h.changes.size()));
  for (const auto& c : h.changes) {
    o.i64(static_cast<std::int64_t>(c.kind));
    o.str(c.table);
    o.row(c.row);
    o.i64(c.old_key ? 1 : 0);
    if (c.old_key) o.row(*c.old_key);
  }
  return o.s_;
}

Hook decode_hook(std::int64_t id, const std::string& kind, const std::string& read_kind, const std::string& payload) {
  Hook h;
  h.id = id;
  h.kind = kind;
  h.read_kind = read_kind;
  In in(payload);
  h.capture_instance = in.str();
  h.mark = lsn_from_blob(in.str());
  h.after_rows = in.i64();
  const bool has_at = in.i64() != 0;
  const std::int64_t at = in.i64();
  if (has_at) h.at = at;
  h.changes.resize(static_cast<std::size_t>(in.i64()));
  for (auto& c : h.changes) {
    c.kind = static_cast<Change::Kind>(in.i64());
    c.table = in.str();
    c.row = in.row();
    if (in.i64() != 0) c.old_key = in.row();
  }
  return h;
}

void register_hook(Engine& engine, const Hook& hook) {
  Db& db = engine.db();
  if (hook.read_kind != "changes" && hook.read_kind != "table") {
    throw Error(ErrorKind::InvalidArgument, "read='" + hook.read_kind + "' is not valid; use 'changes' or 'table'");
  }
  if (!hook.capture_instance.empty() || hook.kind.starts_with("cleanup")) {
    ReadTxn r(db);
    (void)load_instance(db, hook.capture_instance);
  }
  if (hook.kind == "cleanup_mid_read" && hook.after_rows < 0) {
    throw Error(ErrorKind::InvalidArgument, "after_rows must be 0 or more");
  }
  if (hook.kind == "commit_before_read") {
    if (hook.changes.empty()) throw Error(ErrorKind::InvalidArgument, "commit_before_read needs at least one change");
    ReadTxn r(db);
    for (const auto& c : hook.changes) (void)load_table(db, c.table);
  }
  engine.add_hook(hook.kind, hook.read_kind, encode_hook(hook));
}

std::vector<Hook> pending_hooks(Db& db) {
  ReadTxn r(db);
  std::vector<Hook> out;
  auto st = db.prepare("SELECT hook_id, kind, read_kind, payload FROM emu_hooks ORDER BY hook_id");
  while (st.step()) out.push_back(decode_hook(st.i64(0), st.text(1), st.text(2), st.blob(3)));
  return out;
}

std::int64_t clear_hooks(Db& db) {
  WriteTxn txn(db);
  db.exec("DELETE FROM emu_hooks");
  const std::int64_t n = db.changes();
  txn.commit();
  return n;
}

std::vector<Hook> claim_hooks(Db& db, const std::string& read_kind) {
  std::vector<Hook> out;
  {
    // Readers that find no hook pay one read, not a write lock.
    ReadTxn r(db);
    auto st = db.prepare("SELECT 1 FROM emu_hooks WHERE read_kind = ? LIMIT 1");
    st.bind(1, std::string_view(read_kind));
    if (!st.step()) return out;
  }
  WriteTxn txn(db);
  auto st = db.prepare("DELETE FROM emu_hooks WHERE read_kind = ? RETURNING hook_id, kind, read_kind, payload");
  st.bind(1, std::string_view(read_kind));
  while (st.step()) out.push_back(decode_hook(st.i64(0), st.text(1), st.text(2), st.blob(3)));
  txn.commit();
  std::sort(out.begin(), out.end(), [](const Hook& a, const Hook& b) { return a.id < b.id; });
  return out;
}

void fire_hook(const std::filesystem::path& path, const Hook& hook) {
  try {
    Engine engine(path);
    if (hook.kind == "commit_before_read") {
      std::optional<Micros> at = hook.at;
      if (at) at = std::max(round_to_tick(*at), engine.last_time());  // an at that later events passed is raised
      engine.commit(hook.changes, at);
    } else if (hook.kind.starts_with("cleanup")) {
      engine.cleanup(hook.capture_instance, hook.mark);
    }
  } catch (const Error& e) {
    throw Error(ErrorKind::EmuHook, "hook " + describe(hook) + " failed when it fired: " + e.what() +
                                        "; it is consumed, register a corrected one");
  }
}

ReadHooks ReadHooks::claim(const std::filesystem::path& path, const std::string& read_kind) {
  ReadHooks out;
  std::vector<Hook> before;  // commit_before_read, cleanup_before_read
  {
    auto db = pooled_file(path);
    for (auto& h : claim_hooks(*db, read_kind)) {
      if (h.kind == "inject_null_row") out.null_row = true;
      else if (h.kind == "cleanup_during_read") out.during.push_back(std::move(h));
      else if (h.kind == "cleanup_mid_read") out.mid.push_back(std::move(h));
      else before.push_back(std::move(h));
    }
  }
  for (const auto& h : before) fire_hook(path, h);
  return out;
}

std::optional<Lsn> ReadHooks::fire_mid(const std::filesystem::path& path, std::int64_t object_id) {
  const Hook h = mid.front();
  mid.erase(mid.begin());
  fire_hook(path, h);
  auto other = pooled_file(path);
  auto st = other->prepare("SELECT start_lsn FROM \"cdc.change_tables\" WHERE object_id = ?");
  st.bind(1, object_id);
  if (!st.step()) return std::nullopt;
  return lsn_from_blob(st.blob(0));
}

void ReadHooks::fire_during(const std::filesystem::path& path) {
  const std::vector<Hook> hooks = std::move(during);
  during.clear();
  for (const auto& h : hooks) fire_hook(path, h);
}

}  // namespace mssqlcdc::emu
