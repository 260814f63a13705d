"""Family facts rows read into opens, completions and timings (spec 30 sections 1 and 8).

`mssql_cdc.facts.snapshot_family` is the one reader of a family's snapshot rows; the
recovery's view of them (`family_rows_of`) is checked here on plain rows, without Spark.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mssql_cdc.core.offsets import StreamOffset
from mssql_cdc.core.recovery_decision import CompletionRow, OpenRow
from mssql_cdc.facts.snapshot_family import SnapshotFacts
from mssql_cdc.recovery.preflight import FamilyRows
from mssql_cdc.recovery.spark_steps import family_rows_of


def L(n: int) -> str:
    return f"0x{n:020X}"


def row(event: str, generation: int, lsn: int, **kw: Any) -> dict[str, Any]:
    at = datetime(2026, 10, 1, 0, lsn % 60)
    base: dict[str, Any] = {
        "app_id": "a" if generation == 0 else f"a.g{generation}",
        "generation": generation,
        "event": event,
        "min_lsn": L(lsn),
        "max_lsn": L(lsn),
        "min_commit_ts": at,
        "max_commit_ts": at,
        "rows": None,
        "duration_ms": None,
        "detail": None,
        "written_at": datetime(2026, 10, 2, 0, lsn % 60),
        "target": "/t/bronze",
        "lost_from_ts": None,
        "lost_to_ts": None,
    }
    base.update(kw)
    return base


def test_opens_read_their_mode_and_kind_with_chunked_as_the_default() -> None:
    rows = [
        row("snapshot_open", 0, 10, detail='{"mode":"full","kind":"bootstrap","generation":0}'),
        row("snapshot_open", 1, 20, detail='{"kind":"resnapshot","generation":1}'),
        row("snapshot_open", 2, 30, detail='{"mode":"resnapshot","generation":2}'),
    ]
    family = family_from_rows(rows)
    at = "2026-10-01T00:{:02d}:00.000"
    assert family.opens == (
        OpenRow(0, "full", "bootstrap", StreamOffset(L(10), at.format(10))),
        OpenRow(1, "chunked", "resnapshot", StreamOffset(L(20), at.format(20))),
        OpenRow(2, "chunked", "resnapshot", StreamOffset(L(30), at.format(30))),
    )
    assert family.completions == ()


def test_completions_and_the_newest_full_timings_first() -> None:
    rows = [
        row("bootstrap", 0, 10, rows=3, duration_ms=1000),
        row("resnapshot", 1, 40, rows=5, duration_ms=2000),
        row("resnapshot", 2, 50, rows=8, duration_ms=100, detail='{"chunks":4}'),
        row("resnapshot", 3, 55, rows=None, duration_ms=None, max_commit_ts=None),
    ]
    family = family_from_rows(rows)
    assert [c.generation for c in family.completions] == [0, 1, 2, 3]
    assert family.completions[3] == CompletionRow(3, StreamOffset(L(55), None))
    assert family.full_timings == ((5, 2000), (3, 1000))  # chunked and reused rows left out


def family_from_rows(rows: list[dict[str, Any]]) -> FamilyRows:
    return family_rows_of(SnapshotFacts(tuple(rows)))  # type: ignore[arg-type]


def test_plan_and_chunk_rows_of_the_family_are_not_snapshots_to_decide_on() -> None:
    rows = [
        row("snapshot_open", 0, 10, detail='{"mode":"chunked","kind":"bootstrap"}'),
        row("snapshot_plan", 0, 10, detail='{"snapshot":"0x0000000000000000000A"}'),
        row("snapshot_chunk", 0, 11, rows=4, detail='{"snapshot":"x","chunk":0}'),
    ]
    family = family_from_rows(rows)
    assert [o.generation for o in family.opens] == [0]
    assert family.completions == ()
    assert family.full_timings == ()
