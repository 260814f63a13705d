// packet.hpp: TDS packets (MS-TDS 2.2.3). A message travels as one or more packets, each an
// 8-byte header (type, status, big-endian length including the header, SPID, packet id,
// window) and a body; the last packet of a message carries the end-of-message status bit.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "mssqlcdc/tds/wire.hpp"

namespace mssqlcdc::tds {

enum class PacketType : std::uint8_t {
  SqlBatch = 1,
  Rpc = 3,
  TabularResult = 4,
  Attention = 6,
  BulkLoad = 7,
  FedAuthToken = 8,
  TransactionManager = 14,
  Login7 = 16,
  Sspi = 17,
  PreLogin = 18,
};

inline constexpr std::uint8_t kStatusEndOfMessage = 0x01;
inline constexpr std::uint8_t kStatusIgnore = 0x02;  // the client abandons the message
inline constexpr std::size_t kHeaderSize = 8;
inline constexpr std::size_t kMinPacketSize = 512;
inline constexpr std::size_t kMaxPacketSize = 32767;
inline constexpr std::size_t kDefaultPacketSize = 4096;

struct PacketHeader {
  PacketType type = PacketType::TabularResult;
  std::uint8_t status = 0;
  std::uint16_t length = 0;  // header included
  std::uint16_t spid = 0;
  std::uint8_t packet_id = 0;
  std::uint8_t window = 0;
};

// Throws Error(InvalidArgument) for a length shorter than the header itself.
[[nodiscard]] PacketHeader parse_header(std::span<const std::uint8_t, kHeaderSize> bytes);

// Cuts `payload` into packets of at most `packet_size` bytes (header included), numbered from 1
// (mod 256), the last one marked end-of-message. An empty payload is one header-only packet.
[[nodiscard]] Bytes frame_message(PacketType type, std::span<const std::uint8_t> payload, std::size_t packet_size,
                                  std::uint16_t spid);

struct Message {
  PacketType type = PacketType::SqlBatch;
  Bytes payload;
  bool reset_connection = false;
};

// Joins the packets of one message. add() returns the message at its last packet; a message
// whose last packet says "ignore" is dropped (nothing returned), as the client asked.
// The largest client message (a batch or an RPC with its parameters) a connection holds: a
// client that sends more is disconnected rather than allowed to grow the server without bound.
inline constexpr std::size_t kMaxMessageBytes = std::size_t{64} << 20;

class MessageAssembler {
 public:
  // Adds one packet; returns the message at its last packet. Throws Error(InvalidArgument) when
  // the message grows past kMaxMessageBytes.
  std::optional<Message> add(const PacketHeader& header, std::span<const std::uint8_t> body);

 private:
  std::optional<Message> partial_;
};

}  // namespace mssqlcdc::tds
