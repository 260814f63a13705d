"""A fake DB-API connection: answers statements by a substring of their text, records calls."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Answer = tuple[Sequence[str], Sequence[Sequence[Any]]]  # column names, rows


@dataclass
class FakeConnection:
    answers: dict[str, Answer | Callable[[Any], Answer] | BaseException] = field(
        default_factory=dict
    )
    executed: list[tuple[str, Any]] = field(default_factory=list)
    closed: bool = False
    cursors_closed: int = 0
    fetch_sizes: list[int] = field(default_factory=list)

    def cursor(self) -> FakeCursor:
        return FakeCursor(self)

    def close(self) -> None:
        self.closed = True


class FakeCursor:
    def __init__(self, conn: FakeConnection) -> None:
        self.conn = conn
        self.description: list[tuple[str, ...]] | None = None
        self._rows: list[Sequence[Any]] = []

    def execute(self, operation: str, params: Any = None) -> None:
        self.conn.executed.append((operation, params))
        for key, answer in self.conn.answers.items():
            if key in operation:
                if isinstance(answer, BaseException):
                    raise answer
                names, rows = answer(params) if callable(answer) else answer
                self.description = [(n, None, None, None, None, None, None) for n in names]
                self._rows = list(rows)
                return
        raise AssertionError(f"the fake has no answer for: {operation}")

    def fetchall(self) -> list[Sequence[Any]]:
        rows, self._rows = self._rows, []
        return rows

    def fetchmany(self, size: int = 1) -> list[Sequence[Any]]:
        self.conn.fetch_sizes.append(size)
        rows, self._rows = self._rows[:size], self._rows[size:]
        return rows

    def nextset(self) -> bool:
        return False

    def close(self) -> None:
        self.conn.cursors_closed += 1

    def arrow_batch(self, batch_size: int) -> Any:
        """Like mssql-python: up to batch_size rows, with the driver's own Arrow types."""
        import pyarrow as pa

        assert self.description is not None
        self.conn.fetch_sizes.append(batch_size)
        names = [d[0] for d in self.description]
        rows, self._rows = self._rows[:batch_size], self._rows[batch_size:]
        columns = [pa.array([row[i] for row in rows]) for i in range(len(names))]
        return pa.RecordBatch.from_arrays(columns, names=names)
