// tokens.hpp: the server's token stream (MS-TDS 2.2.7): result sets (COLMETADATA, ROW, NBCROW),
// statement ends (DONE, DONEPROC, DONEINPROC), messages (ERROR, INFO), the login answer
// (LOGINACK, ENVCHANGE, FEATUREEXTACK) and procedure results (RETURNSTATUS, RETURNVALUE).
// Each function appends one token to a Writer; the caller frames the whole stream.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "mssqlcdc/tds/types.hpp"
#include "mssqlcdc/tds/wire.hpp"

namespace mssqlcdc::tds {

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
  std::uint8_t severity = 16;
  std::string text;
  std::string server;
  std::string procedure;
  std::int32_t line = 1;
};

void write_colmetadata(Writer& w, std::span<const Column> columns);
// ROW when no value is NULL, else NBCROW, whose bitmap leaves NULLs out of the row body.
void write_row(Writer& w, std::span<const Column> columns, std::span<const Value> values);
void write_done(Writer& w, Token kind, std::uint16_t status, std::uint16_t cur_cmd, std::uint64_t rows);
void write_message(Writer& w, Token kind, const ServerMessage& message);  // kind: Error or Info
void write_loginack(Writer& w, std::uint32_t tds_version, const std::string& program,
                    const std::array<std::uint8_t, 4>& version);
void write_envchange(Writer& w, EnvChange type, const std::string& new_value, const std::string& old_value);
void write_envchange_bytes(Writer& w, EnvChange type, std::span<const std::uint8_t> new_value,
                           std::span<const std::uint8_t> old_value);
void write_feature_ext_ack(Writer& w);  // acknowledges no feature: only the terminator
void write_return_status(Writer& w, std::int32_t status);
void write_return_value(Writer& w, std::uint16_t ordinal, const std::string& name, const Column& column,
                        const Value& value);

}  // namespace mssqlcdc::tds
