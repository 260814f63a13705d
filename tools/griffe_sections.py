"""A griffe extension for `make docs`: reads this project's Google docstrings as written.

The style guide writes a docstring's sections back to back (`Returns:` on the line after the
last argument, `Raises:` right after it); griffe takes a section title only after a blank line
and would render the rest as plain text. This extension adds that blank line before each
section title at the left margin, on the docstring griffe parses, not in the source.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_TITLE = re.compile(
    r"(Args|Arguments|Parameters|Keyword Args|Returns|Yields|Raises|Warns|Attributes|"
    r"Examples?|Notes?):\s*"
)


def with_blank_lines_before_sections(text: str) -> str:
    """Return `text` with a blank line before every unindented section title that lacks one."""
    lines = text.split("\n")
    out: list[str] = []
    for line in lines:
        if _TITLE.fullmatch(line) and out and out[-1].strip():
            out.append("")
        out.append(line)
    return "\n".join(out)


class SectionsWithoutBlankLines(griffe.Extension):
    """Let griffe find sections written without a blank line above them."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = with_blank_lines_before_sections(obj.docstring.value)
