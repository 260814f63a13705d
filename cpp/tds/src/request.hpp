// request.hpp: the client's requests after login. A SQL batch (MS-TDS 2.2.6.7) is UTF-16LE text
// after ALL_HEADERS; an RPC request (MS-TDS 2.2.6.6) names a procedure by name or by its well-known id
// (sp_executesql is 10, sp_prepexec 13) and carries typed parameters. Several RPCs may share
// one message, separated by a batch flag.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mssqlcdc/tds/types.hpp"

namespace mssqlcdc::tds {

struct RpcParam {
  std::string name;  // "@stmt", or "" for a positional parameter
  bool output = false;
  ColumnType type;
  Value value;
};

struct RpcCall {
  std::string procedure;  // lower-case name; the well-known ids are given their names
  std::vector<RpcParam> params;
};

// Text of a SQL batch; ALL_HEADERS (TDS 7.2 and later) is skipped.
[[nodiscard]] std::string parse_sql_batch(std::span<const std::uint8_t> payload);
// Every call of an RPC message. Throws Error(InvalidArgument) for a truncated message or a
// parameter type this server does not read yet.
[[nodiscard]] std::vector<RpcCall> parse_rpc(std::span<const std::uint8_t> payload);

}  // namespace mssqlcdc::tds
