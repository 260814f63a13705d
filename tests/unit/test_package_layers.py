"""The package's layers, written down as a test: which package may import which.

A package may import only what its row allows (besides itself and the standard library). Rows
name the library's packages; `mssql_cdc` alone means the package root, whose public names the
CLI and the snapshot read may use. Third-party rules keep the light layers light: the driver's
and the executors' imports must not drag Spark or Delta in.

| package        | may import                                                               |
|----------------|--------------------------------------------------------------------------|
| errors         | nothing of the library                                                   |
| _native        | (the C++ extension)                                                      |
| testing        | errors, core (the clock it pins)                                         |
| core           | _native, errors                                                          |
| options        | core, errors                                                             |
| emulator       | _native, core, errors                                                    |
| sqlserver      | core, options, emulator, errors, testing                                 |
| tables         | core, errors, testing                                                    |
| facts          | core, options, tables, errors, testing                                   |
| source         | core, options, sqlserver, errors, testing                                |
| finalization   | core, tables, facts, errors, testing                                     |
| sink           | core, options, tables, facts, errors, testing                            |
| snapshot       | mssql_cdc, core, options, sqlserver, emulator, source, tables, facts, ... |
| recovery       | core, options, sqlserver, tables, facts, snapshot, errors, testing        |
| silver         | core, tables, facts, finalization, errors, testing                       |
| reconciliation | silver's, options, sqlserver, source, snapshot, recovery (its face)        |
| pipeline       | everything but cli                                                       |
| cli            | mssql_cdc (public names), core, emulator, facts, spark, errors, testing  |
| spark          | _native, core (the Delta classpath), errors                              |

So the source never imports the sink, the recovery, snapshots or table writes; the sink never
imports the recovery or snapshots; nothing but the CLI imports the CLI. The packages in `FACED`
are imported by other packages only through their face, the names their `__init__` exports.
Decision 0600 gives the map of packages and why each sits where it does.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import mssql_cdc

PACKAGE = Path(mssql_cdc.__file__).parent

ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "testing": {"errors", "core"},
    "core": {"_native", "errors"},
    "options": {"core", "errors"},
    "emulator": {"_native", "core", "errors"},
    "sqlserver": {"core", "options", "emulator", "errors", "testing"},
    "tables": {"core", "errors", "testing"},
    "facts": {"core", "options", "tables", "errors", "testing"},
    "source": {"core", "options", "sqlserver", "errors", "testing"},
    "finalization": {"core", "tables", "facts", "errors", "testing"},
    "sink": {"core", "options", "tables", "facts", "errors", "testing"},
    "snapshot": {
        "mssql_cdc",
        "core",
        "options",
        "sqlserver",
        "emulator",
        "source",
        "tables",
        "facts",
        "errors",
        "testing",
    },
    "recovery": {
        "core",
        "options",
        "sqlserver",
        "tables",
        "facts",
        "snapshot",
        "errors",
        "testing",
    },
    "silver": {"core", "tables", "facts", "finalization", "errors", "testing"},
    "reconciliation": {
        "core",
        "options",
        "sqlserver",
        "source",
        "tables",
        "facts",
        "finalization",
        "silver",
        "snapshot",
        "recovery",  # repair=True opens the next generation as resnapshot() does
        "errors",
        "testing",
    },
    "pipeline": {
        "mssql_cdc",
        "core",
        "options",
        "sqlserver",
        "source",
        "tables",
        "facts",
        "sink",
        "snapshot",
        "recovery",
        "errors",
        "testing",
    },
    # facts: `status` reads a stream's health from its facts table (decision 0830).
    "cli": {"mssql_cdc", "core", "emulator", "facts", "spark", "errors", "testing"},
    "spark": {"_native", "core", "errors"},
}

# Packages that other packages import only through the face their `__init__` exports.
FACED = {"pipeline", "reconciliation", "recovery"}

# Third-party modules a package must not import outside `if TYPE_CHECKING:`.
FORBIDDEN_THIRD_PARTY: dict[str, set[str]] = {
    "core": {"pyspark", "delta", "deltalake", "pyarrow", "mssql_python", "pymssql", "pytds"},
    "options": {"pyspark", "delta", "deltalake", "mssql_python", "pymssql"},
    "emulator": {"pyspark", "delta", "deltalake"},
    "sqlserver": {"pyspark", "delta", "deltalake"},
    "source": {"delta", "deltalake"},
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
            imported = package_of(module)
            if imported not in allowed:
                found.append(f"{package} imports {module}")
            elif imported in FACED and imported != package and module != f"mssql_cdc.{imported}":
                found.append(f"{package} imports {module}, not the face mssql_cdc.{imported}")
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


def test_the_package_root_holds_only_the_public_entry_modules() -> None:
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert modules == ["__init__.py", "errors.py", "spark.py"]


def test_the_checker_catches_a_source_module_importing_the_sink() -> None:
    bad = "from mssql_cdc.sink.writer import delta_sink\n"
    assert violations("source", bad) == ["source imports mssql_cdc.sink.writer"]


def test_the_checker_catches_core_importing_spark_but_not_for_types_only() -> None:
    assert violations("core", "import pyspark.sql\n") == ["core imports pyspark.sql"]
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pyarrow as pa\n"
    assert violations("core", typed) == []


def test_the_checker_catches_a_module_behind_a_face() -> None:
    inner = "from mssql_cdc.recovery.preflight import RecoveryRequest\n"
    assert violations("reconciliation", inner) == [
        "reconciliation imports mssql_cdc.recovery.preflight, not the face mssql_cdc.recovery"
    ]
    assert violations("reconciliation", "from mssql_cdc.recovery import RecoveryRequest\n") == []


def test_the_checker_sees_imports_inside_functions() -> None:
    lazy = "def f():\n    from mssql_cdc.recovery import preflight\n"
    assert violations("sink", lazy) == ["sink imports mssql_cdc.recovery"]
