// cleanup.cpp: sys.sp_cdc_cleanup_change_table and the cleanup job. The
// mark moves first, in its own transaction; the deletes follow in batches, so a reader can see
// a moved mark while old rows still exist, as on SQL Server.
#include <algorithm>

#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

namespace {

std::int64_t threshold(Db& db) { return std::stoll(get_setting(db, "cleanup_threshold")); }

void delete_below(Db& db, const Instance& in, const Lsn& mark, std::int64_t batch) {
  const std::string key = in.has_command_id ? "\"__$start_lsn\", \"__$command_id\", \"__$seqval\", \"__$operation\""
                                            : "\"__$start_lsn\", \"__$seqval\", \"__$operation\"";
  const std::string sql = "DELETE FROM " + in.change_table() + " WHERE (" + key + ") IN (SELECT " + key + " FROM " +
                          in.change_table() + " WHERE \"__$start_lsn\" < ? ORDER BY " + key + " LIMIT ?)";
  for (;;) {
    WriteTxn txn(db);
    db.prepare(sql).bind_blob(1, lsn_blob(mark)).bind(2, batch).run();
    const int n = db.changes();
    txn.commit();
    if (n < batch) break;
  }
}

void prune_mapping(Db& db, std::int64_t batch) {
  for (;;) {
    WriteTxn txn(db);
    auto low = db.prepare("SELECT min(start_lsn) FROM \"cdc.change_tables\"");
    low.step();
    if (low.is_null(0)) return;
    const std::string mark = low.blob(0);
    db.prepare(
          "DELETE FROM \"cdc.lsn_time_mapping\" WHERE start_lsn IN (SELECT start_lsn FROM \"cdc.lsn_time_mapping\" "
          "WHERE start_lsn < ? ORDER BY start_lsn LIMIT ?)")
        .bind_blob(1, mark)
        .bind(2, batch)
        .run();
    const int n = db.changes();
    txn.commit();
    if (n < batch) break;
  }
}

// The smallest LSN among the entries sharing `entry`'s tran_end_time.
Lsn first_of_time(Db& db, const std::string& entry_blob) {
  auto st = db.prepare(
      "SELECT min(start_lsn) FROM \"cdc.lsn_time_mapping\" WHERE tran_end_time = (SELECT tran_end_time FROM "
      "\"cdc.lsn_time_mapping\" WHERE start_lsn = ?)");
  st.bind_blob(1, entry_blob);
  st.step();
  return lsn_from_blob(st.blob(0));
}

}  // namespace

void cleanup_instance(Db& db, std::string_view capture_instance, const Lsn& mark) {
  Instance in;
  {
    WriteTxn txn(db);
    in = load_instance(db, capture_instance);
    if (in.start_lsn < mark) {
      auto st = db.prepare("SELECT 1 FROM \"cdc.lsn_time_mapping\" WHERE start_lsn = ?");
      st.bind_blob(1, lsn_blob(mark));
      if (!st.step()) {
        throw Error(ErrorKind::EmuArgument,
                    "capture instance '" + in.name + "': low water mark " + mark.to_string() +
                        " is not the start_lsn of an entry in cdc.lsn_time_mapping (error 22964); "
                        "pass an LSN from lsn_time_mapping()",
                    22964);
      }
      const Lsn to = first_of_time(db, lsn_blob(mark));
      if (in.start_lsn < to) {
        db.prepare("UPDATE \"cdc.change_tables\" SET start_lsn = ? WHERE object_id = ?")
            .bind_blob(1, lsn_blob(to))
            .bind(2, in.object_id)
            .run();
        bump_catalog(db);
        in.start_lsn = to;
      }
    }
    txn.commit();
  }
  const std::int64_t batch = threshold(db);
  delete_below(db, in, in.start_lsn, batch);
  prune_mapping(db, batch);
}

void cleanup_job(Db& db, std::optional<int> retention_minutes) {
  if (retention_minutes && (*retention_minutes < 1 || *retention_minutes > 52'494'800)) {
    throw Error(ErrorKind::InvalidArgument,
                "retention_minutes=" + std::to_string(*retention_minutes) + " is not valid; it takes 1..52494800");
  }
  std::vector<std::string> names;
  {
    WriteTxn txn(db);
    const std::int64_t minutes =
        retention_minutes ? *retention_minutes : std::stoll(get_setting(db, "retention_minutes"));
    auto newest = db.prepare("SELECT max(tran_end_time) FROM \"cdc.lsn_time_mapping\"");
    newest.step();
    if (newest.is_null(0)) return;
    const std::int64_t cut = newest.i64(0) - minutes * 60 * 1'000'000;
    const bool after = get_setting(db, "cleanup_job_rule") == "after";
    auto pick = db.prepare(after ? "SELECT start_lsn FROM \"cdc.lsn_time_mapping\" WHERE tran_end_time > ? ORDER BY "
                                   "tran_end_time, start_lsn LIMIT 1"
                                 : "SELECT start_lsn FROM \"cdc.lsn_time_mapping\" WHERE tran_end_time <= ? ORDER BY "
                                   "tran_end_time DESC, start_lsn LIMIT 1");
    pick.bind(1, cut);
    if (!pick.step()) return;
    const std::string mark = pick.blob(0);
    db.prepare("UPDATE \"cdc.change_tables\" SET start_lsn = ? WHERE start_lsn < ?")
        .bind_blob(1, mark)
        .bind_blob(2, mark)
        .run();
    bump_catalog(db);
    auto all = db.prepare("SELECT capture_instance FROM \"cdc.change_tables\" ORDER BY object_id");
    while (all.step()) names.push_back(all.text(0));
    txn.commit();
  }
  const std::int64_t batch = threshold(db);
  for (const auto& name : names) {
    Instance in;
    {
      ReadTxn r(db);
      auto found = find_instance(db, name);
      if (!found) continue;
      in = *found;
    }
    delete_below(db, in, in.start_lsn, batch);
  }
  prune_mapping(db, batch);
}

void Engine::cleanup(std::string_view capture_instance, const Lsn& low_water_mark) {
  cleanup_instance(*db_, capture_instance, low_water_mark);
}

void Engine::run_cleanup_job(std::optional<int> retention_minutes) { cleanup_job(*db_, retention_minutes); }

}  // namespace mssqlcdc::emu
