// tds_test_util.hpp: client messages built as the MS-TDS tables lay them out, for the tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>

#include "mssqlcdc/tds/wire.hpp"
#include "tds/src/login.hpp"

namespace mssqlcdc::tds::test {

// A LOGIN7 laid out as the specification's table: fixed part, then the variable data.
inline Bytes login7(const std::string& user, const std::string& password, const std::string& database) {
  struct Field {
    Bytes data;
    std::size_t chars;
  };
  const auto text = [](const std::string& s) {
    Bytes b;
    append_utf16le(b, s);
    return Field{b, b.size() / 2};
  };
  const Bytes secret = obfuscate_password(password);
  const Field fields[] = {text("host1"), text(user),        Field{secret, secret.size() / 2},
                          text("app"),   text("127.0.0.1"), Field{{}, 0},
                          text("lib"),   text(""),          text(database)};
  Writer w;
  w.u32le(0);  // patched below
  w.u32le(0x74000004);
  w.u32le(8192);
  w.u32le(7);
  w.u32le(1234);
  w.u32le(0);
  w.u8(0xE0);
  w.u8(0x03);
  w.u8(0);
  w.u8(0);
  w.u32le(0);
  w.u32le(0x0409);
  std::size_t offset = 94;
  for (const Field& f : fields) {
    w.u16le(static_cast<std::uint16_t>(offset));
    w.u16le(static_cast<std::uint16_t>(f.chars));
    offset += f.data.size();
  }
  w.bytes(Bytes(6, 0));          // ClientID
  for (int k = 0; k < 3; ++k) {  // SSPI, AtchDBFile, ChangePassword: empty
    w.u16le(static_cast<std::uint16_t>(offset));
    w.u16le(0);
  }
  w.u32le(0);  // cbSSPILong
  Bytes out = w.take();
  for (const Field& f : fields) out.insert(out.end(), f.data.begin(), f.data.end());
  const auto n = static_cast<std::uint32_t>(out.size());
  for (int k = 0; k < 4; ++k) out[k] = static_cast<std::uint8_t>(n >> (8 * k));
  return out;
}

// ALL_HEADERS with one transaction descriptor header, as SQL batches and RPCs start.
inline void all_headers(Writer& w) {
  w.u32le(22);  // ALL_HEADERS: its length, then one header of 18 bytes
  w.u32le(18);
  w.u16le(2);  // transaction descriptor
  w.u64le(0);
  w.u32le(1);  // outstanding requests
}

// A SQL batch: ALL_HEADERS, then the text.
inline Bytes sql_batch(const std::string& sql) {
  Writer w;
  all_headers(w);
  w.utf16(sql);
  return w.take();
}

struct Done {
  std::uint8_t token = 0;
  std::uint16_t status = 0;
  std::uint64_t rows = 0;
};

// The last token of a reply: every reply this server sends ends with a DONE of 13 bytes.
inline Done last_done(const Bytes& reply) {
  EXPECT_GE(reply.size(), 13U);
  Reader r(std::span<const std::uint8_t>(reply).subspan(reply.size() - 13));
  Done d;
  d.token = r.u8();
  d.status = r.u16le();
  r.skip(2);
  d.rows = r.u64le();
  return d;
}

}  // namespace mssqlcdc::tds::test
