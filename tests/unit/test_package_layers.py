"""The package's layers, written down as a test: which package may import which, and how.

The map is the table of docs/architecture.md's 'The packages and their layers': a package may
import only what its row allows (besides itself and the standard library), and only through
the other package's face, the names its `__init__.py` lists in `__all__`. Rows name the
library's packages; `mssql_cdc` alone means the package root, whose public names the CLI and
the snapshot read may use. Third-party rules keep the light layers light: the driver's and
the executors' imports must not drag Spark or Delta in. So the source never imports the sink,
the recovery, snapshots or table writes; the sink never imports the recovery or snapshots;
nothing but the CLI imports the CLI.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import mssql_cdc

PACKAGE = Path(mssql_cdc.__file__).parent
ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def documented_layers() -> dict[str, set[str]]:
    """docs/architecture.md's layer table: package -> the packages it may import."""
    section = ARCHITECTURE.read_text().split("## The packages and their layers", 1)[1]
    section = section.split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and (name := re.fullmatch(r"`(\w+)/?`", cells[0])):
            table[name.group(1)] = set(re.findall(r"`(\w+)`", cells[2]))
    return table


ALLOWED: dict[str, set[str]] = documented_layers()

# Third-party modules a package must not import outside `if TYPE_CHECKING:`.
FORBIDDEN_THIRD_PARTY: dict[str, set[str]] = {
    "core": {"pyspark", "delta", "deltalake", "pyarrow", "mssql_python", "pymssql", "pytds"},
    "options": {"pyspark", "delta", "deltalake", "mssql_python", "pymssql"},
    "emulator": {"pyspark", "delta", "deltalake"},
    "sqlserver": {"pyspark", "delta", "deltalake"},
    # deltalake only in source/gap_deletes.py's task, imported there on first use (decision 1426)
    "source": {"delta"},
    "testing": {"pyspark", "delta", "deltalake"},
}


def package_of(module: str) -> str:
    """`mssql_cdc.sink.writer` -> `sink`; the package root itself -> `mssql_cdc`."""
    parts = module.split(".")
    return "mssql_cdc" if len(parts) == 1 else parts[1]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_modules(source: str) -> Iterator[tuple[str, bool]]:
    """Every absolute module an import names, with whether it sits under `if TYPE_CHECKING:`."""

    def walk(node: ast.AST, typing_only: bool) -> Iterator[tuple[str, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.body:
                    yield from walk_stmt(stmt, True)
                for stmt in child.orelse:
                    yield from walk_stmt(stmt, typing_only)
            else:
                yield from walk_stmt(child, typing_only)

    def walk_stmt(node: ast.AST, typing_only: bool) -> Iterator[tuple[str, bool]]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, typing_only
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module == "mssql_cdc":
                for alias in node.names:
                    # `from mssql_cdc import stream` takes a public name; `... import errors`
                    # a module: both count as what they name.
                    sub = f"mssql_cdc.{alias.name}"
                    yield (
                        (
                            sub
                            if (PACKAGE / alias.name).exists() or _is_module(alias.name)
                            else "mssql_cdc"
                        ),
                        typing_only,
                    )
            else:
                yield node.module, typing_only
        else:
            yield from walk(node, typing_only)

    yield from walk(ast.parse(source), False)


def _is_module(name: str) -> bool:
    return (PACKAGE / f"{name}.py").exists() or (PACKAGE / f"{name}.pyi").exists()


def violations(package: str, source: str) -> list[str]:
    """What a module of `package` imports against its row of the layer table."""
    found = []
    allowed = ALLOWED[package] | {package}
    for module, typing_only in imported_modules(source):
        top = module.split(".")[0]
        if top == "mssql_cdc":
            # Imports for types only count too: they are dependencies a reader must follow.
            if package_of(module) not in allowed:
                found.append(f"{package} imports {module}")
        elif top in FORBIDDEN_THIRD_PARTY.get(package, set()) and not typing_only:
            found.append(f"{package} imports {module}")
    return found


def library_modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(rel.parts).removesuffix(".__init__")
        yield module, path


def test_every_package_imports_only_what_its_layer_allows() -> None:
    found = []
    for module, path in library_modules():
        package = package_of(module)
        if package == "mssql_cdc":
            continue  # the root re-exports; its lazy names are checked by the public-API test
        assert package in ALLOWED, f"{module}: package {package!r} has no row in the layer table"
        found += [f"{module}: {v}" for v in violations(package, path.read_text())]
    assert found == []


def face_names(package: str) -> set[str]:
    """The names a package's `__init__.py` lists in `__all__`: what other packages may import."""
    tree = ast.parse((PACKAGE / package / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return {ast.literal_eval(e) for e in node.value.elts}  # type: ignore[attr-defined]
    return set()


def past_faces(package: str, source: str) -> list[str]:
    """Imports of a module of `package` that reach past another package's face.

    `from mssql_cdc.facts import facts_key` is through the face when `facts_key` is in
    `facts.__all__`; `from mssql_cdc.facts.keys import facts_key`, `import
    mssql_cdc.facts.keys` and a name the face does not list all reach past it. The package
    root and the single-module packages (`errors`, `spark`, `types`) are their own faces.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules = [(node.module, [a.name for a in node.names])]
        elif isinstance(node, ast.Import):
            modules = [(a.name, []) for a in node.names]
        else:
            continue
        for module, names in modules:
            parts = module.split(".")
            if parts[0] != "mssql_cdc" or len(parts) < 2 or parts[1] == package:
                continue
            if not (PACKAGE / parts[1] / "__init__.py").is_file():
                continue  # errors, spark, types, _native: a module is its own face
            if len(parts) > 2:
                found.append(f"{package} imports {module}, past the face of {parts[1]}")
                continue
            face = face_names(parts[1])
            found += [
                f"{package} imports {module}.{name}, which {parts[1]}.__all__ does not list"
                for name in names
                if name not in face
            ]
    return found


def test_every_package_has_one_row_in_the_documented_map() -> None:
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    packages |= {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert set(ALLOWED) == packages


def test_other_packages_are_imported_only_through_their_faces() -> None:
    found = []
    for module, path in library_modules():
        package = package_of(module)
        found += [f"{module}: {v}" for v in past_faces(package, path.read_text())]
    assert found == []


def test_every_face_name_exists() -> None:
    import importlib

    missing = []
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        face = importlib.import_module(f"mssql_cdc.{init.parent.name}")
        missing += [
            f"{face.__name__}.{n}" for n in face_names(init.parent.name) if not hasattr(face, n)
        ]
    assert missing == []


def test_the_face_checker_catches_an_import_past_a_face() -> None:
    past = "from mssql_cdc.facts.keys import facts_key\nimport mssql_cdc.tables.refs\n"
    assert past_faces("sink", past) == [
        "sink imports mssql_cdc.facts.keys, past the face of facts",
        "sink imports mssql_cdc.tables.refs, past the face of tables",
    ]
    assert past_faces("sink", "from mssql_cdc.facts import no_such_name\n") == [
        "sink imports mssql_cdc.facts.no_such_name, which facts.__all__ does not list"
    ]
    assert past_faces("facts", "from mssql_cdc.facts.keys import facts_key\n") == []


def test_the_map_is_read_from_the_architecture_page() -> None:
    assert ALLOWED["source"] >= {"core", "options", "sqlserver"}
    assert "sink" not in ALLOWED["source"]
    assert ALLOWED["errors"] == set()


def test_the_package_root_holds_only_the_public_entry_modules() -> None:
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert modules == ["__init__.py", "errors.py", "spark.py", "types.py"]


def test_the_checker_catches_a_source_module_importing_the_sink() -> None:
    bad = "from mssql_cdc.sink.writer import delta_sink\n"
    assert violations("source", bad) == ["source imports mssql_cdc.sink.writer"]


def test_the_checker_catches_core_importing_spark_but_not_for_types_only() -> None:
    assert violations("core", "import pyspark.sql\n") == ["core imports pyspark.sql"]
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pyarrow as pa\n"
    assert violations("core", typed) == []


def test_the_checker_sees_imports_inside_functions() -> None:
    lazy = "def f():\n    from mssql_cdc.recovery import preflight\n"
    assert violations("sink", lazy) == ["sink imports mssql_cdc.recovery"]


def test_no_package_reaches_the_native_module_through_the_package_face() -> None:
    # `from mssql_cdc import _native` reads as an import of the top-level face, which imports
    # every stage: a lower package would then seem to depend on all of them. Import the module
    # by its own path (`import mssql_cdc._native as _native`). The CLI sits above the face.
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        where = path.relative_to(PACKAGE)
        if where.parts[0] in ("cli", "__init__.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "mssql_cdc" and not node.level:
                offenders.append(f"{where}: {[a.name for a in node.names]}")
    assert offenders == []
