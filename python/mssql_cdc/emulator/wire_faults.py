"""Faults a test-only TDS server injects on the wire: `serve(path, faults=[...])`.

Each `WireFault` names a moment (a login, or a statement whose text contains `match`,
case-insensitively) and what the server does there:

- `error`: answer SQL Server's error `number` with its own severity, state and text (1205, 1222,
  4060, 18456, 40197, 40501, 40613, 49918); severity 20 and up (40501) also closes the
  connection, as SQL Server does. At a login, the login is refused.
- `stall`: answer only after `seconds`, past a client's timeout; the client's cancel (ATTENTION)
  ends the wait and is acknowledged.
- `drop`: send at most `after_rows` rows of the first result set, then close the connection
  mid-result. At a login, close before answering it.
- `rows`: answer with `rows` synthesized rows (`n` bigint 1, 2, ... and `text` nvarchar(40)
  'row n'), made while they are sent: a large result without a large table.

`times` limits how often a fault fires in all connections together (0: every time). Faults
matching one statement apply together (a `rows` and a `drop` cut a synthesized result).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ERROR_NUMBERS", "WireFault", "wire_faults"]

FaultAction = Literal["error", "stall", "drop", "rows"]
FaultWhen = Literal["login", "statement"]

ERROR_NUMBERS = frozenset({1205, 1222, 4060, 18456, 40197, 40501, 40613, 49918})
"""The SQL Server error numbers an `error` fault can send."""


@dataclass(frozen=True, slots=True)
class WireFault:
    """One fault of a test server's script; see the module docstring."""

    action: FaultAction
    when: FaultWhen = "statement"
    match: str = ""
    number: int = 0
    seconds: float = 0.0
    after_rows: int = 0
    rows: int = 0
    times: int = 0

    def __post_init__(self) -> None:
        if self.action not in ("error", "stall", "drop", "rows"):
            raise ValueError(f"fault action {self.action!r} is none of error, stall, drop, rows")
        if self.when not in ("login", "statement"):
            raise ValueError(f"fault moment {self.when!r} is neither login nor statement")
        if self.action == "error" and self.number not in ERROR_NUMBERS:
            raise ValueError(
                f"fault error {self.number} is not one the emulator sends; "
                f"use one of {sorted(ERROR_NUMBERS)}"
            )
        for name in ("seconds", "after_rows", "rows", "times"):
            if getattr(self, name) < 0:
                raise ValueError(f"fault {name} {getattr(self, name)} must not be negative")

    def as_native(self) -> tuple[str, str, str, int, int, int, int, int]:
        """The tuple `_native.tds.Server` takes."""
        return (
            self.when,
            self.match,
            self.action,
            self.number,
            round(self.seconds * 1000),
            self.after_rows,
            self.rows,
            self.times,
        )


def wire_faults(faults: Iterable[WireFault | Mapping[str, Any]]) -> list[WireFault]:
    """Faults given as `WireFault`s or as dicts of its fields, checked.

    Raises:
        ValueError: an unknown action, moment, error number or field, or a negative value.
    """
    checked: list[WireFault] = []
    for fault in faults:
        if isinstance(fault, WireFault):
            checked.append(fault)
            continue
        unknown = set(fault) - set(WireFault.__slots__)
        if unknown:
            raise ValueError(f"fault {dict(fault)!r} has unknown fields {sorted(unknown)}")
        checked.append(WireFault(**fault))
    return checked
