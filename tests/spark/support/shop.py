"""The shop database of the fan-out stories: many tables of one emulator file with the same
history, an idle entry where the lossy streams say they start, and one at the end."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mssql_cdc.emulator import Emulator
from tests.spark.support.recovery_support import START, at
from tests.support import emulator_profile


@dataclass(frozen=True)
class Shop:
    emu: Emulator
    given: str  # the idle entry at 14:00, between the inserts and the updates
    mark: str  # the idle entry at 15:30, the newest: every stream ends there


def shop(path: Path, tables: Sequence[str], *, deleted: Sequence[str], order_id: int) -> Shop:
    """dbo.<name> for each of `tables`, captured as dbo_<name>: order 1 inserted (13:51), then
    paid and order 2 inserted (14:10), then `order_id` deleted from the `deleted` tables (14:20).
    On the realistic profile each step waits for the capture job, as a test against a server
    would, so the job's idle entries fall between the steps."""
    emu = emulator_profile.create(path, start=START)
    for name in tables:
        emu.create_table(
            f"dbo.{name}", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
        )
        emu.enable_cdc(f"dbo.{name}")

    def step(changes: list[tuple[str, str, dict[str, object]]], minutes: float) -> None:
        emu.commit(changes, at=at(minutes))
        emulator_profile.wait_for_capture(emu, at(minutes))

    step([("insert", f"dbo.{n}", {"order_id": 1, "status": "new"}) for n in tables], 1)
    given = emu.idle(at=at(10))
    emulator_profile.wait_for_capture(emu, at(10))  # the job writes the entry
    step(
        [("update", f"dbo.{n}", {"order_id": 1, "status": "paid"}) for n in tables]
        + [("insert", f"dbo.{n}", {"order_id": 2, "status": "new"}) for n in tables],
        20,
    )
    step([("delete", f"dbo.{n}", {"order_id": order_id}) for n in deleted], 30)
    mark = emu.idle(at=at(100))
    emulator_profile.wait_for_capture(emu, at(100))
    return Shop(emu, given, mark)
