#include "request.hpp"

#include <algorithm>
#include <cctype>

#include "mssqlcdc/error.hpp"

namespace mssqlcdc::tds {
namespace {

// ProcIDs of the system procedures a client may call by number (MS-TDS 2.2.6.6).
std::string procedure_by_id(std::uint16_t id) {
  switch (id) {
    case 1: return "sp_cursor";
    case 2: return "sp_cursoropen";
    case 3: return "sp_cursorprepare";
    case 4: return "sp_cursorexecute";
    case 5: return "sp_cursorprepexec";
    case 6: return "sp_cursorunprepare";
    case 7: return "sp_cursorfetch";
    case 8: return "sp_cursoroption";
    case 9: return "sp_cursorclose";
    case 10: return "sp_executesql";
    case 11: return "sp_prepare";
    case 12: return "sp_execute";
    case 13: return "sp_prepexec";
    case 14: return "sp_prepexecrpc";
    case 15: return "sp_unprepare";
    default: return "procedure id " + std::to_string(id);
  }
}

void skip_all_headers(Reader& r, std::size_t size) {
  if (size < 4) return;
  const std::uint32_t total = r.u32le();
  if (total < 4 || total > size) throw Error(ErrorKind::InvalidArgument, "ALL_HEADERS length out of range");
  r.skip(total - 4);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::string parse_sql_batch(std::span<const std::uint8_t> payload) {
  Reader r(payload);
  skip_all_headers(r, payload.size());
  return utf16le_to_utf8(r.bytes(r.remaining()));
}

std::vector<RpcCall> parse_rpc(std::span<const std::uint8_t> payload) {
  Reader r(payload);
  skip_all_headers(r, payload.size());
  std::vector<RpcCall> calls;
  while (!r.at_end()) {
    RpcCall call;
    const std::uint16_t name_length = r.u16le();
    call.procedure = name_length == 0xFFFF ? procedure_by_id(r.u16le()) : lower(r.utf16(name_length));
    r.skip(2);  // option flags: WithRecompile, NoMetaData, ReuseMetaData
    while (!r.at_end()) {
      const std::uint8_t next = payload[r.position()];
      // 0xFF (BatchFlag) and 0x80 (NoExecFlag) separate calls; a parameter starts with its
      // name's length, which is never 0x80 or more since names are at most 128 characters.
      if (next == 0xFF || next == 0x80 || next == 0xFE) {
        r.skip(1);
        break;
      }
      RpcParam p;
      p.name = r.b_varchar();
      p.output = (r.u8() & 0x01) != 0;
      p.type = read_type_info(r);
      p.value = read_value(r, p.type);
      call.params.push_back(std::move(p));
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

}  // namespace mssqlcdc::tds
