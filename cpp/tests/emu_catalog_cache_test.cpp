// The catalog a Reader gives the TDS front end is loaded once per catalog state and shared by
// every Reader of the process, so a statement's cost does not grow with the tables of the file;
// any change of the catalog, from any connection, gives the next read the new catalog.
#include <gtest/gtest.h>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/reader.hpp"

namespace mssqlcdc::emu::test {
namespace {

std::vector<std::string> table_names(const Objects& objects) {
  std::vector<std::string> out;
  for (const auto& t : objects.tables) out.push_back(t.schema + "." + t.name);
  return out;
}

std::vector<std::string> instance_names(const Objects& objects) {
  std::vector<std::string> out;
  for (const auto& in : objects.instances) out.push_back(in.name);
  return out;
}

void make_orders(Engine& e, const std::string& table) {
  e.create_table(table, {{"id", "int"}, {"note", "nvarchar(20)"}}, {"id"});
  e.enable_cdc(table, std::nullopt, std::nullopt);
}

TEST(EmuCatalogCache, TwoReadersOfAnUnchangedFileShareOneCatalogLoad) {
  TempFile f;
  auto e = empty_file(f.path());
  make_orders(*e, "dbo.orders");
  Reader a(f.path());
  Reader b(f.path());
  const auto first = a.catalog();
  EXPECT_EQ(first.get(), a.catalog().get());
  EXPECT_EQ(first.get(), b.catalog().get());
  // Rows written are not the catalog: they keep it.
  e->commit({insert("dbo.orders", {{"id", I(1)}, {"note", S("a")}})}, kStart + kSecond);
  EXPECT_EQ(first.get(), b.catalog().get());
}

TEST(EmuCatalogCache, ACatalogChangeFromAnotherConnectionIsSeenByTheNextRead) {
  TempFile f;
  auto e = empty_file(f.path());
  make_orders(*e, "dbo.orders");
  Reader r(f.path());
  const auto before = r.catalog();
  EXPECT_EQ(table_names(*before), (std::vector<std::string>{"dbo.orders"}));

  make_orders(*e, "dbo.parts");
  const auto after = r.catalog();
  EXPECT_EQ(table_names(*after), (std::vector<std::string>{"dbo.orders", "dbo.parts"}));
  EXPECT_EQ(instance_names(*after), (std::vector<std::string>{"dbo_orders", "dbo_parts"}));
  // The catalog read before stays as it was for whoever still holds it.
  EXPECT_EQ(table_names(*before), (std::vector<std::string>{"dbo.orders"}));

  e->disable_cdc("dbo_parts");
  EXPECT_EQ(instance_names(*r.catalog()), (std::vector<std::string>{"dbo_orders"}));
}

TEST(EmuCatalogCache, TwoCopiesOfOneFileThatChangeApartNeverShareACatalog) {
  TempFile f;
  {
    auto e = empty_file(f.path());
    make_orders(*e, "dbo.orders");
  }  // the last connection's close folds the WAL into the file, so a copy is whole
  const auto copy = f.dir() / "copy.db";
  std::filesystem::copy_file(f.path(), copy);
  {
    Reader original(f.path());
    Reader copied(copy);
    EXPECT_EQ(original.catalog().get(), copied.catalog().get());  // equal catalogs, one load
  }
  Engine(f.path()).create_table("dbo.left", {{"id", "int"}}, {"id"});
  Engine(copy).create_table("dbo.right", {{"id", "int"}}, {"id"});
  EXPECT_EQ(table_names(*Reader(f.path()).catalog()), (std::vector<std::string>{"dbo.left", "dbo.orders"}));
  EXPECT_EQ(table_names(*Reader(copy).catalog()), (std::vector<std::string>{"dbo.orders", "dbo.right"}));
}

}  // namespace
}  // namespace mssqlcdc::emu::test
