"""Docstrings and comments under python/ and bench/, and comments under cpp/, cite only what
ships with the project.

The design specification and its decision records (ADRs) are not part of the project, so a
citation such as "spec 30 section 5.3", "10-source.md 5.2", "(8.4)" or "ADR 0018" sends a
reader nowhere. Citations point to `docs/*.md` pages (or a page beside the citing file),
optionally with a section heading in quotes ("docs/data-loss.md, 'The pre-flight'"), and to
`docs/decisions/` records ("decision 0150"); every one of them must name a file, and a
heading, that exists. C++ comments are read as written, a run of `//` lines as one text, so a
citation broken over two lines is caught; string literals in C++ are not read.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def _root() -> Path:
    here = Path(__file__).resolve()
    return next(p for p in here.parents if (p / "pyproject.toml").is_file())


ROOT = _root()
PACKAGE = ROOT / "python"
BENCH = ROOT / "bench"
CPP = ROOT / "cpp"
DECISIONS = ROOT / "docs" / "decisions"

# Citations of the specification, its sections and its decision records.
FORBIDDEN = [
    re.compile(r"\bspec\s+\d+", re.IGNORECASE),
    re.compile(r"\bthe spec\b", re.IGNORECASE),
    re.compile(r"\bADRs?\b"),
    re.compile(r"\b(?:00-overview|10-source|20-sink|30-snapshots|40-emulator)\b"),
    re.compile(r"\bsections?\s+\d+(?:\.\d+)*", re.IGNORECASE),
    re.compile(r"§"),
    re.compile(r"\btable\s+\d+\.\d+"),
    re.compile(r"\binvariant\s+\d+", re.IGNORECASE),
    re.compile(r"\bAmendment\b"),
    re.compile(r"\bthe seed's\b"),
    # A bare section number in parentheses: "(8.4)", "(8.4, 9.3)", "(5.1 step 4)".
    re.compile(r"\(\d{1,2}\.\d{1,2}(?:\s+step\s+\d+)?(?:(?:,\s*|\s+and\s+)\d{1,2}\.\d{1,2})*\)"),
]
MARKDOWN = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.md)\b")
DOC_HEADINGS = re.compile(r"(docs/[\w/-]+\.md),\s+((?:'[^'\n]+'(?:,\s*|\s+and\s+)?)+)")
QUOTED = re.compile(r"'([^'\n]+)'")
DECISION = re.compile(
    r"\b(?:decisions?|docs/decisions/)\s*(\d{4}(?:(?:,\s*|\s+and\s+|\s+to\s+)\d{4})*)"
)
NUMBER = re.compile(r"\d{4}")
# The C++ tokens a comment scan must step over or collect, whichever starts first: raw and plain
# string literals, character literals (not a digit separator, as in 1'000), and both comments.
CPP_TOKEN = re.compile(
    r'(?P<raw>(?<!\w)(?:u8|u|U|L)?R"(?P<delim>[^()\\\s]{0,16})\(.*?\)(?P=delim)")'
    r'|(?P<string>"(?:\\.|[^"\\\n])*")'
    r"|(?P<char>(?<![0-9A-Fa-f])'(?:\\.|[^'\\\n])+')"
    r"|(?P<line>//[^\n]*)"
    r"|(?P<block>/\*.*?\*/)",
    re.DOTALL,
)


@dataclass(frozen=True)
class Text:
    """One comment or string literal of a source file, where it starts."""

    where: str
    text: str


def texts_of(source: str, name: str) -> Iterator[Text]:
    """Every comment and string literal (docstrings included) of a Python source."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.STRING):
            yield Text(f"{name}:{token.start[0]}", token.string)


def cpp_comments_of(source: str, name: str) -> Iterator[Text]:
    """Every comment of a C++ source; a run of `//` lines on consecutive lines is one text."""
    run: list[str] = []
    start = last = 0
    for m in CPP_TOKEN.finditer(source):
        line = source.count("\n", 0, m.start()) + 1
        if m.lastgroup == "line":
            if run and line != last + 1:
                yield Text(f"{name}:{start}", "\n".join(run))
                run = []
            if not run:
                start = line
            run.append(m.group(0)[2:])
            last = line
        elif m.lastgroup == "block":
            if run:
                yield Text(f"{name}:{start}", "\n".join(run))
                run = []
            yield Text(f"{name}:{line}", m.group(0)[2:-2])
    if run:
        yield Text(f"{name}:{start}", "\n".join(run))


def python_texts(folder: Path) -> list[Text]:
    files = sorted(folder.rglob("*.py")) + sorted(folder.rglob("*.pyi"))
    assert files, f"no Python files under {folder}"
    return [
        text
        for path in files
        for text in texts_of(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]


def package_texts() -> list[Text]:
    return python_texts(PACKAGE)


def cpp_and_bench_texts() -> list[Text]:
    files = sorted(p for p in CPP.rglob("*") if p.suffix in (".hpp", ".cpp"))
    assert files, f"no C++ files under {CPP}"
    comments = [
        text
        for path in files
        for text in cpp_comments_of(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    return comments + python_texts(BENCH)


def headings(page: Path) -> list[str]:
    return [
        line.lstrip("#").strip()
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    ]


def problems(texts: list[Text]) -> list[str]:
    """What is wrong with the citations in `texts`, one line per problem."""
    found: list[str] = []
    for t in texts:
        for pattern in FORBIDDEN:
            for m in pattern.finditer(t.text):
                found.append(f"{t.where}: cites the specification: {m.group(0)!r}")
        beside = (ROOT / t.where.rsplit(":", 1)[0]).parent
        for m in MARKDOWN.finditer(t.text):
            if not (ROOT / m.group(1)).is_file() and not (beside / m.group(1)).is_file():
                found.append(f"{t.where}: cites {m.group(1)}, which does not ship")
        for m in DOC_HEADINGS.finditer(t.text):
            page = ROOT / m.group(1)
            if not page.is_file():
                continue  # reported above
            known = headings(page)
            for quoted in QUOTED.findall(m.group(2)):
                if not any(h.startswith(quoted) for h in known):
                    found.append(f"{t.where}: {m.group(1)} has no section '{quoted}'")
        for m in DECISION.finditer(t.text):
            for number in NUMBER.findall(m.group(1)):
                if not any(DECISIONS.glob(f"{number}-*.md")):
                    found.append(f"{t.where}: cites decision {number}, which does not exist")
    return found


def test_python_sources_cite_no_specification_file_section_or_adr() -> None:
    found = [p for p in problems(package_texts()) if "cites the specification" in p]
    assert found == [], "\n".join(found)


def test_every_docs_page_section_and_decision_cited_in_python_exists() -> None:
    found = [p for p in problems(package_texts()) if "cites the specification" not in p]
    assert found == [], "\n".join(found)


def test_cpp_comments_and_bench_cite_no_specification_file_section_or_adr() -> None:
    found = [p for p in problems(cpp_and_bench_texts()) if "cites the specification" in p]
    assert found == [], "\n".join(found)


def test_every_docs_page_section_and_decision_cited_in_cpp_and_bench_exists() -> None:
    found = [p for p in problems(cpp_and_bench_texts()) if "cites the specification" not in p]
    assert found == [], "\n".join(found)


def test_the_package_cites_docs_pages_and_decisions_at_all() -> None:
    joined = "\n".join(t.text for t in package_texts())
    assert DOC_HEADINGS.search(joined) is not None
    assert DECISION.search(joined) is not None


def test_the_check_reports_each_kind_of_bad_citation() -> None:
    source = '''
"""Planning (spec 30 section 5.3), in the spec's order (10-source.md 5.2; ADR 0018)."""
# a skipped piece (7.4 step 1), the event (8.4, 9.3), invariant 4 and Amendment 3
def f() -> None:
    """See docs/nowhere.md, docs/source.md, 'No such heading', and decision 9999."""
'''
    found = problems(list(texts_of(source, "sample.py")))
    for expected in (
        "'spec 30'",
        "'the spec'",
        "'ADR'",
        "'10-source'",
        "'section 5.3'",
        "'(7.4 step 1)'",
        "'(8.4, 9.3)'",
        "'invariant 4'",
        "'Amendment'",
        "cites 10-source.md, which does not ship",
        "cites docs/nowhere.md, which does not ship",
        "docs/source.md has no section 'No such heading'",
        "cites decision 9999, which does not exist",
    ):
        assert any(expected in p for p in found), (expected, found)


def test_the_check_accepts_citations_of_what_ships() -> None:
    source = '''
"""Where the stream is (docs/data-loss.md, 'What happens on a loss', step 1; decision 0150).

Options: docs/source-options.md; rows: docs/source.md, 'Rows' and 'Offsets'. A retry waits
0.5 s (decisions 0460, 0464); `range-*.json` files carry (from, to).
"""
'''
    assert problems(list(texts_of(source, "sample.py"))) == []


def test_the_check_reads_every_cpp_comment_and_no_string() -> None:
    source = """// engine.hpp: the write side (spec
// 40, section 3.5).
#include "mssqlcdc/lsn.hpp"  // ADR 0018
constexpr auto kMax = 1'000'000;  /* invariant 4 */
const char* url = "http://example.com/ (spec 30)";
const char* raw = R"sql(-- the spec, section 5.3 // not a comment)sql";
const char quote = '"';
/* a block
   over lines (8.4) */
int f();  // see docs/nowhere.md and decision 9999
"""
    texts = list(cpp_comments_of(source, "sample.cpp"))
    assert [t.where for t in texts] == [
        "sample.cpp:1",
        "sample.cpp:4",
        "sample.cpp:8",
        "sample.cpp:10",
    ]
    assert texts[0].text == " engine.hpp: the write side (spec\n 40, section 3.5).\n ADR 0018"
    found = problems(texts)
    for expected in (
        "sample.cpp:1: cites the specification: 'spec\\n 40'",
        "sample.cpp:1: cites the specification: 'section 3.5'",
        "sample.cpp:1: cites the specification: 'ADR'",
        "sample.cpp:4: cites the specification: 'invariant 4'",
        "sample.cpp:8: cites the specification: '(8.4)'",
        "sample.cpp:10: cites docs/nowhere.md, which does not ship",
        "sample.cpp:10: cites decision 9999, which does not exist",
    ):
        assert expected in found, (expected, found)
    assert len(found) == 7, found


def test_the_check_accepts_cpp_comments_citing_what_ships() -> None:
    source = """// The scheduled jobs (decision 1240); the wire format is MS-TDS 2.2.7.6.
int x = 0;  // docs/emulator.md, 'Profiles'
"""
    assert problems(list(cpp_comments_of(source, "sample.cpp"))) == []


# Any decision citation, "Decision 0520." at a sentence's start too.
ANY_DECISION = re.compile(DECISION.pattern, re.IGNORECASE)


def module_docstring_lines(source: str) -> range:
    """The lines of a module's docstring (its first statement), or an empty range."""
    body = ast.parse(source).body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        end = body[0].end_lineno or body[0].lineno
        return range(body[0].lineno, end + 1)
    return range(0)


def citations_outside_module_docstring(source: str, name: str) -> list[str]:
    """Decision citations in comments or strings that are not the module's docstring.

    A comment or docstring states its rule itself; only a module docstring may send a reader to
    a decision record, where the reasoning is too long to repeat.
    """
    allowed = module_docstring_lines(source)
    found: list[str] = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in (tokenize.COMMENT, tokenize.STRING):
            continue
        if token.start[0] in allowed:
            continue
        for m in ANY_DECISION.finditer(token.string):
            found.append(
                f"{name}:{token.start[0]}: cites {m.group(0)!r} outside the module docstring"
            )
    return found


def test_decisions_are_cited_only_from_module_docstrings() -> None:
    files = sorted(PACKAGE.rglob("*.py")) + sorted(PACKAGE.rglob("*.pyi"))
    found = [
        problem
        for path in files
        for problem in citations_outside_module_docstring(
            path.read_text(encoding="utf-8"), str(path.relative_to(ROOT))
        )
    ]
    assert found == [], "\n".join(found)


def test_the_module_docstring_check_reports_other_citations() -> None:
    source = '''"""A module; the long reasoning is decision 0150."""

# a comment (decision 0151)
X = 1  # Decisions 0152 and 0153 say why
def f() -> None:
    """A function (decision 0154)."""
'''
    found = citations_outside_module_docstring(source, "sample.py")
    assert [p.split(": ")[0] for p in found] == ["sample.py:3", "sample.py:4", "sample.py:6"], found
