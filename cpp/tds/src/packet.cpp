#include "packet.hpp"

#include <algorithm>
#include <string>

#include "mssqlcdc/error.hpp"

namespace mssqlcdc::tds {

PacketHeader parse_header(std::span<const std::uint8_t, kHeaderSize> bytes) {
  Reader r(bytes);
  PacketHeader h;
  h.type = static_cast<PacketType>(r.u8());
  h.status = r.u8();
  h.length = r.u16be();
  h.spid = r.u16be();
  h.packet_id = r.u8();
  h.window = r.u8();
  if (h.length < kHeaderSize) {
    throw Error(ErrorKind::InvalidArgument,
                "TDS packet length " + std::to_string(h.length) + " is shorter than its 8-byte header");
  }
  return h;
}

Bytes frame_message(PacketType type, std::span<const std::uint8_t> payload, std::size_t packet_size,
                    std::uint16_t spid) {
  const std::size_t size = std::clamp(packet_size, kMinPacketSize, kMaxPacketSize);
  const std::size_t body = size - kHeaderSize;
  Writer w;
  std::size_t at = 0;
  std::uint8_t id = 1;
  do {
    const std::size_t n = std::min(body, payload.size() - at);
    const bool last = at + n == payload.size();
    w.u8(static_cast<std::uint8_t>(type));
    w.u8(last ? kStatusEndOfMessage : 0);
    w.u16be(static_cast<std::uint16_t>(n + kHeaderSize));
    w.u16be(spid);
    w.u8(id++);
    w.u8(0);
    w.bytes(payload.subspan(at, n));
    at += n;
  } while (at < payload.size());
  return w.take();
}

std::optional<Message> MessageAssembler::add(const PacketHeader& header, std::span<const std::uint8_t> body) {
  if (!partial_) {
    partial_.emplace();
    partial_->type = header.type;
    // RESETCONNECTION (0x08) and RESETCONNECTIONSKIPTRAN (0x10) arrive on a message's first packet.
    partial_->reset_connection = (header.status & 0x18) != 0;
  }
  if (partial_->payload.size() + body.size() > kMaxMessageBytes) {
    partial_.reset();
    throw Error(ErrorKind::InvalidArgument, "a client message exceeds " + std::to_string(kMaxMessageBytes >> 20) +
                                                " MiB; the connection is closed");
  }
  partial_->payload.insert(partial_->payload.end(), body.begin(), body.end());
  if ((header.status & kStatusEndOfMessage) == 0) return std::nullopt;
  std::optional<Message> done = std::move(partial_);
  partial_.reset();
  if ((header.status & kStatusIgnore) != 0) return std::nullopt;
  return done;
}

}  // namespace mssqlcdc::tds
