#include "mssqlcdc/tds/tokens.hpp"

#include "mssqlcdc/error.hpp"

namespace mssqlcdc::tds {
namespace {

void token(Writer& w, Token t) { w.u8(static_cast<std::uint8_t>(t)); }

// Column flags (MS-TDS 2.2.7.4): bit 0 nullable; 0x0008 "updateable unknown" is what SQL Server sends
// for computed expressions, the kind of column this server returns.
std::uint16_t column_flags(const Column& c) { return static_cast<std::uint16_t>((c.nullable ? 0x0001 : 0) | 0x0008); }

// A token whose USHORT length precedes its body: the length is patched in once the body is written.
template <typename Body>
void with_length(Writer& w, Token t, Body body) {
  token(w, t);
  const std::size_t at = w.size();
  w.u16le(0);
  body();
  const std::size_t n = w.size() - at - 2;
  if (n > 0xFFFF) throw Error(ErrorKind::InvalidArgument, "TDS token longer than 65535 bytes");
  w.patch_u16le(at, static_cast<std::uint16_t>(n));
}

// A message's text cut to kMaxMessageChars UTF-16 units at a character boundary, so a message
// that quotes a client's megabyte (an unclosed literal) still fits its token.
std::string_view clipped(std::string_view text) {
  if (utf16_units(text) <= kMaxMessageChars) return text;
  std::size_t units = 0, at = 0;
  while (at < text.size()) {
    const auto lead = static_cast<unsigned char>(text[at]);
    const std::size_t len = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    const std::size_t need = len == 4 ? 2 : 1;
    if (units + need > kMaxMessageChars || at + len > text.size()) break;
    units += need;
    at += len;
  }
  return text.substr(0, at);
}

}  // namespace

void write_colmetadata(Writer& w, std::span<const Column> columns) {
  token(w, Token::ColMetadata);
  w.u16le(static_cast<std::uint16_t>(columns.size()));
  for (const Column& c : columns) {
    w.u32le(0);  // UserType
    w.u16le(column_flags(c));
    write_type_info(w, c.type);
    w.b_varchar(c.name);
  }
}

void write_row(Writer& w, std::span<const Column> columns, std::span<const Value> values) {
  if (columns.size() != values.size()) {
    throw Error(ErrorKind::InvalidArgument, "a row of " + std::to_string(values.size()) + " values for " +
                                                std::to_string(columns.size()) + " columns");
  }
  bool any_null = false;
  for (const Value& v : values) any_null = any_null || is_null(v);
  if (!any_null) {
    token(w, Token::Row);
    for (std::size_t i = 0; i < columns.size(); ++i) write_value(w, columns[i].type, values[i]);
    return;
  }
  token(w, Token::NbcRow);
  Bytes bitmap((values.size() + 7) / 8, 0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (is_null(values[i])) bitmap[i / 8] = static_cast<std::uint8_t>(bitmap[i / 8] | (1U << (i % 8)));
  }
  w.bytes(bitmap);
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (!is_null(values[i])) write_value(w, columns[i].type, values[i]);
  }
}

void write_done(Writer& w, Token kind, std::uint16_t status, std::uint16_t cur_cmd, std::uint64_t rows) {
  token(w, kind);
  w.u16le(status);
  w.u16le(cur_cmd);
  w.u64le(rows);
}

void write_message(Writer& w, Token kind, const ServerMessage& m) {
  with_length(w, kind, [&] {
    w.u32le(static_cast<std::uint32_t>(m.number));
    w.u8(m.state);
    w.u8(m.severity);
    w.us_varchar(clipped(m.text));
    w.b_varchar(m.server);
    w.b_varchar(m.procedure);
    w.u32le(static_cast<std::uint32_t>(m.line));
  });
}

void write_loginack(Writer& w, std::uint32_t tds_version, const std::string& program,
                    const std::array<std::uint8_t, 4>& version) {
  with_length(w, Token::LoginAck, [&] {
    w.u8(1);               // interface: SQL_TSQL
    w.u32be(tds_version);  // LOGINACK carries the version most significant byte first
    w.b_varchar(program);
    w.bytes(version);
  });
}

void write_envchange(Writer& w, EnvChange type, const std::string& new_value, const std::string& old_value) {
  with_length(w, Token::EnvChange, [&] {
    w.u8(static_cast<std::uint8_t>(type));
    w.b_varchar(new_value);
    w.b_varchar(old_value);
  });
}

void write_envchange_bytes(Writer& w, EnvChange type, std::span<const std::uint8_t> new_value,
                           std::span<const std::uint8_t> old_value) {
  with_length(w, Token::EnvChange, [&] {
    w.u8(static_cast<std::uint8_t>(type));
    w.u8(static_cast<std::uint8_t>(new_value.size()));
    w.bytes(new_value);
    w.u8(static_cast<std::uint8_t>(old_value.size()));
    w.bytes(old_value);
  });
}

void write_feature_ext_ack(Writer& w, bool fedauth) {
  token(w, Token::FeatureExtAck);
  if (fedauth) {
    w.u8(0x02);  // FeatureId FEDAUTH
    w.u32le(0);  // FeatureAckDataLen: no nonce was exchanged, so nothing to sign
  }
  w.u8(0xFF);
}

void write_return_status(Writer& w, std::int32_t status) {
  token(w, Token::ReturnStatus);
  w.u32le(static_cast<std::uint32_t>(status));
}

void write_return_value(Writer& w, std::uint16_t ordinal, const std::string& name, const Column& column,
                        const Value& value) {
  token(w, Token::ReturnValue);
  w.u16le(ordinal);
  w.b_varchar(name);
  w.u8(0x01);  // an output parameter, not a user-defined function's result
  w.u32le(0);  // UserType
  w.u16le(column_flags(column));
  write_type_info(w, column.type);
  write_value(w, column.type, value);
}

}  // namespace mssqlcdc::tds
