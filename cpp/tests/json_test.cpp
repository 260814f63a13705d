#include "mssqlcdc/json.hpp"

#include <gtest/gtest.h>

#include "mssqlcdc/error.hpp"

namespace mssqlcdc::json {
namespace {

TEST(Json, ParsesObjectsArraysStringsNumbersBooleansAndNull) {
  const Value v = parse(R"( {"a": [1, -2.5e3, true, false, null], "b": {"c": "d"}} )");
  ASSERT_TRUE(v.is_object());
  const Value* a = v.find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->as_array().size(), 5u);
  EXPECT_EQ(a->as_array()[0].as_int64(), 1);
  EXPECT_EQ(a->as_array()[1].as_number().text, "-2.5e3");
  EXPECT_FALSE(a->as_array()[1].as_int64().has_value());
  EXPECT_TRUE(a->as_array()[2].as_bool());
  EXPECT_FALSE(a->as_array()[3].as_bool());
  EXPECT_TRUE(a->as_array()[4].is_null());
  EXPECT_EQ(v.find("b")->find("c")->as_string(), "d");
  EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(Json, DecodesEveryEscapeIncludingSurrogatePairs) {
  const Value v = parse(R"("q\" b\\ s\/ \b\f\n\r\t \u00e9 \ud83d\ude00")");
  EXPECT_EQ(v.as_string(), "q\" b\\ s/ \b\f\n\r\t \xC3\xA9 \xF0\x9F\x98\x80");
}

TEST(Json, KeepsRawUtf8AndRejectsInvalidUtf8) {
  EXPECT_EQ(parse("\"caf\xC3\xA9\"").as_string(), "caf\xC3\xA9");
  EXPECT_THROW((void)parse("\"\xC3\""), Error);
  EXPECT_THROW((void)parse("\"\xC0\xAF\""), Error);      // overlong '/'
  EXPECT_THROW((void)parse("\"\xED\xA0\x80\""), Error);  // an encoded surrogate
}

TEST(Json, RejectsMalformedDocumentsWithTheByteOffset) {
  for (const char* bad : {"",          "{",           "{\"a\":1,}",  "[1,]",     "{'a':1}",
                          "{\"a\" 1}", "01",          "1.",          "-",        "1e",
                          "tru",       "nul",         "\"abc",       "\"a\nb\"", "\"\\x\"",
                          "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "{} {}",    "{\"a\":1,\"a\":2}",
                          "NaN",       "[1] x"}) {
    try {
      (void)parse(bad);
      FAIL() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("invalid JSON at byte"), std::string::npos) << e.what();
    }
  }
}

TEST(Json, RefusesNestingDeeperThanSixtyFourLevels) {
  EXPECT_NO_THROW((void)parse(std::string(60, '[') + std::string(60, ']')));
  EXPECT_THROW((void)parse(std::string(100000, '[')), Error);
}

TEST(Json, TellsIntegersFromOtherNumbersAndOutOfRangeValues) {
  EXPECT_EQ(parse("9223372036854775807").as_int64(), INT64_MAX);
  EXPECT_FALSE(parse("9223372036854775808").as_int64().has_value());
  EXPECT_FALSE(parse("1.0").as_int64().has_value());
  EXPECT_FALSE(parse("\"1\"").as_int64().has_value());
  EXPECT_EQ(parse("-0").as_int64(), 0);
}

TEST(Json, DumpsCompactlyInMemberOrderAndRoundTrips) {
  const Value v = Object{{"z", 1}, {"a", "x\"\n\x01"}, {"n", nullptr}, {"l", Array{true, false}}};
  const std::string text = dump(v);
  EXPECT_EQ(text, R"({"z":1,"a":"x\"\n\u0001","n":null,"l":[true,false]})");
  EXPECT_EQ(dump(parse(text)), text);
}

}  // namespace
}  // namespace mssqlcdc::json
