"""Write docs/reference.md, the one page that lists every knob, from the code itself.

The page's rows come from the code: the source options from `KNOWN_OPTIONS`, the arguments
from the public functions' signatures, the flags from the CLI's argparse parser, the
environment variables from the package's reads of `os.environ`, the public names from each
public module's `__all__`. Only the one-line summaries of options and environment variables
are kept here by hand, and a name without its summary stops the generator, so nothing new
reaches the code without a row. tests/unit/docs/test_reference_page.py fails when the
committed page differs from what this prints.

    .venv/bin/python tools/docs_reference.py            print the page
    .venv/bin/python tools/docs_reference.py --write    rewrite docs/reference.md
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference.md"
PACKAGE = ROOT / "python" / "mssql_cdc"

# One line each; the full rules are in docs/source-options.md.
OPTION_SUMMARIES: dict[str, str] = {
    "captureInstance": "the capture instance to read (required)",
    "connectionString": "ODBC-style `key=value;...` text (required, except with `emulator`)",
    "backend": "`mssql-python` (default), `pymssql` or `emulator`",
    "emulatorPath": "the emulator's database file (with `emulator` only)",
    "connectTimeout": "login timeout in seconds (default 30)",
    "startingLsn": "where a new stream starts: `earliest` (default), `latest` or an LSN",
    "maxCommitsPerBatch": "at most this many source transactions per micro-batch (no limit)",
    "numPartitions": "Spark partitions per read (default `auto`)",
    "failOnDataLoss": "stop on purged changes (default `true`; keep it for recovery)",
    "metricsPath": "folder for the reader's metrics files, which the sink folds into facts",
    "includeCommandId": "include the `_command_id` column (default `true`)",
    "arrowBatchSize": "rows per Arrow batch (default 10000)",
    "columns": "the schema to read, `name TYPE, ...` (default: inferred)",
    "sourceTimeZone": "the server's time zone for commit times (default `auto`)",
    "schemaChangePolicy": "`classify` (default) or `fail` on a capture-instance change",
    "snapshotLsn": "the LSN a snapshot read is stamped with",
    "snapshotChunks": "JSON list of key ranges for a chunked snapshot read",
    "snapshotKeys": "JSON list of the key columns a snapshot orders by",
    "isolationLevel": "`readCommitted` (default) or `snapshot` for source-table reads",
    "lockTimeoutMs": "give up a waiting source-table read after this many milliseconds",
    "snapshotDurationGuard": "`warn` (default), `refuse` or `off` for a long snapshot",
    "snapshotOnSwitch": "re-snapshot when a capture-instance switch changes columns or key",
    "snapshotMode": "`never`, `initial` (snapshot first) or `when_needed` (and after a loss)",
    "gapDeletesFrom": "with `when_needed`: the Delta table of the rows the stream delivered; "
    "a re-snapshot adds delete rows for its keys the table no longer holds",
    "user": "the SQL login, passed to the driver apart from `connectionString`",
    "password": "the login's password, passed to the driver apart from `connectionString`",
    "accessToken": "a Microsoft Entra access token (`mssql-python` only)",
    "accessTokenProvider": "`package.module:function` returning a fresh access token at "
    "each connection (`mssql-python` only)",
}

ENV_SUMMARIES: dict[str, str] = {
    "MSSQL_CDC_JARS": "a folder holding Delta's jars for `local_session()`; without it, a "
    "checkout's `.cache/jars`, else Spark fetches them from Maven Central",
    "SPARK_REMOTE": "a Spark Connect URL (`sc://host:port/...`): `local_session()` returns a "
    "Connect session to that server instead of starting a local Spark",
    "JAVA_HOME": "the Java runtime Spark starts with (else `java` on `PATH`)",
    "MSSQL_CDC_FAILPOINTS": "arms failpoints for crash tests, `name=action,...` (testing only)",
    "MSSQL_CDC_EMULATOR_PASSWORD": "the password `mssql-cdc emulator serve` accepts for its "
    "login (else it makes a random one and prints it once); never passed on the command line",
    "MSSQL_CDC_NATIVE_CHECKED": "set by `local_session()` so Spark's Python workers skip an "
    "editable install's rebuild check (internal)",
}

PUBLIC_MODULES = (
    "mssql_cdc",
    "mssql_cdc.errors",
    "mssql_cdc.finalization",
    "mssql_cdc.emulator",
    "mssql_cdc.spark",
    "mssql_cdc.testing",
    "mssql_cdc.testing.failpoints",
    "mssql_cdc.types",
)


def _known_options() -> tuple[str, ...]:
    from mssql_cdc.options.config import KNOWN_OPTIONS

    return tuple(KNOWN_OPTIONS)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _first_line(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return _cell(doc.split("\n\n", 1)[0])


def options_section(known: tuple[str, ...]) -> Iterator[str]:
    missing = [name for name in known if name not in OPTION_SUMMARIES]
    extra = [name for name in OPTION_SUMMARIES if name not in known]
    if missing or extra:
        raise ValueError(f"option summaries: missing {missing}, no such option {extra}")
    yield "## Source options"
    yield ""
    yield "Passed in the `options` dict of `stream()`, `fan_out()` and `reconcile()`, or to"
    yield '`spark.readStream.format("mssql_cdc").options(...)`. Defaults, accepted values and'
    yield "errors: [source-options.md](source-options.md)."
    yield ""
    yield "| Option | What it sets |"
    yield "|---|---|"
    for name in known:
        yield f"| `{name}` | {OPTION_SUMMARIES[name]} |"
    yield ""


def _callables() -> list[tuple[str, Callable[..., Any]]]:
    import mssql_cdc
    import mssql_cdc.finalization
    import mssql_cdc.spark

    found: list[tuple[str, Callable[..., Any]]] = []
    for module in (mssql_cdc, mssql_cdc.spark, mssql_cdc.finalization):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                found.append((f"{module.__name__}.{name}", obj))
            elif inspect.isclass(obj) and not issubclass(obj, BaseException):
                for member, attr in vars(obj).items():
                    if not member.startswith("_") and inspect.isfunction(attr):
                        found.append((f"{module.__name__}.{name}.{member}", attr))
    return found


def _argument_docs(func: Callable[..., Any]) -> dict[str, str]:
    """The docstring's `Args:` section: argument name -> its text, lines joined."""
    docs: dict[str, str] = {}
    lines = (inspect.getdoc(func) or "").splitlines()
    if "Args:" not in lines:
        return docs
    name = ""
    for line in lines[lines.index("Args:") + 1 :]:
        if line and not line.startswith(" "):
            break  # the next section (Returns:, Raises:, ...)
        if line.startswith("    ") and not line.startswith("     ") and ":" in line:
            name, _, text = line.strip().partition(":")
            name = name.strip("*")
            docs[name] = text.strip()
        elif name:
            docs[name] += " " + line.strip()
    return docs


def _annotation(param: inspect.Parameter) -> str:
    if param.annotation is inspect.Parameter.empty:
        return ""
    text = param.annotation if isinstance(param.annotation, str) else repr(param.annotation)
    return f"`{_cell(text)}`"


def arguments_section() -> Iterator[str]:
    yield "## Functions and their arguments"
    yield ""
    yield "Every public function and method, with each argument's type, default and docstring. The"
    yield "API reference pages say what each one returns and raises."
    yield ""
    for qualname, func in _callables():
        yield f"### `{qualname}`"
        yield ""
        summary = _first_line(func)
        if summary:
            yield summary
            yield ""
        params = [p for p in inspect.signature(func).parameters.values() if p.name != "self"]
        if not params:
            yield "No arguments."
            yield ""
            continue
        about = _argument_docs(func)
        yield "| Argument | Type | Default | What it is |"
        yield "|---|---|---|---|"
        for param in params:
            star = {param.VAR_POSITIONAL: "*", param.VAR_KEYWORD: "**"}.get(param.kind, "")
            default = "required" if param.default is param.empty else f"`{param.default!r}`"
            if star:
                default = ""
            text = _cell(about.get(param.name, ""))
            yield f"| `{star}{param.name}` | {_annotation(param)} | {default} | {text} |"
        yield ""


def _verbs(parser: argparse.ArgumentParser, prefix: str) -> Iterator[tuple[str, str, Any]]:
    """(the verb's command line, its one-line summary, its parser), depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{prefix} {name}", summaries.get(name, ""), sub
                yield from _verbs(sub, f"{prefix} {name}")


def _flag(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(action.option_strings)
        if action.nargs == 0:
            return f"`{names}`"
        return f"`{names} {action.metavar or action.dest.upper()}`"
    return f"`{action.metavar or action.dest.upper()}`"


def cli_section() -> Iterator[str]:
    from mssql_cdc.cli import build_parser

    yield "## Command-line flags"
    yield ""
    yield "`mssql-cdc VERB ...`; `mssql-cdc --version` prints the version. Exit codes and"
    yield "output modes: [cli.md](cli.md)."
    yield ""
    for verb, summary, parser in _verbs(build_parser(), "mssql-cdc"):
        rows = [
            action
            for action in parser._actions
            if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
        ]
        subverbs = [
            name
            for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name in action.choices
        ]
        yield f"### `{verb}`"
        yield ""
        about = _cell(parser.description or summary)
        if about:
            yield about
            yield ""
        if subverbs:
            yield "Verbs: " + ", ".join(f"`{name}`" for name in subverbs) + "."
            yield ""
        if not rows:
            continue
        yield "| Flag | What it does | Default |"
        yield "|---|---|---|"
        for action in rows:
            text = _cell(str(action.help or "").replace("%(default)s", str(action.default)))
            if action.choices and not isinstance(action.choices, dict):
                text += " (" + ", ".join(f"`{c}`" for c in action.choices) + ")"
            default = action.default
            shown = "" if default in (None, False, argparse.SUPPRESS) else f"`{default}`"
            if action.required or (not action.option_strings and action.nargs is None):
                shown = "required"
            yield f"| {_flag(action)} | {text} | {shown} |"
        yield ""


def _string_constants() -> dict[str, str]:
    """Module-level `NAME = "text"` assignments across the package."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = node.value.value
    return found


def _is_environ(node: ast.expr) -> bool:
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return name in ("environ", "env")


def environment_variables() -> list[str]:
    """The variables the package reads: `environ.get(X)`, `env.get(X)`, `environ[X]`."""
    constants = _string_constants()
    read: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            key: ast.expr | None = None
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and _is_environ(node.func.value)
                and node.args
            ):
                key = node.args[0]
            elif (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Load)
                and _is_environ(node.value)
            ):
                key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                read.add(key.value)
            elif isinstance(key, ast.Name) and key.id in constants:
                read.add(constants[key.id])
    return sorted(read)


def environment_section(names: list[str]) -> Iterator[str]:
    missing = [name for name in names if name not in ENV_SUMMARIES]
    extra = [name for name in ENV_SUMMARIES if name not in names]
    if missing or extra:
        raise ValueError(f"environment summaries: missing {missing}, not read {extra}")
    yield "## Environment variables"
    yield ""
    yield "| Variable | What it does |"
    yield "|---|---|"
    for name in names:
        yield f"| `{name}` | {ENV_SUMMARIES[name]} |"
    yield ""


def metrics_section() -> Iterator[str]:
    from mssql_cdc.pipeline import OBSERVED_FIELDS, OBSERVED_METRICS, PROMETHEUS_FAMILIES

    yield "## Metrics"
    yield ""
    yield (
        f"Each micro-batch of a `to_delta` query publishes the observed metric "
        f"`{OBSERVED_METRICS}` in its streaming progress; each field equals the batch's facts "
        "column of its name (`docs/operations.md`, 'In Spark's streaming progress')."
    )
    yield ""
    yield "| Observed metric | Fields |"
    yield "|---|---|"
    yield f"| `{OBSERVED_METRICS}` | {', '.join(f'`{name}`' for name in OBSERVED_FIELDS)} |"
    yield ""
    yield (
        "`PrometheusTextExporter` renders these gauge families, one sample per query labelled "
        "`query` (its name) and `id` (its id):"
    )
    yield ""
    yield "| Family | Shows |"
    yield "|---|---|"
    for family, _, help_text in PROMETHEUS_FAMILIES:
        yield f"| `{family}` | {_cell(help_text)} |"
    yield ""


def names_section() -> Iterator[str]:
    yield "## Public names"
    yield ""
    yield "What each public module exports (its `__all__`); anything else is internal."
    yield ""
    yield "| Module | Names |"
    yield "|---|---|"
    for path in PUBLIC_MODULES:
        module = importlib.import_module(path)
        names = ", ".join(f"`{name}`" for name in sorted(module.__all__, key=str.lower))
        yield f"| `{path}` | {names} |"
    yield ""


def render() -> str:
    """The page, as the code stands now."""
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by tools/docs_reference.py from the code; edit that script, not this"
        " page. -->",
        "",
        "Every source option, function argument, command-line flag, environment variable,",
        "metric and public name in one place, generated from the code. Each section links to",
        "the guide that explains it.",
        "",
    ]
    lines += options_section(_known_options())
    lines += arguments_section()
    lines += cli_section()
    lines += environment_section(environment_variables())
    lines += metrics_section()
    lines += names_section()
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--write" in argv:
        PAGE.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "python"))
    sys.exit(main(sys.argv[1:]))
