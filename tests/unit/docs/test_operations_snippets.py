"""docs/operations.md's scheduler and alert snippets run as written, against stand-ins for the
systems this machine does not have (cron's shell is real; `mssql-cdc`, `spark-submit`, `mail`,
Airflow and Databricks' `dbutils` are stand-ins that record what they were asked)."""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import shlex
import subprocess
import sys
import types
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.cli import build_parser
from mssql_cdc.pipeline.cdc_stream import CdcStream

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
GUIDE = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(GUIDE) if lang == language]


def cron_script() -> str:
    [script] = [b for b in blocks("bash") if b.startswith("#!/usr/bin/env bash")]
    return script


def alert_block() -> str:
    [block] = [b for b in blocks("bash") if "mssql-cdc status" in b]
    return block


def commands(text: str) -> list[list[str]]:
    """Every `mssql-cdc ...` command line of a shell text, continuation lines joined."""
    joined = text.replace("\\\n", " ")
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if line.startswith("mssql-cdc "):
            words = shlex.split(line.split(">")[0])
            found.append(words[1:])
    return found


def test_every_documented_command_line_parses_with_the_real_cli() -> None:
    lines = commands(GUIDE)
    airflow = next(b for b in blocks("python") if "airflow" in b)
    tree = ast.parse(airflow)
    [plan] = [
        ast.literal_eval(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "PLAN"
    ]
    assert plan[0] == "mssql-cdc"
    lines.append(plan[1:])
    assert {words[0] for words in lines} >= {"status", "plan", "gc"}
    for words in lines:
        build_parser().parse_args(words)  # exits 2 on an unknown or misspelt flag


def stand_in(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/usr/bin/env bash\n{body}\n")
    path.chmod(0o755)


@pytest.mark.parametrize(
    ("plan_exit", "script_exit", "calls"),
    [
        (0, 0, ["spark-submit orders_job.py"]),
        (10, 0, ["mail -s orders re-snapshot data-team", "spark-submit orders_job.py"]),
        (11, 11, ["mail -s orders: recovery blocked data-oncall"]),
        (2, 1, []),
        (1, 1, []),
    ],
)
def test_the_cron_script_takes_the_branch_of_plans_exit_code(
    tmp_path: Path, plan_exit: int, script_exit: int, calls: list[str]
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    plan = {"action": "blocked", "reason": "the anti-loop guard refuses"}
    stand_in(
        bin_dir,
        "mssql-cdc",
        f"echo '{json.dumps(plan)}'\nexit {plan_exit}",
    )
    stand_in(bin_dir, "python", f'exec {sys.executable} "$@"')
    for name in ("spark-submit", "mail"):
        stand_in(bin_dir, name, f'echo "{name} $*" >> {log}\ncat > /dev/null || true')
    (tmp_path / "script.sh").write_text(cron_script())
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(
        ["bash", "script.sh"], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, check=False
    )
    assert done.returncode == script_exit
    assert (log.read_text().splitlines() if log.exists() else []) == calls


AIRFLOW_BRANCHES = [
    (0, "run_orders"),
    (10, "run_orders_resnapshot"),
    (11, "page_oncall"),
    (2, "config_error"),
    (1, "config_error"),
]


@pytest.mark.parametrize(("plan_exit", "branch"), AIRFLOW_BRANCHES)
def test_the_airflow_task_branches_on_plans_exit_code(
    monkeypatch: pytest.MonkeyPatch, plan_exit: int, branch: str
) -> None:
    airflow = types.ModuleType("airflow")
    decorators = types.ModuleType("airflow.decorators")
    decorators.task = types.SimpleNamespace(branch=lambda f: f)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "airflow", airflow)
    monkeypatch.setitem(sys.modules, "airflow.decorators", decorators)
    ran: list[list[str]] = []

    def run(argv: list[str], **_kw: Any) -> Any:
        ran.append(argv)
        return types.SimpleNamespace(returncode=plan_exit)

    monkeypatch.setattr(subprocess, "run", run)
    scope: dict[str, Any] = {}
    exec(next(b for b in blocks("python") if "airflow" in b), scope)
    assert scope["plan_orders"]() == branch
    assert ran == [scope["PLAN"]]


def test_the_databricks_task_calls_plan_recovery_as_documented() -> None:
    block = next(b for b in blocks("python") if "dbutils" in b)
    published: dict[str, str] = {}
    calls: list[inspect.BoundArguments] = []

    class Stream:
        def plan_recovery(self, *args: Any, **kwargs: Any) -> dict[str, str]:
            calls.append(inspect.signature(CdcStream.plan_recovery).bind(self, *args, **kwargs))
            return {"action": "blocked", "reason": "the mode lock"}

    fake = types.ModuleType("mssql_cdc")
    fake.stream = lambda spark, options: Stream()  # type: ignore[attr-defined]
    dbutils = types.SimpleNamespace(
        jobs=types.SimpleNamespace(
            taskValues=types.SimpleNamespace(set=lambda key, value: published.update({key: value}))
        )
    )
    saved = sys.modules["mssql_cdc"]
    sys.modules["mssql_cdc"] = fake
    try:
        exec(block, {"spark": object(), "options": {}, "dbutils": dbutils})
    finally:
        sys.modules["mssql_cdc"] = saved
    [bound] = calls
    assert bound.arguments["bootstrap"] is True
    assert published == {"action": "blocked"}


def status_json(headroom: float | None, written_ago_hours: float) -> dict[str, Any]:
    written = datetime.now(UTC) - timedelta(hours=written_ago_hours)
    batch = {
        "written_at": written.replace(tzinfo=None).isoformat(timespec="milliseconds"),
        "retention_headroom_hours": headroom,
    }
    return {"generation": 1, "facts": {"latest_batch": batch}}


@pytest.mark.parametrize(
    ("headroom", "ago", "code", "level"),
    [
        (72.0, 1.0, 0, "ok"),
        (30.0, 10.0, 1, "warning"),
        (10.0, 5.0, 2, "critical"),
        (None, 1.0, 3, "unknown"),
    ],
)
def test_the_headroom_alert_script_exits_by_its_thresholds(
    tmp_path: Path, headroom: float | None, ago: float, code: int, level: str
) -> None:
    block = alert_block()
    script = block[block.index("<<'EOF'\n") + len("<<'EOF'\n") : block.rindex("EOF")]
    (tmp_path / "status.json").write_text(json.dumps(status_json(headroom, ago)))
    (tmp_path / "alert.py").write_text(script)
    done = subprocess.run(
        [sys.executable, "alert.py", "status.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == code, done.stderr
    assert done.stdout.startswith(f"{level}:")
