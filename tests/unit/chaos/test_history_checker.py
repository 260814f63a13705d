"""The chaos run's history checker (tests/support/history_checker.py) catches what it must.

Each case builds one small history by hand: a table `dbo.t` keyed by `id`, three commits, a
bootstrap snapshot after the first, then what a stream that kept its promise would leave.
Each planted defect (a duplicate, a silent loss, a wrong snapshot, a facts count, a silver
row, a state file) must be reported; the clean history must pass.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import write_deltalake

from tests.support.history_checker import (
    SourceChange,
    SourceHistory,
    StreamOutput,
    check_history,
    load_outputs,
)

T0 = datetime(2026, 12, 5, 10, 0, 0)
BRONZE = "/lake/bronze/dbo_t"


def lsn(n: int) -> str:
    return f"0x{n:020X}"


def change(n: int, seq: int, op: int, row: dict[str, object]) -> SourceChange:
    return SourceChange(lsn(n), lsn(seq), op, 1, T0 + timedelta(seconds=n), row)


# Commit 1 inserts 1 and 2; commit 2 updates 1; commit 3 deletes 2 and inserts 3.
CHANGES = (
    change(1, 1, 2, {"id": 1, "v": "a"}),
    change(1, 2, 2, {"id": 2, "v": "b"}),
    change(2, 3, 3, {"id": 1, "v": "a"}),
    change(2, 3, 4, {"id": 1, "v": "a2"}),
    change(3, 4, 1, {"id": 2, "v": "b"}),
    change(3, 5, 2, {"id": 3, "v": "c"}),
)
HISTORY = SourceHistory("dbo.t", ("id",), CHANGES, ({"id": 1, "v": "a2"}, {"id": 3, "v": "c"}))


def bronze_change(c: SourceChange, batch: int) -> dict[str, Any]:
    return {
        "_start_lsn": c.start_lsn,
        "_seqval": c.seqval,
        "_operation": c.operation,
        **c.values,
        "_batch_id": batch,
        "_snapshot": None,
        "_chunk": None,
    }


def snapshot_row(at: int, row: dict[str, object]) -> dict[str, Any]:
    return {
        "_start_lsn": lsn(at),
        "_seqval": None,
        "_operation": 0,
        **row,
        "_batch_id": None,
        "_snapshot": lsn(at),
        "_chunk": None,
    }


def facts_row(**values: Any) -> dict[str, Any]:
    base = {
        "app_id": "dbo_t",
        "generation": 0,
        "batch_id": None,
        "rows": 0,
        "event": None,
        "min_lsn": None,
        "max_lsn": None,
        "inserts": None,
        "updates": None,
        "deletes": None,
        "lost_from_ts": None,
        "lost_to_ts": None,
        "target": BRONZE,
    }
    return base | values


def clean() -> StreamOutput:
    """Bootstrap at LSN 1, then batch 0 reads commit 2 and batch 1 commit 3."""
    bronze = [
        snapshot_row(1, {"id": 1, "v": "a"}),
        snapshot_row(1, {"id": 2, "v": "b"}),
        *(bronze_change(c, 0) for c in CHANGES[2:4]),
        *(bronze_change(c, 1) for c in CHANGES[4:]),
    ]
    facts = [
        facts_row(event="bootstrap", rows=2, min_lsn=lsn(1), max_lsn=lsn(1)),
        facts_row(
            batch_id=0, rows=2, min_lsn=lsn(2), max_lsn=lsn(2), inserts=0, updates=1, deletes=0
        ),
        facts_row(
            batch_id=1, rows=2, min_lsn=lsn(3), max_lsn=lsn(3), inserts=1, updates=0, deletes=1
        ),
    ]
    silver = ({"id": 1, "v": "a2", "_start_lsn": lsn(2)}, {"id": 3, "v": "c", "_start_lsn": lsn(3)})
    return StreamOutput(BRONZE, tuple(bronze), tuple(facts), None, silver)


def violations(out: StreamOutput, history: SourceHistory = HISTORY) -> list[str]:
    report = check_history({"dbo.t": history}, {"dbo.t": out})
    print(report.render())
    return report.violations


def test_a_clean_history_passes_and_the_report_says_what_was_checked() -> None:
    report = check_history({"dbo.t": HISTORY}, {"dbo.t": clean()})

    assert report.ok, report.render()
    assert report.checked["source changes checked"] == 4  # the two after the bootstrap's LSN
    assert report.checked["snapshots rebuilt"] == 1
    assert "violations: 0" in report.render()


def test_a_planted_duplicate_change_is_reported() -> None:
    out = clean()
    planted = replace(out, bronze=(*out.bronze, bronze_change(CHANGES[5], 1)))

    found = violations(planted)

    assert any("duplicate" in v and f"{int(CHANGES[5].start_lsn, 16)}" in v for v in found)


def test_a_planted_silent_loss_is_reported() -> None:
    out = clean()
    bronze = tuple(r for r in out.bronze if r["_operation"] != 1)  # the delete of 2 vanished
    facts = tuple(f | {"rows": 1, "deletes": 0} if f["batch_id"] == 1 else f for f in out.facts)

    found = violations(replace(out, bronze=bronze, facts=facts))

    assert len(found) == 1, found
    assert "is missing from bronze" in found[0]
    assert CHANGES[4].start_lsn in found[0]


def test_a_loss_inside_a_resnapshot_interval_is_allowed_and_the_snapshot_is_checked() -> None:
    out = clean()
    # Commit 2 was purged unread: generation 1 re-snapshots at LSN 2, batch 0 reads commit 3.
    bronze = (
        *out.bronze[:2],
        snapshot_row(2, {"id": 1, "v": "a2"}),
        snapshot_row(2, {"id": 2, "v": "b"}),
        *out.bronze[4:],
    )
    facts = (
        out.facts[0],
        facts_row(
            app_id="dbo_t.g1",
            generation=1,
            event="resnapshot",
            rows=2,
            min_lsn=lsn(2),
            max_lsn=lsn(2),
            lost_from_ts=T0 + timedelta(seconds=1),
        ),
        out.facts[2] | {"app_id": "dbo_t.g1", "generation": 1},
    )
    state = {"generation": 1, "snapshot_lsn": lsn(2), "commit_ts": "2026-12-05T10:00:02.000"}

    assert violations(replace(out, bronze=bronze, facts=facts, state=state)) == []


def test_a_snapshot_that_differs_from_the_source_at_its_lsn_is_reported() -> None:
    out = clean()
    bronze = (snapshot_row(1, {"id": 1, "v": "a2"}), *out.bronze[1:])  # a later image

    found = violations(replace(out, bronze=bronze))

    assert found == [
        f"snapshot {lsn(1)} of {BRONZE}: key (1,) column v is 'a2', the source has 'a'"
    ]


def test_facts_that_miscount_a_batch_are_reported() -> None:
    out = clean()
    facts = tuple(f | {"inserts": 2} if f["batch_id"] == 1 else f for f in out.facts)

    found = violations(replace(out, facts=facts))

    assert found == [f"{BRONZE}: facts batch 1 of dbo_t says inserts=2, bronze holds 1"]


def test_silver_that_kept_a_deleted_key_is_reported() -> None:
    out = clean()
    assert out.silver is not None
    silver = (*out.silver, {"id": 2, "v": "b", "_start_lsn": lsn(1)})

    found = violations(replace(out, silver=silver))

    assert found == [f"silver of {BRONZE}: key (2,) is not in the source"]


def test_a_resnapshot_row_without_a_state_file_is_reported() -> None:
    out = clean()
    facts = (
        *out.facts,
        facts_row(
            app_id="dbo_t.g1",
            generation=1,
            event="resnapshot",
            rows=None,
            min_lsn=lsn(3),
            max_lsn=lsn(3),
        ),
    )

    found = violations(replace(out, facts=facts))

    assert f"{BRONZE}: a resnapshot row records generation 1 but there is no state file" in found


def test_the_loader_reads_delta_tables_and_the_state_file_without_the_library(
    tmp_path: Path,
) -> None:
    out = clean()
    bronze, facts, checkpoint = tmp_path / "bronze", tmp_path / "facts", tmp_path / "cp"
    write_deltalake(str(bronze), pa.Table.from_pylist(list(out.bronze)))
    write_deltalake(
        str(facts), pa.Table.from_pylist([f | {"target": str(bronze)} for f in out.facts])
    )
    checkpoint.mkdir()
    (checkpoint / "_mssql_cdc_generation.json").write_text(json.dumps({"generation": 0}))

    loaded = load_outputs(
        [{"table": "dbo.t", "bronze": str(bronze), "checkpoint": str(checkpoint)}], str(facts)
    )

    assert loaded["dbo.t"].state == {"generation": 0}
    assert len(loaded["dbo.t"].facts) == 3
    report = check_history({"dbo.t": replace(HISTORY)}, loaded)
    assert report.ok, report.render()


def test_a_snapshot_may_hold_a_later_image_made_before_its_completion_row_only() -> None:
    # docs/snapshots.md, 'Full snapshots', step 2: every commit at or before the snapshot's
    # LSN is in the read; a later one the read also saw reaches bronze again as a change.
    out = clean()
    bronze = (snapshot_row(1, {"id": 1, "v": "a2"}), *out.bronze[1:])  # commit 2's image
    completed = T0 + timedelta(seconds=2, milliseconds=500)  # after commit 2, before 3
    facts = (out.facts[0] | {"written_at": completed}, *out.facts[1:])

    assert violations(replace(out, bronze=bronze, facts=facts)) == []

    too_late = (out.facts[0] | {"written_at": T0 + timedelta(seconds=1, milliseconds=500)},)
    found = violations(replace(out, bronze=bronze, facts=too_late + out.facts[1:]))
    assert len(found) == 1, found
    assert found[0].startswith(f"snapshot {lsn(1)} of {BRONZE}: key (1,) column v is 'a2'")
