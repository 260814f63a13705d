"""Helpers of the chunked-recovery and plan_recovery Spark tests (spec 30 section 9, tests 9-13).

They read what a user can see (facts rows, bronze's Delta log, the state file's bytes, the
emulator's hooks) and call only the public API; the rebuild oracle is `recovery_support`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc import stream
from mssql_cdc.core.checkpoint import GenerationState
from mssql_cdc.recovery import preflight as recovery
from mssql_cdc.recovery.plan import RecoveryPlan
from mssql_cdc.snapshot.backfill import BackfillStatus
from tests.spark.support.recovery_support import Orders


def backfill(orders: Orders, **kwargs: Any) -> BackfillStatus:
    return stream(orders.spark, orders.options()).backfill(
        orders.target, app_id=orders.app_id, facts_table=orders.facts, **kwargs
    )


def progress(status: BackfillStatus) -> tuple[int, int | None, bool, str]:
    return (status["chunks_done"], status["chunks_total"], status["done"], status["state"])


def bronze_version(orders: Orders) -> int:
    """The newest version in bronze's Delta log, -1 before the table exists."""
    log = Path(orders.target) / "_delta_log"
    versions = [int(p.stem) for p in log.glob("*.json")] if log.exists() else []
    return max(versions, default=-1)


def details(orders: Orders, event: str) -> list[dict[str, Any]]:
    """The `detail` JSON of every facts row of `event`, with the row's LSNs and app_id."""
    return [
        {
            **(json.loads(f["detail"]) if f["detail"] else {}),
            "_app_id": f["app_id"],
            "_min_lsn": f["min_lsn"],
            "_max_lsn": f["max_lsn"],
            "_rows": f["rows"],
        }
        for f in orders.events(event)
    ]


def op0(orders: Orders) -> list[dict[str, Any]]:
    return [r for r in orders.bronze() if r["_operation"] == 0]


def dry_plan(orders: Orders, **kwargs: Any) -> RecoveryPlan:
    """plan_recovery() with what spec 30 test 12 asks of a dry run checked around the call:
    facts row count, bronze's version and the state file's bytes unchanged, and a table-read
    hook registered before it still pending after it (then removed)."""
    state_file = orders.state_file
    before = (
        len(orders.facts_rows()),
        bronze_version(orders),
        state_file.read_bytes() if state_file.exists() else None,
    )
    orders.emu.inject_null_row(read="table")
    plan = stream(orders.spark, orders.options()).plan_recovery(
        orders.target, orders.app_id, str(orders.checkpoint), orders.facts, **kwargs
    )
    assert [h["kind"] for h in orders.emu.pending_hooks()] == ["inject_null_row"]
    assert orders.emu.clear_hooks() == 1
    after = (
        len(orders.facts_rows()),
        bronze_version(orders),
        state_file.read_bytes() if state_file.exists() else None,
    )
    assert after == before
    return plan


@contextmanager
def states_written(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[GenerationState]]:
    """Every state the recovery writes, in order: the first `recovering` is its start."""
    written: list[GenerationState] = []
    original = recovery.replace_state

    def spy(checkpoint: str, expected: GenerationState, state: GenerationState) -> bool:
        done = original(checkpoint, expected, state)
        if done:
            written.append(state)
        return done

    with monkeypatch.context() as patched:
        patched.setattr(recovery, "replace_state", spy)
        yield written


def acted_start(written: list[GenerationState]) -> dict[str, str] | None:
    """The start the recovery recorded in `recovering` (None when it did not act)."""
    for state in written:
        if state.recovering is not None:
            return dict(state.recovering.to_json())
    return None


def chunked_resnapshot_of_the_newer_instance(orders: Orders, newer: str) -> dict[str, Any]:
    """After a capture-instance switch that lost unread changes: a chunked run opens generation
    1's snapshot, `backfill()` reads all of it from `newer`, and a run completes it. Returns
    the state file's content."""
    orders.run(snapshot="chunked")
    state = orders.state()
    assert state is not None
    assert state["generation"] == 1
    [opened] = [o for o in orders.events("snapshot_open") if o["generation"] == 1]
    assert opened["min_lsn"] == state["snapshot_lsn"]
    status = backfill(orders)
    assert (status["snapshot"], status["state"]) == (state["snapshot_lsn"], "done")
    chunks = [r for r in op0(orders) if r["_snapshot"] == state["snapshot_lsn"]]
    assert {r["_capture_instance"] for r in chunks} == {newer}
    orders.run(snapshot="chunked")
    return state
