// tds_catalog_test_util.hpp: an emulator file with dbo.orders and the catalog the query engine
// reads it through, for the tests of what the TDS front end serves.
#pragma once

#include <memory>
#include <vector>

#include "emu_test_util.hpp"
#include "mssqlcdc/emu/reader.hpp"
#include "tds/src/catalog.hpp"

namespace mssqlcdc::tds::test {

// dbo.orders (emu::test::orders_file) with no commits yet; a test's fixture makes its commits
// and keeps their LSNs in `commits`. The reader and catalog see every commit made after them.
struct OrdersCatalog {
  emu::test::TempFile file;
  std::unique_ptr<emu::Engine> engine = emu::test::orders_file(file.path());
  std::vector<Lsn> commits;
  emu::Reader reader{file.path()};
  std::unique_ptr<Catalog> catalog = emulator_catalog(reader, "shop");
};

}  // namespace mssqlcdc::tds::test
