"""Completeness verdicts: which periods of a table will receive no more rows.

The verdict of a table is `finalized_until` in the control table, one row per table name. It
only moves forward: `advance` takes the end offset of a batch whose data is already committed
(the `endOffset` of a progress event, never a latest-available offset), truncates its commit
time to the granularity (the period holding the end is not complete yet) and keeps the greater
of that and the stored verdict. The verdict is keyed by table, not app_id, so it stays monotonic
across checkpoint generations.

`candidate` returns the verdict `advance` would leave stored, and writes nothing.

`track` (tracker.py) advances the verdicts of running streams as their batches commit.
"""

from __future__ import annotations

from mssql_cdc.finalization.tracker import Tracker, TrackerFailure, track
from mssql_cdc.finalization.verdicts import (
    ControlRow,
    Granularity,
    Offset,
    advance,
    candidate,
    control_rows,
    end_offset_from_progress,
    finalized_until,
    is_final,
    record_position,
    truncate,
)

__all__ = [
    "ControlRow",
    "Granularity",
    "Offset",
    "Tracker",
    "TrackerFailure",
    "advance",
    "candidate",
    "control_rows",
    "end_offset_from_progress",
    "finalized_until",
    "is_final",
    "record_position",
    "track",
    "truncate",
]
