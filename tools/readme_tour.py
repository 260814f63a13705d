"""Print the README's five-minute tour: the first Python block under its heading, as written.

The as-installed tier (tools/as_installed.sh) runs what this prints, so the README's tour is the
code that is tested.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
HEADING = "## A five-minute tour"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def tour(readme: str) -> str:
    """Return the tour's code; raise ValueError when the README has no such block."""
    _, found, rest = readme.partition(HEADING + "\n")
    section = rest.split("\n## ", 1)[0]
    match = BLOCK.search(section)
    if not found or match is None:
        raise ValueError(f"{README}: no ```python block under {HEADING!r}")
    return match.group(1)


if __name__ == "__main__":
    sys.stdout.write(tour(README.read_text()))
