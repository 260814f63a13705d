// emu_test_util.hpp: a temporary emulator file per test and small value builders.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <utility>

#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu::test {

class TempFile {
 public:
  TempFile() {
    static std::mt19937_64 rng(std::random_device{}());
    dir_ = std::filesystem::temp_directory_path() / ("emu-test-" + std::to_string(rng()));
    std::filesystem::create_directories(dir_);
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  [[nodiscard]] std::filesystem::path path() const { return dir_ / "e.db"; }
  [[nodiscard]] std::filesystem::path dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

inline Value I(std::int64_t v) {
  Value x;
  x.kind = Value::Kind::Int;
  x.i = v;
  return x;
}
inline Value S(std::string v) {
  Value x;
  x.kind = Value::Kind::Text;
  x.s = std::move(v);
  return x;
}
inline Value D(std::string v) {
  Value x;
  x.kind = Value::Kind::Decimal;
  x.s = std::move(v);
  return x;
}
inline Value N() { return Value{}; }

inline Change insert(const std::string& table, Row row) {
  return Change{Change::Kind::Insert, table, std::move(row), std::nullopt};
}
inline Change update(const std::string& table, Row row) {
  return Change{Change::Kind::Update, table, std::move(row), std::nullopt};
}
inline Change key_update(const std::string& table, Row row, Row old) {
  return Change{Change::Kind::Update, table, std::move(row), std::move(old)};
}
inline Change del(const std::string& table, Row key) {
  return Change{Change::Kind::Delete, table, std::move(key), std::nullopt};
}

constexpr Micros kStart = 1'790'000'000'000'000;  // 2026-09-21, a fixed test clock
constexpr Micros kSecond = 1'000'000;

// A new file without tables whose clock starts at `start`, opened.
inline std::unique_ptr<Engine> empty_file(const std::filesystem::path& p, Micros start = kStart,
                                          const std::string& capture = "immediate") {
  CreateOptions o;
  o.start_micros = start;
  o.capture = capture;
  Engine::create(p, o);
  return std::make_unique<Engine>(p);
}

// A new file with dbo.orders(order_id int PK, status nvarchar(20), amount decimal(18,2)) and
// instance dbo_orders.
inline std::unique_ptr<Engine> orders_file(const std::filesystem::path& p, const std::string& capture = "immediate") {
  auto e = empty_file(p, kStart, capture);
  e->create_table("dbo.orders", {{"order_id", "int"}, {"status", "nvarchar(20)"}, {"amount", "decimal(18,2)"}},
                  {"order_id"});
  e->enable_cdc("dbo.orders", std::nullopt, std::nullopt);
  return e;
}

// The number and message of the Error fn throws; number -1 when it throws none.
inline std::pair<int, std::string> failure(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return {e.number(), e.what()};
  }
  return {-1, ""};
}
inline int error_number(const std::function<void()>& fn) { return failure(fn).first; }
inline std::string error_message(const std::function<void()>& fn) { return failure(fn).second; }

}  // namespace mssqlcdc::emu::test
