"""How silver reads the facts rows of one bronze: completions, opens, waves (spec 20, 4.3)."""

from __future__ import annotations

import json
from typing import Any

from mssql_cdc.silver.facts_view import facts_from_rows


def row(event: str, lsn: str, detail: dict[str, Any] | None = None) -> tuple[Any, ...]:
    return (event, lsn, lsn, json.dumps(detail) if detail is not None else None)


FULL = {"mode": "full", "kind": "resnapshot", "generation": 1}


def test_a_whole_snapshot_under_a_still_open_full_open_does_not_count() -> None:
    facts = facts_from_rows([row("bootstrap", "0x10"), row("snapshot_open", "0x20", FULL)])
    assert facts.whole_snapshot_counts("0x10")  # below the open: the bootstrap's rows
    assert not facts.whole_snapshot_counts("0x20")  # the failed attempt's rows
    assert not facts.whole_snapshot_counts("0x25")  # any snapshot above the open one


def test_a_newer_completion_closes_an_older_open_and_its_rows_count_again() -> None:
    facts = facts_from_rows(
        [row("snapshot_open", "0x20", FULL), row("resnapshot", "0x30"), row("bootstrap", "0x10")]
    )
    assert facts.whole_snapshot_counts("0x20")
    assert facts.newest_completion() == "0x30"


def test_an_open_without_a_mode_is_chunked_and_the_newest_open_one_is_applied() -> None:
    facts = facts_from_rows(
        [
            row("snapshot_open", "0x20"),  # pre-release shape: no detail at all
            row("snapshot_open", "0x40", {"mode": "resnapshot"}),
            row("snapshot_open", "0x50", FULL),
        ]
    )
    assert facts.open_chunked() == "0x40"
    assert (
        facts_from_rows([*[row("snapshot_open", "0x20")], row("bootstrap", "0x20")]).open_chunked()
        is None
    )


def test_chunk_rows_group_into_waves_of_their_own_snapshot() -> None:
    def chunk(snapshot: str, number: int, wave: int) -> tuple[Any, ...]:
        return row("snapshot_chunk", "0x60", {"snapshot": snapshot, "chunk": number, "wave": wave})

    facts = facts_from_rows(
        [chunk("0x40", 2, 1), chunk("0x40", 0, 0), chunk("0x40", 1, 0), chunk("0x30", 0, 0)]
    )
    assert facts.waves("0x40") == {0: [0, 1], 1: [2]}
    assert facts.waves("0x30") == {0: [0]}
    assert facts.waves("0x99") == {}


def test_switch_rows_and_unreadable_details_are_read_safely() -> None:
    facts = facts_from_rows(
        [
            row("capture_instance_switched", "0x70", {"old": "dbo_a", "new": "dbo_a_v2"}),
            ("snapshot_chunk", "0x71", "0x71", "not json"),
        ]
    )
    assert facts.switches == (("dbo_a", "dbo_a_v2"),)
    assert facts.chunks == ()
