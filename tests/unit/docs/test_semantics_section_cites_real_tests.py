"""docs/sqlserver.md's "Semantics the library takes from the server" names, for each rule, the
test that holds it (issue 34). A renamed or deleted test would leave the rule unproven while the
page still claims it; this fails then, naming the missing test."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SECTION = "## Semantics the library takes from the server"
PYTHON_TEST = re.compile(r"`(test_[A-Za-z0-9_]+)(?:\[[^\]`]*\])?`")
GOOGLE_TEST = re.compile(r"`([A-Z][A-Za-z0-9]+)\.([A-Z][A-Za-z0-9]+)`")


def _section() -> str:
    text = (ROOT / "docs" / "sqlserver.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end != -1 else len(text)]


def _defined_python_tests() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        found.update(re.findall(r"^\s*def (test_\w+)\(", path.read_text(encoding="utf-8"), re.M))
    return found


def _defined_google_tests() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in (ROOT / "cpp" / "tests").glob("*.cpp"):
        text = path.read_text(encoding="utf-8")
        found.update(re.findall(r"TEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)", text))
    return found


def test_every_test_the_semantics_section_names_exists() -> None:
    section = _section()
    python_names = set(PYTHON_TEST.findall(section))
    google_names = set(GOOGLE_TEST.findall(section))
    assert len(python_names) >= 20, "the section should name the tests of its rules"
    missing = sorted(python_names - _defined_python_tests())
    missing += sorted(f"{s}.{n}" for s, n in google_names - _defined_google_tests())
    assert missing == [], f"docs/sqlserver.md names tests that do not exist: {missing}"
