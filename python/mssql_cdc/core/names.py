"""The closest known name to a mistyped one, for "did you mean" hints in errors and warnings.

One rule for the CLI's flags and verbs and for the source's option names.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """ " (did you mean X?)" naming the known name closest to `name`, or "" when none is close.

    Leading dashes and case are ignored in the comparison: they would make every flag look
    alike.
    """
    bare = {n.lstrip("-").lower(): n for n in known}
    close = difflib.get_close_matches(name.lstrip("-").lower(), list(bare), n=1, cutoff=0.7)
    return f" (did you mean {bare[close[0]]}?)" if close else ""
