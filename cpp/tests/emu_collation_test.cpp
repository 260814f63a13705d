// The collation model (emu/collation.hpp). SQL Server facts come from Microsoft's documentation:
// - trailing spaces: https://learn.microsoft.com/en-us/sql/t-sql/language-elements/string-comparison-assignment
//   ('abc' and 'abc ' are equal in most comparisons, under every collation; LIKE is the exception)
// - _CI/_CS/_AS/_BIN2 and "lowercase letters sort ahead of their uppercase versions" under _CS:
//   https://learn.microsoft.com/en-us/sql/relational-databases/collations/collation-and-unicode-support
// - _BIN2 compares code points:
//   https://learn.microsoft.com/en-us/sql/t-sql/statements/windows-collation-name-transact-sql
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "mssqlcdc/emu/collation.hpp"
#include "mssqlcdc/emu/types.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {
namespace {

const Collation& named(const char* name) {
  const Collation* c = Collation::find(name);
  EXPECT_NE(c, nullptr) << name;
  return *c;
}

std::vector<std::string> sorted(std::vector<std::string> v, const Collation& c) {
  std::stable_sort(v.begin(), v.end(), [&](const auto& a, const auto& b) { return c.compare(a, b) < 0; });
  return v;
}

TEST(EmuCollation, TheDatabaseDefaultIsSqlLatin1GeneralCp1CiAs) {
  EXPECT_EQ(Collation::database_default().name(), "SQL_Latin1_General_CP1_CI_AS");
  EXPECT_EQ(SqlType::parse("nvarchar(20)").collation_name(), "SQL_Latin1_General_CP1_CI_AS");
  EXPECT_EQ(SqlType::parse("int").collation, nullptr);
}

TEST(EmuCollation, TrailingSpacesAreIgnoredUnderEveryCollationIncludingBin2) {
  for (const Collation* c : Collation::all()) {
    EXPECT_EQ(c->compare("abc", "abc   "), 0) << c->name();
    EXPECT_EQ(c->sort_key("abc"), c->sort_key("abc ")) << c->name();
    EXPECT_NE(c->compare(" abc", "abc"), 0) << c->name();   // leading spaces count
    EXPECT_NE(c->compare("abc\t", "abc"), 0) << c->name();  // only the space pads
  }
}

TEST(EmuCollation, CaseInsensitiveCollationsEquateCaseAndCaseSensitiveOnesDoNot) {
  for (const char* ci : {"SQL_Latin1_General_CP1_CI_AS", "Latin1_General_CI_AS", "Greek_CI_AS"})
    EXPECT_EQ(named(ci).compare("Straße", "STRAßE"), 0) << ci;
  for (const char* cs : {"SQL_Latin1_General_CP1_CS_AS", "Latin1_General_CS_AS", "Latin1_General_BIN2"})
    EXPECT_NE(named(cs).compare("abc", "ABC"), 0) << cs;
}

TEST(EmuCollation, AccentSensitiveCollationsKeepAccentedLettersApart) {
  for (const Collation* c : Collation::all()) EXPECT_NE(c->compare("resume", "résumé"), 0) << c->name();
}

TEST(EmuCollation, CaseSensitiveCollationsSortLowerCaseAheadOfUpperCase) {
  const std::vector<std::string> in{"B", "b", "A", "a"};
  const std::vector<std::string> want{"a", "A", "b", "B"};
  EXPECT_EQ(sorted(in, named("Latin1_General_CS_AS")), want);
  EXPECT_EQ(sorted(in, named("SQL_Latin1_General_CP1_CS_AS")), want);
}

TEST(EmuCollation, Bin2ComparesCodePoints) {
  const std::vector<std::string> in{"b", "a", "B", "A", "é", "z"};
  const std::vector<std::string> want{"A", "B", "a", "b", "z", "é"};  // U+0041 < U+0042 < U+0061 ... < U+00E9
  EXPECT_EQ(sorted(in, named("Latin1_General_BIN2")), want);
  EXPECT_EQ(sorted(in, named("latin1_general_100_bin2")), want);
}

TEST(EmuCollation, DictionaryCollationsSortAnAccentedLetterWithItsBaseLetter) {
  // Not a documented SQL Server fact: the emulator's model (docs/emulator.md, Collations).
  const std::vector<std::string> in{"f", "é", "e"};
  EXPECT_EQ(sorted(in, named("Latin1_General_CI_AS")), (std::vector<std::string>{"e", "é", "f"}));
}

TEST(EmuCollation, GreekCiAsEquatesGreekCapitalAndSmallLetters) {
  const Collation& greek = named("Greek_CI_AS");
  EXPECT_EQ(greek.compare("αβγ", "ΑΒΓ"), 0);
  EXPECT_EQ(greek.compare("Ωμέγα", "ΩΜΈΓΑ"), 0);
  EXPECT_LT(greek.compare("α", "Β"), 0);
  EXPECT_NE(named("Greek_CS_AS").compare("α", "Α"), 0);
}

TEST(EmuCollation, SortKeysOrderAndEquateAsCompareDoes) {
  const std::vector<std::string> words{"", " ", "a", "A", "ab", "aB", "Ab", "b", "é", "É", "e", "z", "α", "Α", "~"};
  for (const Collation* c : Collation::all()) {
    for (const auto& x : words) {
      for (const auto& y : words) {
        const int by_key = c->sort_key(x).compare(c->sort_key(y));
        EXPECT_EQ(by_key < 0 ? -1 : by_key > 0 ? 1 : 0, c->compare(x, y)) << c->name() << " " << x << " " << y;
      }
    }
  }
}

TEST(EmuCollation, AnUnknownCollationListsTheSupportedOnes) {
  try {
    (void)SqlType::parse("varchar(5) COLLATE Klingon_CI_AS");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(Collation::supported_names()), std::string::npos) << e.what();
  }
}

TEST(EmuCollation, TypeStringsTakeACollateSuffixForCharacterTypesOnly) {
  const SqlType t = SqlType::parse("nvarchar(20) collate latin1_general_cs_as");
  EXPECT_EQ(t.canonical(), "nvarchar(20)");
  EXPECT_EQ(t.collation_name(), "Latin1_General_CS_AS");
  EXPECT_EQ(t.declared(), "nvarchar(20) COLLATE Latin1_General_CS_AS");
  EXPECT_EQ(SqlType::parse(t.declared()), t);
  EXPECT_EQ(SqlType::parse("char(3) COLLATE Greek_CI_AS").collation_name(), "Greek_CI_AS");
  for (const char* bad : {"int COLLATE Latin1_General_CS_AS", "nvarchar(5) COLLATE Klingon_CI_AS"}) {
    try {
      (void)SqlType::parse(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::EmuSchema) << bad;
      EXPECT_NE(std::string(e.what()).find(std::string(bad).substr(std::string(bad).rfind(' ') + 1)), std::string::npos)
          << e.what();
    }
  }
}

TEST(EmuCollation, ACollateWithoutANameSaysSoRatherThanCallingTheTypeUnreadable) {
  for (const char* bad : {"nvarchar(10) COLLATE", "nvarchar(10) collate   "}) {
    try {
      (void)SqlType::parse(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::EmuSchema) << bad;
      EXPECT_NE(std::string(e.what()).find("without a collation name"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace mssqlcdc::emu::test
