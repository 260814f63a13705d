"""The C++ libraries' layers, written down as a test: which library may include which.

`cpp/` holds three libraries, each a folder with a public `include/` and a private `src/`:

| library | what it is                                   | may include            |
|---------|----------------------------------------------|------------------------|
| core    | LSNs, checkpoints, generations, recovery     | itself                 |
| emu     | the SQL Server CDC emulator on SQLite        | core, SQLite           |
| tds     | the emulator's TDS front end                 | emu, core, OpenSSL     |

So the production core never sees the emulator, and the emulator never sees its front end.
A public header (`<library>/include/`) may not include its library's private headers either:
users of the library see only the include folder. CMake enforces the same cut (a library's
target has no include path to the folders above it); this test says which line broke it.
Decision 1300 gives the cut and why.

The public headers are also the libraries' documentation, so a last check asks that every public
function and method declared there carries a comment.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest


def _root() -> Path:
    here = Path(__file__).resolve()
    return next(p for p in here.parents if (p / "pyproject.toml").is_file())


ROOT = _root()
CPP = ROOT / "cpp"
LIBRARIES = ("core", "emu", "tds")

# What each library may include besides itself: other libraries and third-party headers.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "emu": {"core", "SQLite"},
    "tds": {"emu", "core", "SQLite", "OpenSSL"},
}

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^">\n]+)[">]', re.MULTILINE)
THIRD_PARTY = {"sqlite3.h": "SQLite", "openssl/": "OpenSSL"}


@dataclass(frozen=True)
class Include:
    """One `#include` line of a C++ file: where it is and what it names."""

    where: str
    spelling: str
    quoted: bool


def includes_of(source: str, name: str) -> list[Include]:
    """Every `#include` line of a C++ source, with its line number."""
    return [
        Include(f"{name}:{source.count(chr(10), 0, m.start()) + 1}", m.group(2), m.group(1) == '"')
        for m in INCLUDE.finditer(source)
    ]


def named_library(include: Include, path: Path) -> str | None:
    """The library (or third-party package) that `include`, written in `path`, reaches.

    A quoted include is resolved as the compiler does first, beside the including file, so a
    path into another library's folder counts (whether or not the file is there yet); the
    public spellings (`mssqlcdc/emu/x.hpp`, `mssqlcdc/tds/x.hpp`, `mssqlcdc/x.hpp`) and the
    tests' spelling from `cpp/` (`tds/src/x.hpp`) name their library. None: the standard
    library or a file of no library.
    """
    spelling = include.spelling
    if include.quoted:
        beside = Path(os.path.normpath(path.parent / spelling))
        for library in LIBRARIES:
            inside = beside.is_relative_to(CPP / library)
            if inside and (beside.exists() or not path.is_relative_to(CPP / library)):
                return library
    for prefix, package in THIRD_PARTY.items():
        if spelling == prefix or (prefix.endswith("/") and spelling.startswith(prefix)):
            return package
    parts = Path(os.path.normpath(spelling)).parts
    if parts[:1] == ("mssqlcdc",):
        return parts[1] if len(parts) > 2 and parts[1] in LIBRARIES else "core"
    if parts[:1] and parts[0] in LIBRARIES:
        return parts[0]
    return None


def forbidden(library: str, path: Path, source: str) -> list[str]:
    """What `source` (the text of `path`, a file of `library`) includes across the layers."""
    found: list[str] = []
    name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
    public = path.is_relative_to(CPP / library / "include")
    for include in includes_of(source, name):
        reached = named_library(include, path)
        if reached is None or reached == library:
            if public and include.quoted and _private_of(library, include, path):
                found.append(
                    f"{include.where}: public header includes private {include.spelling!r}"
                )
            continue
        if reached not in ALLOWED[library]:
            found.append(f"{include.where}: {library} includes {reached}: {include.spelling!r}")
    return found


def _private_of(library: str, include: Include, path: Path) -> bool:
    beside = Path(os.path.normpath(path.parent / include.spelling))
    return beside.is_relative_to(CPP / library / "src") or (
        not beside.exists() and (CPP / library / "src" / include.spelling).exists()
    )


def files_of(library: str) -> list[Path]:
    folder = CPP / library
    return sorted(p for p in folder.rglob("*") if p.suffix in (".hpp", ".cpp", ".h", ".cc"))


@pytest.mark.parametrize("library", LIBRARIES)
def test_each_library_includes_only_the_layers_below_it(library: str) -> None:
    files = files_of(library)
    assert files, f"no C++ files under cpp/{library}"
    found = [p for f in files for p in forbidden(library, f, f.read_text(encoding="utf-8"))]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("library", LIBRARIES)
def test_each_library_has_a_public_include_folder_and_private_sources(library: str) -> None:
    assert (CPP / library / "include" / "mssqlcdc").is_dir()
    assert any((CPP / library / "src").glob("*.cpp"))


def _check(library: str, relative: str, source: str) -> list[str]:
    return forbidden(library, CPP / library / relative, source)


def test_the_check_catches_upward_includes_given_as_text() -> None:
    core = """
#include <string>
#include "mssqlcdc/emu/engine.hpp"
#include <mssqlcdc/tds/server.hpp>
#include "../../tds/src/login.hpp"
#include "emu/src/scan.hpp"
#include <sqlite3.h>
#include <openssl/ssl.h>
"""
    found = _check("core", "src/lsn.cpp", core)
    for expected in (
        "cpp/core/src/lsn.cpp:3: core includes emu: 'mssqlcdc/emu/engine.hpp'",
        "cpp/core/src/lsn.cpp:4: core includes tds: 'mssqlcdc/tds/server.hpp'",
        "cpp/core/src/lsn.cpp:5: core includes tds: '../../tds/src/login.hpp'",
        "cpp/core/src/lsn.cpp:6: core includes emu: 'emu/src/scan.hpp'",
        "cpp/core/src/lsn.cpp:7: core includes SQLite: 'sqlite3.h'",
        "cpp/core/src/lsn.cpp:8: core includes OpenSSL: 'openssl/ssl.h'",
    ):
        assert expected in found, (expected, found)
    assert len(found) == 6, found

    emu = (
        '#include "mssqlcdc/lsn.hpp"\n#  include "mssqlcdc/tds/wire.hpp"\n#include <openssl/evp.h>'
    )
    assert _check("emu", "include/mssqlcdc/emu/reader.hpp", emu) == [
        "cpp/emu/include/mssqlcdc/emu/reader.hpp:2: emu includes tds: 'mssqlcdc/tds/wire.hpp'",
        "cpp/emu/include/mssqlcdc/emu/reader.hpp:3: emu includes OpenSSL: 'openssl/evp.h'",
    ]


def test_the_check_catches_a_public_header_including_a_private_one() -> None:
    found = _check("emu", "include/mssqlcdc/emu/engine.hpp", '#include "scan.hpp"\n')
    assert found == [
        "cpp/emu/include/mssqlcdc/emu/engine.hpp:1: public header includes private 'scan.hpp'"
    ]


def test_the_check_accepts_includes_down_the_layers() -> None:
    tds = """
#include <vector>
#include <openssl/evp.h>
#include "mssqlcdc/emu/engine.hpp"
#include "mssqlcdc/lsn.hpp"
#include "mssqlcdc/tds/server.hpp"
#include "scalar_kinds.hpp"
"""
    assert _check("tds", "src/session.cpp", tds) == []
    emu = '#include <sqlite3.h>\n#include "mssqlcdc/error.hpp"\n#include "scan.hpp"\n'
    assert _check("emu", "src/reader.cpp", emu) == []


# Every public function and method carries a comment: the public headers are the libraries'
# documentation. A declaration counts as documented when a `//` comment ends on the line above
# it, when one of its own lines ends in a `//` comment, or when it follows, with no blank line
# in between, a documented declaration of the same group (one comment may cover a run of
# related declarations, as `lsn_to_time` and `lsn_to_utc`). Private members, deleted and
# defaulted members, and the function-pointer fields of Arrow's C structs are exempt; function
# bodies, enumerators and initializers are skipped by brace depth. A heuristic, not a C++
# parser: it knows the headers' own style (clang-format's), no macros, no block comments.
_SCOPE = re.compile(
    r'^(?:template\s*<[^;{]*>\s*)?(?:namespace\b|class\b|struct\b|union\b|extern\s+"C")'
)
_ACCESS = re.compile(r"^(public|protected|private)\s*:$")
_DELETED = re.compile(r"=\s*(?:delete|default)\s*;")


@dataclass
class _Scope:
    body: bool  # a function body, an enum or an initializer: skipped
    private: bool = False  # in a private section now
    hidden: bool = False  # opened inside a private section: nothing in it is public


def _code_of(line: str) -> tuple[str, bool]:
    """One line's code without a trailing `//` comment, and whether it had one."""
    in_string = False
    for i, ch in enumerate(line):
        if ch == '"' and (i == 0 or line[i - 1] != "\\"):
            in_string = not in_string
        elif not in_string and line.startswith("//", i):
            return line[:i].rstrip(), True
    return line.rstrip(), False


def _is_function(text: str) -> bool:
    head = re.sub(r"operator\S*", "operator", text.split("(")[0])
    return (
        "(" in text
        and "=" not in head
        and "{" not in head
        and not _SCOPE.match(text)
        and not text.startswith(("enum", "static_assert", "using ", "typedef ", "return "))
        and "(*" not in text
        and not _DELETED.search(text)
    )


def undocumented(source: str, name: str) -> list[str]:
    """The public function declarations of a header `source` that carry no comment."""
    found: list[str] = []
    scopes = [_Scope(body=False)]
    covered = False  # the declarations from here on sit under a comment
    statement: list[str] = []
    start, commented = 0, False
    for number, raw in enumerate(source.splitlines(), start=1):
        line = raw.strip()
        if scopes[-1].body:
            code, _ = _code_of(line)
            depth = code.count("{") - code.count("}")
            while depth < 0 and scopes[-1].body:
                scopes.pop()
                depth += 1
            scopes.extend(_Scope(body=True) for _ in range(max(depth, 0)))
            continue
        if not statement:
            if not line or line.startswith("#"):
                covered = False
                continue
            if line.startswith("//"):
                covered = True
                continue
            if _ACCESS.match(line):
                scopes[-1].private = line.startswith("private")
                covered = False
                continue
            start, commented = number, covered
        code, trailing = _code_of(line)
        commented = commented or trailing
        statement.append(code)
        if not code.endswith((";", "{", "}")):
            continue
        text = " ".join(statement)
        statement = []
        if text.startswith("}"):  # the end of a class, namespace or extern block
            scopes.pop()
            covered = False
            continue
        public = not (scopes[-1].private or scopes[-1].hidden)
        if public and _is_function(text) and not commented:
            found.append(f"{name}:{start}: {text[:80]}")
        depth = text.count("{") - text.count("}")
        if depth > 0 and _SCOPE.match(text):
            hidden = scopes[-1].private or scopes[-1].hidden
            scopes.append(_Scope(body=False, private=text.startswith("class"), hidden=hidden))
            covered = False
        else:
            scopes.extend(_Scope(body=True) for _ in range(max(depth, 0)))
    return found


def public_headers() -> list[Path]:
    return sorted(p for library in LIBRARIES for p in (CPP / library / "include").rglob("*.hpp"))


def test_every_public_declaration_has_a_comment() -> None:
    headers = public_headers()
    assert len(headers) > 20, headers
    found = [
        u
        for h in headers
        for u in undocumented(h.read_text(encoding="utf-8"), str(h.relative_to(ROOT)))
    ]
    assert found == [], "\n".join(found)


def test_the_comment_check_catches_bare_declarations() -> None:
    header = """
namespace x {

// Documented.
int documented(int a);
int grouped(int b);  // the run below a comment is covered

int bare(int a,
         int b);

class Thing {
 public:
  Thing();
  // The size.
  int size() const { return n_; }
  int lonely() const;  // trailing comments count
  Thing(const Thing&) = delete;

  Thing& operator=(Thing&& o) noexcept {
    n_ = o.n_;
    return *this;
  }

 private:
  int hidden();
  int n_ = 0;
};

struct Open {
  std::vector<int> items;
  bool empty() const { return items.empty(); }
};

enum class Kind { A, B };
inline constexpr std::array<int, 2> kTable{{
    {f(1)},
}};

}  // namespace x
"""
    assert undocumented(header, "h.hpp") == [
        "h.hpp:8: int bare(int a, int b);",
        "h.hpp:13: Thing();",
        "h.hpp:19: Thing& operator=(Thing&& o) noexcept {",
        "h.hpp:31: bool empty() const { return items.empty(); }",
    ]
