"""What the demo streams: orders tables on the emulator and a seeded workload over simulated time.

The tables all have the orders shape; one table is `dbo.orders`, more are numbered. The
workload commits inserts, updates and deletes on a simulated clock and lets SQL Server's
capture and cleanup jobs run, so changes age out of CDC as they would on a server.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import ConfigError

__all__ = [
    "MAX_TABLES",
    "RETENTION_MINUTES",
    "START",
    "TABLE",
    "Workload",
    "create_orders_table",
    "paused_instances",
    "table_names",
]

TABLE = "dbo.orders"
START = datetime(2026, 9, 24, 8, 0, 0)
RETENTION_MINUTES = 3 * 24 * 60
STATUSES = ("new", "paid", "shipped", "returned")
MAX_TABLES = 20


def table_names(tables: object) -> tuple[str, ...]:
    """The demo's table names for `tables` tables: dbo.orders alone, else dbo.orders_01...

    Raises:
        ConfigError: `tables` is not a whole number from 1 to 20.
    """
    if isinstance(tables, bool) or not isinstance(tables, int) or not 1 <= tables <= MAX_TABLES:
        raise ConfigError(
            f"--tables {tables!r}: pass a whole number of tables from 1 to {MAX_TABLES}"
        )
    if tables == 1:
        return ("dbo.orders",)
    return tuple(f"dbo.orders_{n:02d}" for n in range(1, tables + 1))


def paused_instances(instances: tuple[str, ...]) -> tuple[str, ...]:
    """The capture instances whose streams stop during the simulated days: the last N // 2."""
    return instances[len(instances) - len(instances) // 2 :]


def create_orders_table(emulator: Emulator, table: str) -> str:
    """Create `table` in the demo's orders shape, enable CDC on it; its capture instance."""
    emulator.create_table(
        table,
        {
            "order_id": "int",
            "customer": "nvarchar(40)",
            "amount": "decimal(12,2)",
            "status": "varchar(12)",
        },
        primary_key="order_id",
    )
    return emulator.enable_cdc(table)


class Workload:
    """A seeded orders workload over simulated time: inserts, updates and deletes in `tables`
    (each of the demo's orders shape), one table chosen at random per transaction."""

    def __init__(self, emulator: Emulator, seed: int, tables: tuple[str, ...] = (TABLE,)) -> None:
        self.emulator = emulator
        self.random = random.Random(seed)
        self.tables = tables
        self.live: dict[str, list[int]] = {table: [] for table in tables}
        self.next_id = dict.fromkeys(tables, 1)
        self.clock = START

    def advance(self, hours: float, commits: int) -> None:
        step = timedelta(hours=hours) / max(commits, 1)
        for _ in range(commits):
            self.clock += step
            self.emulator.commit(self._transaction(), at=self.clock)

    def _transaction(self) -> list[tuple[Any, ...]]:
        # One table draws nothing for the choice, so the one-table demo's rows stay the same.
        table = self.tables[0] if len(self.tables) == 1 else self.random.choice(self.tables)
        live = self.live[table]
        changes: list[tuple[Any, ...]] = []
        for _ in range(self.random.randint(1, 4)):
            roll = self.random.random()
            if roll < 0.5 or len(live) < 5:
                order_id = self.next_id[table]
                self.next_id[table] += 1
                live.append(order_id)
                row = {
                    "order_id": order_id,
                    "customer": f"customer-{self.random.randint(1, 40):02d}",
                    "amount": round(self.random.uniform(5, 500), 2),
                    "status": "new",
                }
                changes.append(("insert", table, row))
            elif roll < 0.85:
                order_id = self.random.choice(live)
                status = self.random.choice(STATUSES)
                changes.append(("update", table, {"order_id": order_id, "status": status}))
            else:
                order_id = live.pop(self.random.randrange(len(live)))
                changes.append(("delete", table, {"order_id": order_id}))
        return changes

    def idle_and_cleanup(self) -> None:
        """SQL Server's capture job marks quiet time and its cleanup job runs on schedule."""
        self.clock += timedelta(minutes=1)
        self.emulator.idle(at=self.clock)
        self.emulator.run_cleanup_job()
