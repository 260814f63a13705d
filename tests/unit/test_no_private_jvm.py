"""The library reaches Spark and Delta only through what Spark Connect carries.

No module of `mssql_cdc` touches py4j or a session's JVM handles (`_jvm`, `_jsparkSession`,
`_jsc`, `_jdf`, `_jdt`, `_jwrite`, `_sc`, an Observation's `_jo`, `sparkContext._...`,
`SparkContext._...`; as attributes or through `getattr`/`hasattr`), but the modules of ALLOWED,
each for its reason, or imports delta-spark's Python
API (`delta`, `delta.tables`), whose Connect path needs a server plugin Delta does not publish
for Spark 4.2 (issue 16). An `ast` walk finds them, imports inside functions and under
`TYPE_CHECKING` too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import mssql_cdc

PACKAGE = Path(mssql_cdc.__file__).parent

# `_jo`: an Observation's JVM object, as private as a DataFrame's `_jdf`.
PRIVATE_ATTRIBUTES = frozenset(
    {"_jvm", "_jsparkSession", "_jsc", "_jdf", "_jdt", "_jwrite", "_sc", "_jo"}
)
FORBIDDEN_MODULES = ("py4j", "delta")

# Modules that must keep a forbidden use, each with why (docs/architecture.md names them too).
ALLOWED: dict[str, str] = {
    "pipeline/callback_connections.py": "shuts the Py4J connection an ended query's "
    "foreachBatch calls came in on, which Py4J's JVM end never closes (classic Spark only; "
    "it reaches the connection through `SparkContext._gateway`)",
}


def _forbidden_module(name: str) -> bool:
    return any(name == root or name.startswith(root + ".") for root in FORBIDDEN_MODULES)


def findings(source: str) -> list[str]:
    """Every forbidden use in one module's source, as `line: what`."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            if node.attr in PRIVATE_ATTRIBUTES:
                found.append(f"{node.lineno}: attribute {node.attr}")
            elif (
                node.attr.startswith("_")
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "sparkContext"
            ):
                found.append(f"{node.lineno}: sparkContext.{node.attr}")
            elif (
                node.attr.startswith("_")
                and isinstance(node.value, ast.Name)
                and node.value.id == "SparkContext"
            ):
                found.append(f"{node.lineno}: SparkContext.{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and (
                node.args[1].value in PRIVATE_ATTRIBUTES
                or (
                    node.args[1].value.startswith("_")
                    and isinstance(node.args[0], ast.Name)
                    and node.args[0].id == "SparkContext"
                )
            )
        ):
            found.append(f"{node.lineno}: {node.func.id} {node.args[1].value}")
        elif isinstance(node, ast.Import):
            found.extend(
                f"{node.lineno}: import {alias.name}"
                for alias in node.names
                if _forbidden_module(alias.name)
            )
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module is not None
            and _forbidden_module(node.module)
        ):
            found.append(f"{node.lineno}: from {node.module} import")
    return sorted(found, key=lambda hit: int(hit.split(":")[0]))


def test_no_module_uses_py4j_a_private_jvm_handle_or_delta_spark_python_api() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module in ALLOWED:
            continue
        hits = findings(path.read_text(encoding="utf-8"))
        if hits:
            offenders[module] = hits
    assert offenders == {}


def test_the_checker_sees_a_jvm_handle_written_as_attribute_or_getattr() -> None:
    source = (
        "def f(spark, df):\n"
        "    a = spark._jvm\n"
        "    b = df.sparkSession.sparkContext._gateway\n"
        "    c = getattr(spark, '_jsparkSession', None)\n"
        "    d = spark.sparkContext.defaultParallelism + df._private\n"
    )
    assert findings(source) == [
        "2: attribute _jvm",
        "3: sparkContext._gateway",
        "4: getattr _jsparkSession",
    ]


def test_the_checker_sees_the_class_wide_gateway_of_sparkcontext() -> None:
    source = "from pyspark import SparkContext\ngateway = SparkContext._gateway\n"
    assert findings(source) == ["2: SparkContext._gateway"]
    written = 'gateway = getattr(SparkContext, "_gateway", None)\n'
    assert findings(written) == ["1: getattr _gateway"]


def test_each_allowed_module_still_needs_its_place_on_the_list() -> None:
    for module in ALLOWED:
        assert findings((PACKAGE / module).read_text(encoding="utf-8")), module


def test_the_checker_sees_an_import_inside_a_function() -> None:
    source = "def f():\n    from delta.tables import DeltaTable\n    import py4j.protocol\n"
    assert findings(source) == ["2: from delta.tables import", "3: import py4j.protocol"]


def test_the_checker_sees_an_import_under_type_checking() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from delta.tables import DeltaTable\n"
        "import deltalake\n"
        "from mssql_cdc.tables.delta_log import x\n"
    )
    assert findings(source) == ["3: from delta.tables import"]
