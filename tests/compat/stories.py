"""The four stories whose state is stored per version, and how each is built.

Each story is `dbo.orders` on an emulator file of the `immediate` profile, streamed by
`to_delta` into path-based bronze and facts tables (tests/spark/support/recovery_support.py),
and left with changes the stream has not read yet:

- `bootstrap`: a bootstrap and its first batch.
- `recovery`: a loss to CDC cleanup and a full re-snapshot into generation 1.
- `chunked-resnapshot`: a loss, a chunked re-snapshot opened in generation 1, one wave
  appended, and a second wave stopped by the failpoint `backfill.after_wave_append` (its rows
  in bronze, its facts row not written).
- `backfill`: a chunked bootstrap with one of its waves done.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from mssql_cdc.testing import InjectedFault, failpoints
from tests.spark.support.chunked_support import backfill
from tests.spark.support.recovery_support import Orders

__all__ = ["APP_ID", "STORIES", "Story"]

APP_ID = "compat-v1"


@dataclass(frozen=True)
class Story:
    """A stored state: its name, the `to_delta` arguments its runs take, the generation it
    ends in, and whether a chunked snapshot is open in it."""

    name: str
    run: dict[str, Any]
    generation: int
    chunked: bool
    build: Callable[[Orders], None]


def _bootstrap(orders: Orders) -> None:
    orders.orders(4)
    orders.run()
    orders.commit(("update", 1, "paid"))


def _recovery(orders: Orders) -> None:
    orders.orders(4)
    orders.run()
    orders.commit(("insert", 4, "new"))
    orders.run()
    orders.commit(("update", 1, "paid"))
    orders.commit(("delete", 2, None))
    orders.cleanup_past_everything()
    orders.run()  # the loss: a full re-snapshot into generation 1
    orders.commit(("insert", 5, "after"))


def _chunked_resnapshot(orders: Orders) -> None:
    orders.orders(6)
    orders.run(snapshot="chunked")
    orders.commit(("insert", 6, "new"))
    orders.run(snapshot="chunked")
    assert backfill(orders)["state"] == "done"
    orders.run(snapshot="chunked")
    orders.commit(("update", 1, "paid"))
    orders.commit(("delete", 2, None))
    orders.cleanup_past_everything()
    orders.run(snapshot="chunked")  # the loss: a chunked snapshot opens in generation 1
    assert backfill(orders, chunk_rows=2, max_waves=1)["state"] == "running"
    orders.commit(("update", 3, "paid"))
    with failpoints({"backfill.after_wave_append": "raise"}), pytest.raises(InjectedFault):
        backfill(orders, max_waves=1)
    orders.commit(("insert", 7, "new"))


def _backfill(orders: Orders) -> None:
    orders.orders(6)
    orders.run(snapshot="chunked")  # opens a chunked bootstrap
    assert backfill(orders, chunk_rows=2, max_waves=1)["state"] == "running"
    orders.run(snapshot="chunked")
    orders.commit(("update", 3, "paid"))
    orders.commit(("insert", 9, "new"))


STORIES = (
    Story("bootstrap", {}, 0, False, _bootstrap),
    Story("recovery", {}, 1, False, _recovery),
    Story("chunked-resnapshot", {"snapshot": "chunked"}, 1, True, _chunked_resnapshot),
    Story("backfill", {"snapshot": "chunked"}, 0, True, _backfill),
)
"""Every story, in the order the generator builds them."""
