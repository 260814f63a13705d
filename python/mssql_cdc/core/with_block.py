"""Objects used in a `with` block that end their work when the block ends."""

from __future__ import annotations

from typing import Self

__all__ = ["EndsWithBlock"]


class EndsWithBlock:
    """A mixin: `with obj as x` gives `obj` itself as `x`, and the block's end, however it
    ends, calls `obj._end()`, which the class defines (its close or stop)."""

    __slots__ = ()

    def _end(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._end()
