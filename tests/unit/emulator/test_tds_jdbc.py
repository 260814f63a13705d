"""The emulator over TDS through Microsoft's JDBC driver: a tiny Java program, compiled here
with javac, connects with the server's JDBC URL and prints the LSNs it reads as hex.

The jar comes from `.cache/jars` (`make setup`); the oracle is the emulator's Python API.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from mssql_cdc.spark import delta_jars

_PROGRAM = """
import java.sql.*;

public class ReadLsns {
  static String hex(byte[] bytes) {
    StringBuilder out = new StringBuilder("0x");
    for (byte b : bytes) out.append(String.format("%02X", b));
    return out.toString();
  }

  public static void main(String[] args) throws Exception {
    try (Connection conn = DriverManager.getConnection(args[0]);
         Statement plain = conn.createStatement();
         PreparedStatement bound = conn.prepareStatement("SELECT sys.fn_cdc_get_min_lsn(?)")) {
      try (ResultSet rows = plain.executeQuery("SELECT sys.fn_cdc_get_max_lsn()")) {
        rows.next();
        System.out.println(hex(rows.getBytes(1)));
      }
      bound.setString(1, "dbo_orders");
      try (ResultSet rows = bound.executeQuery()) {
        rows.next();
        System.out.println(hex(rows.getBytes(1)));
      }
    }
  }
}
"""


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    emu.commit([("insert", "dbo.orders", {"order_id": 1})], at="2026-09-28T14:00")
    emu.idle(at="2026-09-28T14:05")
    yield emu
    emu.close()


@pytest.fixture
def server(emulator: Emulator) -> Iterator[TdsServer]:
    with emulator.serve() as srv:
        yield srv


def test_microsofts_jdbc_driver_reads_the_emulators_lsns(
    emulator: Emulator, server: TdsServer, tmp_path: Path
) -> None:
    [jar] = [j for j in delta_jars() if j.name.startswith("mssql-jdbc-")]
    source = tmp_path / "ReadLsns.java"
    source.write_text(_PROGRAM)
    subprocess.run(["javac", "-d", str(tmp_path), str(source)], check=True, timeout=120)
    done = subprocess.run(
        ["java", "-cp", f"{jar}:{tmp_path}", "ReadLsns", server.connection_string("jdbc")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.split() == [
        emulator.reader().max_lsn(),
        emulator.reader().min_lsn("dbo_orders"),
    ]
