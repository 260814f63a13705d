#include "mssqlcdc/emu/log.hpp"

#include <array>
#include <cstring>
#include <sstream>

#include "mssqlcdc/emu/format.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void i64(std::int64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF));
  }
  void str(std::string_view s) {
    i64(static_cast<std::int64_t>(s.size()));
    out_.append(s);
  }
  void cell(const Cell& c) {
    u8(static_cast<std::uint8_t>(c.type));
    switch (c.type) {
      case Cell::Type::Int: i64(c.i); break;
      case Cell::Type::Real: {
        std::int64_t bits = 0;
        std::memcpy(&bits, &c.d, sizeof bits);
        i64(bits);
        break;
      }
      case Cell::Type::Text:
      case Cell::Type::Blob: str(c.s); break;
      case Cell::Type::Null: break;
    }
  }
  void image(const Image& im) {
    i64(static_cast<std::int64_t>(im.size()));
    for (const auto& [id, c] : im) {
      i64(id);
      cell(c);
    }
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  std::uint8_t u8() {
    need(1);
    return static_cast<std::uint8_t>(in_[pos_++]);
  }
  std::int64_t i64() {
    need(8);
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(in_[pos_ + i])) << (8 * i);
    pos_ += 8;
    return static_cast<std::int64_t>(v);
  }
  std::string str() {
    const auto n = static_cast<std::size_t>(i64());
    need(n);
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  Cell cell() {
    Cell c;
    c.type = static_cast<Cell::Type>(u8());
    switch (c.type) {
      case Cell::Type::Int: c.i = i64(); break;
      case Cell::Type::Real: {
        const std::int64_t bits = i64();
        std::memcpy(&c.d, &bits, sizeof bits);
        break;
      }
      case Cell::Type::Text:
      case Cell::Type::Blob: c.s = str(); break;
      case Cell::Type::Null: break;
    }
    return c;
  }
  Image image() {
    Image im(static_cast<std::size_t>(i64()));
    for (auto& [id, c] : im) {
      id = i64();
      c = cell();
    }
    return im;
  }

 private:
  void need(std::size_t n) const {
    if (pos_ + n > in_.size()) throw Error(ErrorKind::Corrupt, "an emulator log record is truncated");
  }
  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace

LsnCursor LsnCursor::at(const Lsn& next, std::int64_t records_since_flush) {
  LsnCursor c;
  c.next_ = next;
  c.records_ = records_since_flush;
  return c;
}

WriteState WriteState::load(Db& db) {
  const auto text = meta_get(db, "write_state");
  if (!text) throw Error(ErrorKind::Corrupt, db.path().string() + ": emulator metadata 'write_state' is missing");
  std::istringstream in(*text);
  std::string cursor;
  std::int64_t records = 0;
  WriteState s;
  in >> cursor >> records >> s.last_time >> s.tran_counter >> s.rowversion;
  if (in.fail())
    throw Error(ErrorKind::Corrupt, db.path().string() + ": emulator metadata 'write_state' is not readable");
  s.cursor = LsnCursor::at(Lsn::parse(cursor), records);
  return s;
}

void WriteState::store(Db& db) const {
  meta_set(db, "write_state",
           cursor.next().to_string() + " " + std::to_string(cursor.records()) + " " + std::to_string(last_time) + " " +
               std::to_string(tran_counter) + " " + std::to_string(rowversion));
}

Lsn LsnCursor::take() {
  const Lsn out = next_;
  std::uint32_t block = next_.block();
  std::uint16_t slot = next_.slot();
  std::uint32_t vlf = next_.vlf();
  if (slot >= 0xFFFE) {
    ++block;
    slot = 1;
  } else {
    ++slot;
  }
  if (block >= 0x1000) {
    ++vlf;
    block = 0x20;
  }
  next_ = Lsn(vlf, block, slot);
  ++records_;
  return out;
}

void LsnCursor::flush() {
  std::uint32_t vlf = next_.vlf();
  std::uint64_t block = next_.block() + 1 + static_cast<std::uint64_t>(records_ / 32);
  if (block >= 0x1000) {
    ++vlf;
    block = 0x20;
  }
  next_ = Lsn(vlf, static_cast<std::uint32_t>(block), 1);
  records_ = 0;
}

std::string LogRecord::payload() const {
  Writer w;
  if (kind == Kind::Txn) {
    w.i64(static_cast<std::int64_t>(ops.size()));
    for (const auto& op : ops) {
      w.u8(static_cast<std::uint8_t>(op.kind));
      w.i64(op.table_id);
      w.str(lsn_blob(op.seqval));
      w.i64(op.command_id);
      w.image(op.before);
      w.image(op.after);
      w.i64(static_cast<std::int64_t>(op.set_columns.size()));
      for (auto id : op.set_columns) w.i64(id);
    }
  } else if (kind == Kind::Ddl) {
    w.i64(table_id);
    w.str(ddl_kind);
    w.str(column);
    w.i64(column_id);
    w.str(new_type);
    w.str(ddl_command);
  } else if (kind == Kind::Enable) {
    w.i64(table_id);
  }
  return w.take();
}

LogRecord LogRecord::from_row(Stmt& row) {
  LogRecord r;
  r.commit_lsn = lsn_from_blob(row.blob(0));
  const std::string kind = row.text(1);
  r.kind = kind == "txn" ? Kind::Txn : kind == "ddl" ? Kind::Ddl : kind == "enable" ? Kind::Enable : Kind::Idle;
  r.begin_lsn = lsn_from_blob(row.blob(2));
  r.tran_id = row.blob(3);
  r.begin_time = row.i64(4);
  r.end_time = row.i64(5);
  const std::string payload = row.blob(6);
  Reader in(payload);
  if (r.kind == Kind::Txn) {
    r.ops.resize(static_cast<std::size_t>(in.i64()));
    for (auto& op : r.ops) {
      op.kind = static_cast<RowOp::Kind>(in.u8());
      op.table_id = in.i64();
      op.seqval = lsn_from_blob(in.str());
      op.command_id = static_cast<std::int32_t>(in.i64());
      op.before = in.image();
      op.after = in.image();
      op.set_columns.resize(static_cast<std::size_t>(in.i64()));
      for (auto& id : op.set_columns) id = in.i64();
    }
  } else if (r.kind == Kind::Ddl) {
    r.table_id = in.i64();
    r.ddl_kind = in.str();
    r.column = in.str();
    r.column_id = in.i64();
    r.new_type = in.str();
    r.ddl_command = in.str();
  } else if (r.kind == Kind::Enable) {
    r.table_id = in.i64();
  }
  return r;
}

Lsn parse_lsn_arg(std::string_view text, std::string_view what) {
  auto bad = [&]() -> Lsn {
    throw Error(ErrorKind::InvalidArgument, std::string(what) + " '" + std::string(text) +
                                                "' is not an LSN; pass '0x' and 2 to 20 hex digits (an even count), "
                                                "e.g. 0x00000027000000200001");
  };
  if (text.size() < 4 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) return bad();
  const std::string_view hex = text.substr(2);
  if (hex.size() % 2 != 0 || hex.size() > 20) return bad();
  std::array<std::uint8_t, Lsn::kBytes> bytes{};
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    int v = 0;
    for (std::size_t j = 0; j < 2; ++j) {
      const char c = hex[i + j];
      int d = 0;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else return bad();
      v = v * 16 + d;
    }
    bytes[i / 2] = static_cast<std::uint8_t>(v);
  }
  return Lsn::from_bytes(bytes);
}

Lsn lsn_from_blob(std::string_view blob) {
  std::array<std::uint8_t, Lsn::kBytes> bytes{};
  for (std::size_t i = 0; i < Lsn::kBytes && i < blob.size(); ++i) bytes[i] = static_cast<std::uint8_t>(blob[i]);
  return Lsn::from_bytes(bytes);
}

std::string tran_id_bytes(std::int64_t counter) {
  std::string out(10, '\0');
  for (int i = 0; i < 6; ++i) out[9 - i] = static_cast<char>((static_cast<std::uint64_t>(counter) >> (8 * i)) & 0xFF);
  return out;
}

}  // namespace mssqlcdc::emu
