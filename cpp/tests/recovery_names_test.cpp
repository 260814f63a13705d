// The name tables the binding converts through: each name maps back to its enumerator, no two
// enumerators share a name, and the names are the ones Python's Literal types spell.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "mssqlcdc/recovery_names.hpp"

namespace mssqlcdc::recovery::names {
namespace {

template <typename E, std::size_t N>
std::vector<std::string> round_tripped(const std::array<EnumName<E>, N>& table) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < N; ++i) {
    const auto value = static_cast<E>(i);
    const std::string_view text = name_of(table, value);
    EXPECT_EQ(value_of(table, text), value) << text;
    out.emplace_back(text);
  }
  EXPECT_EQ(std::set<std::string>(out.begin(), out.end()).size(), N) << "two enumerators share a name";
  EXPECT_FALSE(value_of(table, "")) << "the empty text names no enumerator";
  return out;
}

using Names = std::vector<std::string>;

TEST(RecoveryNames, EveryTableMapsEachEnumeratorToOneNameAndBack) {
  EXPECT_EQ(round_tripped(kMode), (Names{"full", "chunked"}));
  EXPECT_EQ(round_tripped(kAction), (Names{"none", "resnapshot", "blocked"}));
  EXPECT_EQ(round_tripped(kReuseKind), (Names{"none", "completion", "open", "target"}));
  EXPECT_EQ(round_tripped(kStartSource),
            (Names{"recovering", "checkpoint", "state", "bootstrap", "starting_lsn", "none"}));
  EXPECT_EQ(round_tripped(kDurationGuard), (Names{"warn", "refuse", "off"}));
  EXPECT_EQ(round_tripped(kErrorKind), (Names{"none", "data_loss", "invalid_argument"}));
  EXPECT_EQ(round_tripped(kStep),
            (Names{"write_full_open", "take_snapshot", "open_chunked", "write_event", "clear_recovering"}));
}

TEST(RecoveryNames, ANameIsMatchedExactlyNotByCaseOrPrefix) {
  EXPECT_EQ(value_of(kMode, "chunked"), Mode::Chunked);
  EXPECT_FALSE(value_of(kMode, "Chunked"));
  EXPECT_FALSE(value_of(kMode, "chunk"));
  EXPECT_FALSE(value_of(kStep, "write_event "));
}

}  // namespace
}  // namespace mssqlcdc::recovery::names
