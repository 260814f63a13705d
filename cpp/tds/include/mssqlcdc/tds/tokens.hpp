// tokens.hpp: the server's token stream (MS-TDS 2.2.7): result sets (COLMETADATA, ROW, NBCROW),
// statement ends (DONE, DONEPROC, DONEINPROC), messages (ERROR, INFO), the login answer
// (LOGINACK, ENVCHANGE, FEATUREEXTACK) and procedure results (RETURNSTATUS, RETURNVALUE).
// Each function appends one token to a Writer; the caller frames the whole stream.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "mssqlcdc/tds/types.hpp"
#include "mssqlcdc/tds/wire.hpp"

namespace mssqlcdc::tds {

// The token types this server writes, by their token byte.
enum class Token : std::uint8_t {
  ReturnStatus = 0x79,
  ColMetadata = 0x81,
  Error = 0xAA,
  Info = 0xAB,
  ReturnValue = 0xAC,
  LoginAck = 0xAD,
  FeatureExtAck = 0xAE,
  Row = 0xD1,
  NbcRow = 0xD2,
  EnvChange = 0xE3,
  Done = 0xFD,
  DoneProc = 0xFE,
  DoneInProc = 0xFF,
};

// DONE status bits (MS-TDS 2.2.7.6).
inline constexpr std::uint16_t kDoneFinal = 0x00;
inline constexpr std::uint16_t kDoneMore = 0x01;
inline constexpr std::uint16_t kDoneError = 0x02;
inline constexpr std::uint16_t kDoneCount = 0x10;
inline constexpr std::uint16_t kDoneAttention = 0x20;

// DONE's CurCmd for the statements the server ends with a count.
inline constexpr std::uint16_t kCmdSelect = 0xC1;

// ENVCHANGE types (MS-TDS 2.2.7.9) the server reports.
enum class EnvChange : std::uint8_t {
  Database = 1,
  Language = 2,
  PacketSize = 4,
  Collation = 7,
  BeginTransaction = 8,
  CommitTransaction = 9,
  RollbackTransaction = 10,
};

// One ERROR or INFO: SQL Server's number, state and severity ("class"), as clients show them.
struct ServerMessage {
  std::int32_t number = 0;
  std::uint8_t state = 1;
  std::uint8_t severity = 16;  // SQL Server's "class": 11..16 the user's errors, 20 and up fatal
  std::string text;            // at most 65535 characters
  std::string server;          // at most 255 characters, as are `procedure`
  std::string procedure;
  std::int32_t line = 1;
};

// The token writers. Each throws Error(InvalidArgument) for what the format cannot carry: a
// name or text past its length field, a token body past 65535 bytes, a value its column's type
// cannot hold (types.hpp). A throw may leave part of the token in `w`, so the caller discards
// the Writer then.

// COLMETADATA for a result set of `columns` (at most 65535, names at most 255 characters).
void write_colmetadata(Writer& w, std::span<const Column> columns);
// ROW when no value is NULL, else NBCROW, whose bitmap leaves NULLs out of the row body.
// `values` holds one value per column.
void write_row(Writer& w, std::span<const Column> columns, std::span<const Value> values);
// DONE, DONEPROC or DONEINPROC (`kind`) with the status bits (kDone*), the statement's CurCmd
// and the row count, which clients read when kDoneCount is set.
void write_done(Writer& w, Token kind, std::uint16_t status, std::uint16_t cur_cmd, std::uint64_t rows);
// The most characters (UTF-16 units) of a message's text that write_message sends, as SQL Server
// bounds a message at 2,047 characters (RAISERROR's documented limit); the rest is cut.
inline constexpr std::size_t kMaxMessageChars = 2047;
void write_message(Writer& w, Token kind, const ServerMessage& message);  // kind: Error or Info
// LOGINACK: the TDS version agreed, the server's program name and its version bytes.
void write_loginack(Writer& w, std::uint32_t tds_version, const std::string& program,
                    const std::array<std::uint8_t, 4>& version);
// ENVCHANGE of a text value (database, language, packet size) or of a byte value (collation,
// transaction descriptors).
void write_envchange(Writer& w, EnvChange type, const std::string& new_value, const std::string& old_value);
void write_envchange_bytes(Writer& w, EnvChange type, std::span<const std::uint8_t> new_value,
                           std::span<const std::uint8_t> old_value);
// FEATUREEXTACK (MS-TDS 2.2.7.11): with `fedauth`, the FEDAUTH feature (0x02) acknowledged with
// no data (a security token sent without a nonce); always the 0xFF terminator.
void write_feature_ext_ack(Writer& w, bool fedauth = false);
// RETURNSTATUS: a procedure's return code.
void write_return_status(Writer& w, std::int32_t status);
// RETURNVALUE: output parameter `ordinal` named `name` with its type and value.
void write_return_value(Writer& w, std::uint16_t ordinal, const std::string& name, const Column& column,
                        const Value& value);

}  // namespace mssqlcdc::tds
