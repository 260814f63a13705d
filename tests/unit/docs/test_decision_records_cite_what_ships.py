"""Decision records and guides cite only what ships with the project.

The design specification, its ADRs and the issue tracker's numbers are not in the repository,
so "spec 30 section 6.1", "ADR 0018" or "issue 14" sends a reader nowhere. A record may cite
docs pages (which must exist) and other decision records (which must exist).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
RECORDS = sorted((ROOT / "docs" / "decisions").glob("*.md"))
UNSHIPPED = re.compile(r"\bspec\s+\d|\bADR\b|§|\b\d\d-[a-z-]+\.md\b|\bissues?\s+\d", re.IGNORECASE)
DOC_PAGE = re.compile(r"\bdocs/([\w./-]+\.md)\b")
DECISION = re.compile(r"\bdecisions?\s+(\d{4})\b")


def test_there_are_records_to_check() -> None:
    assert len(RECORDS) > 100


@pytest.mark.parametrize("record", RECORDS, ids=lambda p: p.name[:4])
def test_a_record_cites_no_document_that_does_not_ship(record: Path) -> None:
    text = record.read_text()
    assert UNSHIPPED.findall(text) == []
    missing_pages = [
        page for page in DOC_PAGE.findall(text) if not (ROOT / "docs" / page).is_file()
    ]
    assert missing_pages == []
    numbers = {p.name[:4] for p in RECORDS}
    assert [n for n in DECISION.findall(text) if n not in numbers] == []


GUIDES = [
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
]


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.name)
def test_a_guide_cites_no_spec_adr_or_issue_number(guide: Path) -> None:
    assert UNSHIPPED.findall(guide.read_text()) == []
