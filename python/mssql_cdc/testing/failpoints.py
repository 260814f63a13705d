"""Named crash points, armed by tests to prove crash safety by crashing.

Arm them with the environment variable MSSQL_CDC_FAILPOINTS ("name=action,name=action") or
with the `failpoints({...})` context manager. `raise` throws InjectedFault, a BaseException so
no `except Exception` swallows it; `kill` ends the process at once with exit code 137.
Where the source's own point runs and what its `kill` ends: decision 1398; where
`backfill.waves_in_flight` fires: decision 1430.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Literal

from mssql_cdc.errors import ConfigError

__all__ = ["ENV", "POINTS", "Action", "InjectedFault", "failpoint", "failpoints"]

ENV = "MSSQL_CDC_FAILPOINTS"
"""The environment variable that arms points in a process: "name=action,name=action"."""
Action = Literal["raise", "kill"]
"""What an armed point does: raise InjectedFault, or kill the process with exit code 137."""

POINTS = frozenset(
    {
        "snapshot.before_append",
        "snapshot.after_append",
        "recovery.after_recovering",
        "recovery.after_event",
        "recovery.after_state",
        "chunked.after_open",
        "backfill.after_wave_append",
        "backfill.waves_in_flight",
        "snapshot.after_gap_deletes",
        "silver.after_merge",
        "sink.after_target_write",
        "sink.after_facts_write",
        "source.inside_snapshot",
    }
)
"""The names of every failpoint; arming another name raises ConfigError.

`source.inside_snapshot` is the one in the `mssql_cdc` source: it fires while the planner plans
a batch in the middle of the source's own snapshot (option snapshotMode, not the snapshot's
first batch), after Spark logged the batch's offsets. The planner runs in Spark's driver-side
Python runner, so `kill` ends that process and fails the query.

`backfill.waves_in_flight` fires in an overlapped backfill (`target_wave_seconds`) once a wave
is appended and the next one's read and append are started, before the first one's facts
rows. With `raise` the call waits for the next append before raising, so both waves are in
bronze without facts rows."""


class InjectedFault(BaseException):
    """Raised by an armed failpoint with action `raise`."""

    def __init__(self, point: str) -> None:
        super().__init__(point)
        self.point = point

    def __str__(self) -> str:
        return f"injected fault at failpoint {self.args[0]}"


def _parse(spec: str) -> dict[str, Action]:
    armed: dict[str, Action] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, action = item.partition("=")
        name, action = name.strip(), action.strip()
        if not sep or action not in ("raise", "kill"):
            raise ConfigError(f"{ENV}: '{item}' must be name=raise or name=kill")
        _check_name(name)
        armed[name] = "raise" if action == "raise" else "kill"
    return armed


def _check_name(name: str) -> None:
    if name not in POINTS:
        raise ConfigError(f"unknown failpoint '{name}'; known points: {', '.join(sorted(POINTS))}")


_armed: dict[str, Action] = _parse(os.environ.get(ENV, ""))


def failpoint(name: str) -> None:
    """Crash here if the point `name` is armed; otherwise one dictionary look-up."""
    action = _armed.get(name)
    if action is None:
        return
    if action == "kill":
        os._exit(137)
    raise InjectedFault(name)


@contextmanager
def failpoints(points: Mapping[str, Action]) -> Iterator[None]:
    """Arm `points` (name to "raise" or "kill") inside the block, then restore the previous set."""
    for name, action in points.items():
        _check_name(name)
        if action not in ("raise", "kill"):
            raise ConfigError(f"failpoint {name}: action '{action}' must be 'raise' or 'kill'")
    saved = dict(_armed)
    _armed.update(points)
    try:
        yield
    finally:
        _armed.clear()
        _armed.update(saved)
