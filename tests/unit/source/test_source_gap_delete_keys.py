"""Which keys a re-snapshot's gap deletes name (option gapDeletesFrom, decision 1426): the
image of the delivered rows before S, less the keys the source table still holds. The expected
keys are written out by hand from the rows below."""

from __future__ import annotations

from typing import Any

from mssql_cdc.source.gap_deletes import gone_keys

S = "0x00000030000000000001"


def row(
    key: int, lsn: str, op: int, snapshot: str | None = None, seqval: str | None = None
) -> dict[str, Any]:
    return {
        "id": key,
        "_start_lsn": lsn,
        "_operation": op,
        "_snapshot": snapshot,
        "_seqval": seqval,
    }


def test_keys_whose_last_row_before_s_lives_and_that_the_table_lacks_are_gone() -> None:
    first = "0x00000010000000000001"
    delivered = [
        *[row(k, first, 0, snapshot=first) for k in (1, 2, 3, 4, 5)],
        row(2, "0x00000011000000000001", 1),  # deleted before the gap: no delete again
        row(3, "0x00000012000000000001", 3, seqval="0x01"),  # an update's before-image
        row(3, "0x00000012000000000001", 4, seqval="0x01"),
        row(6, "0x00000013000000000001", 2),  # inserted by a change
        row(7, "0x00000013000000000002", 2),
        row(7, "0x00000013000000000003", 1),  # and gone again
        # this snapshot's own rows and a delete it derived before (a replay) are left out
        row(8, S, 0, snapshot=S),
        row(9, S, 1, snapshot=S),
    ]
    live = {(1,), (4,), (8,)}
    assert sorted(gone_keys(delivered, ["id"], S, live)) == [(3,), (5,), (6,)]


def test_a_key_re_inserted_after_a_delete_is_in_the_image() -> None:
    delivered = [
        row(1, "0x00000011000000000001", 2),
        row(1, "0x00000012000000000001", 1),
        row(1, "0x00000013000000000001", 2),
    ]
    assert gone_keys(delivered, ["id"], S, set()) == [(1,)]
    assert gone_keys(delivered, ["id"], S, {(1,)}) == []
