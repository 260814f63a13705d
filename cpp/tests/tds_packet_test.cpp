#include <gtest/gtest.h>

#include "mssqlcdc/error.hpp"
#include "tds/src/packet.hpp"

namespace mssqlcdc::tds {
namespace {

std::span<const std::uint8_t, kHeaderSize> header_at(const Bytes& b, std::size_t at) {
  return std::span<const std::uint8_t, kHeaderSize>(b.data() + at, kHeaderSize);
}

TEST(TdsPacket, AMessageLargerThanOnePacketIsCutAndOnlyTheLastPacketEndsIt) {
  const Bytes payload(1200, 0xAB);
  const Bytes wire = frame_message(PacketType::TabularResult, payload, 512, 52);
  ASSERT_EQ(wire.size(), 1200 + 3 * kHeaderSize);  // 504 + 504 + 192 bytes of body
  MessageAssembler assembler;
  std::size_t at = 0;
  std::uint8_t expected_id = 1;
  std::optional<Message> message;
  while (at < wire.size()) {
    const PacketHeader h = parse_header(header_at(wire, at));
    EXPECT_EQ(h.type, PacketType::TabularResult);
    EXPECT_EQ(h.spid, 52);
    EXPECT_EQ(h.packet_id, expected_id++);
    const bool last = at + h.length == wire.size();
    EXPECT_EQ((h.status & kStatusEndOfMessage) != 0, last);
    message = assembler.add(h, std::span(wire).subspan(at + kHeaderSize, h.length - kHeaderSize));
    EXPECT_EQ(message.has_value(), last);
    at += h.length;
  }
  ASSERT_TRUE(message);
  EXPECT_EQ(message->payload, payload);
}

TEST(TdsPacket, AnEmptyMessageIsOneHeaderOnlyPacket) {
  const Bytes wire = frame_message(PacketType::TabularResult, {}, 4096, 0);
  ASSERT_EQ(wire.size(), kHeaderSize);
  EXPECT_EQ(parse_header(header_at(wire, 0)).length, kHeaderSize);
}

TEST(TdsPacket, TheHeaderLengthIsBigEndian) {
  const Bytes wire = frame_message(PacketType::SqlBatch, Bytes(300, 1), 4096, 0);
  EXPECT_EQ(wire[2], 0x01);  // 308 = 0x0134
  EXPECT_EQ(wire[3], 0x34);
}

TEST(TdsPacket, AMessageTheClientMarksIgnoreIsDropped) {
  MessageAssembler assembler;
  PacketHeader h{PacketType::SqlBatch, 0, 12, 0, 1, 0};
  const Bytes body{1, 2, 3, 4};
  EXPECT_FALSE(assembler.add(h, body));
  h.status = kStatusEndOfMessage | kStatusIgnore;
  EXPECT_FALSE(assembler.add(h, body));
  h.status = kStatusEndOfMessage;
  const auto next = assembler.add(h, body);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->payload, body);  // the abandoned message left nothing behind
}

TEST(TdsPacket, AHeaderShorterThanItselfIsRefused) {
  const Bytes bad{4, 1, 0, 4, 0, 0, 1, 0};
  EXPECT_THROW((void)parse_header(header_at(bad, 0)), Error);
}

}  // namespace
}  // namespace mssqlcdc::tds

namespace mssqlcdc::tds {
namespace {

TEST(TdsPacket, AMessageGrowingPastTheBoundEndsTheConnectionInsteadOfTheServersMemory) {
  MessageAssembler assembler;
  const Bytes body(kMaxPacketSize - kHeaderSize, 0x41);
  PacketHeader h{};
  h.type = PacketType::SqlBatch;
  h.status = 0;  // never the end of the message
  h.length = static_cast<std::uint16_t>(body.size() + kHeaderSize);
  std::size_t sent = 0;
  EXPECT_THROW(
      {
        while (sent <= kMaxMessageBytes) {
          (void)assembler.add(h, body);
          sent += body.size();
        }
      },
      Error);
  EXPECT_LE(sent, kMaxMessageBytes);
  // The assembler starts over: a small message is accepted after it.
  h.status = kStatusEndOfMessage;
  EXPECT_TRUE(assembler.add(h, Bytes{1, 2}).has_value());
}

}  // namespace
}  // namespace mssqlcdc::tds
