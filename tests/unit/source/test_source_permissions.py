"""A stream whose login may not read its capture instance (decisions 1280, 1281).

SQL Server hides such an instance from sys.sp_cdc_help_change_data_capture and answers
sys.fn_cdc_get_min_lsn with zeros; the stream must fail with an error that names the instance
and the role grant to ask for, and must never take the zeros for purged changes. Oracles: the
emulator as dbo on the same file, and the texts of the errors the library documents.
Connections stay on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.core import lsn
from mssql_cdc.core.offsets import StreamOffset
from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import ConfigError, DataLossError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.source.batch_plan import plan_batch
from mssql_cdc.source.table_schema import declared_columns, resolve_table
from mssql_cdc.sqlserver.backend_choice import Backend, open_backend
from mssql_cdc.sqlserver.emulated.backend import EmulatorBackend
from mssql_cdc.sqlserver.emulated.snapshot import EmulatorSnapshotReader
from mssql_cdc.sqlserver.emulated.tiles import EmulatorTileHasher
from mssql_cdc.sqlserver.metadata import ReadColumn
from tests.unit.support.emulator_oracle import at, orders

GRANT = r"ALTER ROLE \[<role_name>\] ADD MEMBER"


@pytest.fixture
def gated(tmp_path: Path) -> Path:
    """dbo_orders gated by cdc_readers; alice is no member, purged changes are none."""
    path = tmp_path / "e.db"
    emu = orders(path)
    emu.disable_cdc("dbo_orders")
    emu.enable_cdc("dbo.orders", role_name="cdc_readers")
    emu.commit([("insert", "dbo.orders", {"order_id": i}) for i in range(3)], at=at(1))
    emu.create_user("alice")
    emu.close()
    return path


def _config(path: Path, fail_on_data_loss: str = "true") -> SourceConfig:
    return SourceConfig.from_options(
        {
            "captureInstance": "dbo_orders",
            "backend": "emulator",
            "emulatorPath": str(path),
            "failOnDataLoss": fail_on_data_loss,
        }
    )


def test_resolving_an_instance_the_login_may_not_read_names_it_and_the_role_grant(
    gated: Path,
) -> None:
    as_alice = EmulatorBackend(str(gated), user="alice")
    with pytest.raises(ConfigError, match="'dbo_orders' does not exist or this login") as e:
        resolve_table(as_alice, "dbo_orders")
    assert "role_name" in str(e.value)
    assert "ALTER ROLE [<role_name>] ADD MEMBER" in str(e.value)
    assert resolve_table(EmulatorBackend(str(gated)), "dbo_orders").instances  # dbo sees it


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_zeros_from_min_lsn_for_a_login_that_lost_access_are_no_data_loss(
    gated: Path, fail_on_data_loss: str
) -> None:
    dbo = EmulatorBackend(str(gated))
    config = _config(gated, fail_on_data_loss)
    table = resolve_table(dbo, "dbo_orders")  # resolved while the login could still read
    columns = declared_columns(dbo, config, table)
    low = dbo.min_lsn("dbo_orders")
    assert low is not None
    start = StreamOffset(lsn.decrement(low), None)
    end = StreamOffset(dbo.max_lsn() or lsn.ZERO, None)
    as_alice = EmulatorBackend(str(gated), user="alice")
    assert as_alice.min_lsn("dbo_orders") == lsn.ZERO
    snapshots = EmulatorSnapshotReader(str(gated))
    backend = Backend(
        as_alice, as_alice, as_alice, snapshots, snapshots, EmulatorTileHasher(snapshots), dbo.close
    )
    with pytest.raises(PermissionError, match=GRANT) as raised:
        plan_batch(backend, config, table, columns, start, end, time_zone="UTC", num_partitions=1)
    assert not isinstance(raised.value, DataLossError)
    assert "'dbo_orders'" in str(raised.value)


def test_a_change_read_the_user_may_not_make_raises_the_grant_to_ask_for(gated: Path) -> None:
    dbo = EmulatorBackend(str(gated))
    low, high = dbo.min_lsn("dbo_orders"), dbo.max_lsn()
    assert low is not None
    assert high is not None
    as_alice = EmulatorBackend(str(gated), user="alice")
    with pytest.raises(
        PermissionError, match=r"GRANT SELECT ON cdc\.\[dbo_orders_CT\] TO \[alice\]"
    ):
        list(
            as_alice.read_changes(
                "dbo_orders",
                low,
                high,
                columns=[ReadColumn("order_id", "INT", "int")],
                include_command_id=False,
                time_zone="UTC",
                batch_rows=10,
            )
        )


def test_over_tds_a_login_outside_the_role_fails_to_resolve_with_the_role_grant(
    gated: Path,
) -> None:
    emu = Emulator.open(gated)
    try:
        with emu.serve() as server:
            text = server.connection_string("pymssql").replace("UID=sa", "UID=alice")
            backend = open_backend(
                SourceConfig.from_options(
                    {
                        "captureInstance": "dbo_orders",
                        "backend": "pymssql",
                        "connectionString": text,
                    }
                )
            )
            try:
                assert backend.planner.min_lsn("dbo_orders") == lsn.ZERO
                assert not backend.catalog.change_table_access("dbo_orders").can_select
                with pytest.raises(ConfigError, match=GRANT):
                    resolve_table(backend.catalog, "dbo_orders")
            finally:
                backend.close()
    finally:
        emu.close()
