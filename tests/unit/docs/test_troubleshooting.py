"""docs/troubleshooting.md quotes messages the library really raises.

Each `### \\`...\\`` heading quotes the stable part of a message, with `…` where names and values
change. Every piece between the `…` must appear in one string the source writes: a Python string
literal or f-string (its `{...}` parts left out), or a C++ string literal of the native core
(adjacent literals joined). A message reworded in the source, and not in the guide, fails here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest


def _root() -> Path:
    here = Path(__file__).resolve()
    return next(p for p in here.parents if (p / "pyproject.toml").is_file())


ROOT = _root()
GUIDE = ROOT / "docs" / "troubleshooting.md"
HEADING = re.compile(r"^### `(.+)`$", re.MULTILINE)
GAP = "…"
CPP_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
CPP_CONTINUATION = re.compile(r'"\s*\n\s*"')


def _python_strings() -> Iterator[str]:
    for path in sorted((ROOT / "python" / "mssql_cdc").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield node.value
            elif isinstance(node, ast.JoinedStr):
                # A formatted value is a gap: no quoted piece may span one.
                yield GAP.join(
                    str(part.value) if isinstance(part, ast.Constant) else GAP
                    for part in node.values
                )


def _cpp_strings() -> Iterator[str]:
    for path in sorted((ROOT / "cpp").glob("*/src/**/*.cpp")):
        text = CPP_CONTINUATION.sub("", path.read_text(encoding="utf-8"))
        for literal in CPP_LITERAL.findall(text):
            yield literal.encode().decode("unicode_escape")


SOURCE_STRINGS = [*_python_strings(), *_cpp_strings()]
QUOTED = HEADING.findall(GUIDE.read_text(encoding="utf-8"))


def test_the_guide_quotes_messages() -> None:
    assert len(QUOTED) >= 50, "the guide's headings are no longer `### `message`` lines"
    duplicates = {q for q in QUOTED if QUOTED.count(q) > 1}
    assert not duplicates, f"messages quoted twice: {sorted(duplicates)}"


@pytest.mark.parametrize("quoted", QUOTED)
def test_each_quoted_message_is_written_by_the_source(quoted: str) -> None:
    # A gap may hold the spaces around a value, as when one string ends where another begins.
    pieces = [p.strip() for p in quoted.split(GAP) if p.strip()]
    assert pieces, f"{quoted!r} quotes nothing but gaps"
    missing = [p for p in pieces if not any(p in s for s in SOURCE_STRINGS)]
    assert not missing, f"no message of the source holds {missing} (from {quoted!r})"
