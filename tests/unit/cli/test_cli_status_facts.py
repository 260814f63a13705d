"""`mssql-cdc status --facts`: a stream's health read from its facts table, without Spark.

The facts tables here are written by delta-rs (`write_deltalake`), another writer than the
library's, in the facts schema of `tables.definitions`; the expected outputs are literals.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from mssql_cdc.cli import main
from tests.unit.support.facts_arrow import FACTS_SCHEMA, lsn

SCHEMA = FACTS_SCHEMA


def t(day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, 0, 250000)


def row(app_id: str, generation: int, written: datetime, **values: Any) -> dict[str, Any]:
    r: dict[str, Any] = dict.fromkeys(SCHEMA.names)
    r.update(app_id=app_id, generation=generation, written_at=written, target="/data/bronze")
    r.update(values)
    return r


def batch(
    app_id: str, generation: int, batch_id: int, written: datetime, lo: int, hi: int, **values: Any
) -> dict[str, Any]:
    return row(
        app_id,
        generation,
        written,
        batch_id=batch_id,
        rows=hi - lo + 1,
        min_lsn=lsn(lo),
        max_lsn=lsn(hi),
        end_lsn=lsn(hi + 1),
        **values,
    )


def event(
    app_id: str, generation: int, name: str, written: datetime, at: int, **values: Any
) -> dict[str, Any]:
    values.setdefault("rows", 0)
    return row(
        app_id,
        generation,
        written,
        event=name,
        min_lsn=lsn(at),
        max_lsn=lsn(at),
        end_lsn=lsn(at),
        **values,
    )


# Stream orders-v1: bootstrap and two batches in generation 0, a skip in batch 1, then a loss:
# a full snapshot_open and a resnapshot open generation 1, which commits batches 0 and 1.
ORDERS = [
    event("orders-v1", 0, "bootstrap", t(1), 10, rows=3),
    batch("orders-v1", 0, 0, t(1, 1), 11, 14),
    batch("orders-v1", 0, 1, t(1, 2), 20, 22),
    event(
        "orders-v1",
        0,
        "data_skipped",
        t(1, 2),
        20,
        batch_id=1,
        lost_from_ts=t(1, 1),
        lost_to_ts=t(1, 1, 30),
        detail='{"from":"0x00000000000000000012","to":"0x00000000000000000014","certain":true}',
    ),
    event(
        "orders-v1.g1",
        1,
        "snapshot_open",
        t(9),
        90,
        lost_from_ts=t(1, 2),
        lost_to_ts=t(5),
        detail='{"generation":1,"mode":"full","kind":"resnapshot"}',
    ),
    event(
        "orders-v1.g1",
        1,
        "resnapshot",
        t(9, 1),
        90,
        rows=None,
        lost_from_ts=t(1, 2),
        lost_to_ts=t(5),
        retention_watermark_ts=t(5),
    ),
    batch("orders-v1.g1", 1, 0, t(9, 2), 91, 95),
    batch(
        "orders-v1.g1",
        1,
        1,
        t(9, 3),
        96,
        99,
        end_commit_ts=t(9, 2, 50),
        source_max_commit_ts=t(9, 2, 55),
        ingestion_lag_seconds=300.0,
        retention_watermark_ts=t(6, 2, 50),
        retention_headroom_hours=72.0,
    ),
]
# Other streams in the same table, written later: never part of orders-v1's health. The
# app_id orders-v1.g2 at generation 0 is another stream, not orders-v1's generation 2.
OTHERS = [
    batch("orders-v1.g2", 0, 7, t(20), 200, 210),
    event("orders-v1.g2", 0, "bootstrap", t(20), 199, rows=8),
    batch("shipments", 0, 4, t(21), 300, 301),
    event("shipments", 0, "data_skipped", t(21), 300, batch_id=4),
    batch("orders-v1", 3, 5, t(22), 400, 401),  # generation 3 under the wrong sink id
]


def facts_table(path: Path, rows: list[dict[str, Any]], kind: str = "facts") -> str:
    # Two commits, as a stream's table has many: the reader must see the whole table.
    half = len(rows) // 2
    for part in (rows[:half], rows[half:]):
        write_deltalake(str(path), pa.Table.from_pylist(part, schema=SCHEMA), mode="append")
    stamp_kind(path, kind)
    return str(path)


def stamp_kind(path: Path, kind: str) -> None:
    """Set the `mssql_cdc.kind` property by a metaData commit written by hand (delta-rs writes
    only the properties it knows)."""
    log = path / "_delta_log"
    commits = sorted(log.glob("*.json"))
    [metadata] = [
        json.loads(line)["metaData"]
        for line in commits[0].read_text().splitlines()
        if "metaData" in json.loads(line)
    ]
    metadata["configuration"] = {**metadata["configuration"], "mssql_cdc.kind": kind}
    actions = [{"commitInfo": {"operation": "SET TBLPROPERTIES"}}, {"metaData": metadata}]
    version = int(commits[-1].stem) + 1
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def status(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["status", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def stream(tmp_path: Path) -> tuple[str, str]:
    """(checkpoint, facts) of orders-v1, live in generation 1."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "_mssql_cdc_generation.json").write_text(
        json.dumps(
            {
                "generation": 1,
                "snapshot_lsn": lsn(90),
                "commit_ts": "2026-11-05T00:00:00.000",
                "at": "2026-11-09T01:00:00+00:00",
            }
        )
    )
    return str(ckpt), facts_table(tmp_path / "facts", ORDERS + OTHERS)


EXPECTED_FACTS = {
    "latest_batch": {
        "app_id": "orders-v1.g1",
        "generation": 1,
        "batch_id": 1,
        "rows": 4,
        "min_lsn": lsn(96),
        "max_lsn": lsn(99),
        "end_lsn": lsn(100),
        "end_commit_ts": "2026-11-09T02:50:00.250",
        "source_max_commit_ts": "2026-11-09T02:55:00.250",
        "ingestion_lag_seconds": 300.0,
        "retention_watermark_ts": "2026-11-06T02:50:00.250",
        "retention_headroom_hours": 72.0,
        "written_at": "2026-11-09T03:00:00.250",
    },
    "events": {
        "bootstrap": {
            "event": "bootstrap",
            "app_id": "orders-v1",
            "generation": 0,
            "batch_id": None,
            "lsn": lsn(10),
            "rows": 3,
            "lost_from_ts": None,
            "lost_to_ts": None,
            "detail": None,
            "written_at": "2026-11-01T00:00:00.250",
        },
        "resnapshot": {
            "event": "resnapshot",
            "app_id": "orders-v1.g1",
            "generation": 1,
            "batch_id": None,
            "lsn": lsn(90),
            "rows": None,
            "lost_from_ts": "2026-11-01T02:00:00.250",
            "lost_to_ts": "2026-11-05T00:00:00.250",
            "detail": None,
            "written_at": "2026-11-09T01:00:00.250",
        },
        "data_skipped": {
            "event": "data_skipped",
            "app_id": "orders-v1",
            "generation": 0,
            "batch_id": 1,
            "lsn": lsn(20),
            "rows": 0,
            "lost_from_ts": "2026-11-01T01:00:00.250",
            "lost_to_ts": "2026-11-01T01:30:00.250",
            "detail": {"from": lsn(18), "to": lsn(20), "certain": True},
            "written_at": "2026-11-01T02:00:00.250",
        },
        "snapshot_open": {
            "event": "snapshot_open",
            "app_id": "orders-v1.g1",
            "generation": 1,
            "batch_id": None,
            "lsn": lsn(90),
            "rows": 0,
            "lost_from_ts": "2026-11-01T02:00:00.250",
            "lost_to_ts": "2026-11-05T00:00:00.250",
            "detail": {"generation": 1, "mode": "full", "kind": "resnapshot"},
            "written_at": "2026-11-09T00:00:00.250",
        },
    },
}


def test_json_shows_the_newest_batch_and_events_of_the_stream_family_only(
    stream: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ckpt, facts = stream
    code, out, err = status(capsys, ckpt, "--app-id", "orders-v1", "--facts", facts, "--json")
    assert (code, err) == (0, "")
    s = json.loads(out)
    assert s["facts"] == {"table": facts, **EXPECTED_FACTS}
    assert (s["generation"], s["sink_app_id"]) == (1, "orders-v1.g1")  # what it showed stays


def test_text_shows_the_same_health(
    stream: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ckpt, facts = stream
    code, out, err = status(capsys, ckpt, "--app-id", "orders-v1", "--facts", facts)
    assert (code, err) == (0, "")
    tail = out.splitlines()[-9:]
    assert tail == [
        f"facts           {facts}",
        "latest batch    batch 1 of orders-v1.g1, 4 rows, written 2026-11-09T03:00:00.250",
        f"  range         rows {lsn(96)}..{lsn(99)}, end {lsn(100)} (2026-11-09T02:50:00.250)",
        "  lag           300.0 s behind the source's newest change (2026-11-09T02:55:00.250)",
        "  headroom      72.0 h before CDC cleanup reaches the end offset "
        "(cleanup at 2026-11-06T02:50:00.250)",
        f"bootstrap       orders-v1 at {lsn(10)}, 3 rows, written 2026-11-01T00:00:00.250",
        f"resnapshot      orders-v1.g1 at {lsn(90)}, lost 2026-11-01T02:00:00.250 to "
        "2026-11-05T00:00:00.250, written 2026-11-09T01:00:00.250",
        f"data_skipped    orders-v1 at {lsn(20)}, 0 rows, lost 2026-11-01T01:00:00.250 to "
        "2026-11-01T01:30:00.250, written 2026-11-01T02:00:00.250",
        f"snapshot_open   orders-v1.g1 at {lsn(90)}, 0 rows, lost 2026-11-01T02:00:00.250 to "
        "2026-11-05T00:00:00.250, written 2026-11-09T00:00:00.250",
    ]


def test_a_stream_without_rows_yet_shows_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    facts = facts_table(tmp_path / "facts", OTHERS)
    (tmp_path / "ckpt").mkdir()  # Spark has not started on it yet
    code, out, err = status(
        capsys, str(tmp_path / "ckpt"), "--app-id", "orders-v1", "--facts", facts, "--json"
    )
    assert (code, err) == (0, "")
    assert json.loads(out)["facts"] == {
        "table": facts,
        "latest_batch": None,
        "events": dict.fromkeys(("bootstrap", "resnapshot", "data_skipped", "snapshot_open")),
    }


def test_without_facts_the_json_says_so(
    stream: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = status(capsys, stream[0], "--app-id", "orders-v1", "--json")
    assert code == 0
    assert json.loads(out)["facts"] is None


def test_a_path_with_dot_dot_names_the_table_it_resolves_to(
    stream: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ckpt, facts = stream
    roundabout = str(tmp_path / "ckpt" / ".." / "facts")
    code, out, err = status(capsys, ckpt, "--app-id", "orders-v1", "--facts", roundabout, "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["facts"] == {"table": facts, **EXPECTED_FACTS}
    code, _, err = status(
        capsys, ckpt, "--app-id", "orders-v1", "--facts", str(tmp_path / "facts" / ".." / "ckpt")
    )
    assert code == 2
    assert f"--facts {tmp_path / 'ckpt'} holds no Delta table" in err


def wrong_kind(tmp_path: Path) -> str:
    return facts_table(tmp_path / "control", ORDERS, kind="control")


def no_kind(tmp_path: Path) -> str:
    path = str(tmp_path / "plain")
    write_deltalake(path, pa.table({"a": [1]}))
    return path


def someones_files(tmp_path: Path) -> str:
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "notes.csv").write_text("a,b\n1,2\n")
    return str(tmp_path / "theirs")


def log_without_commits(tmp_path: Path) -> str:
    (tmp_path / "half" / "_delta_log").mkdir(parents=True)
    return str(tmp_path / "half")


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: str(p / "nowhere"), "{p}/nowhere does not exist; pass the facts table"),
        (someones_files, "{p}/theirs holds no Delta table (no _delta_log folder)"),
        (log_without_commits, "{p}/half cannot be read in process here"),
        (wrong_kind, "{p}/control is a control table, not an mssql_cdc facts table"),
        (no_kind, "{p}/plain is a Delta table without mssql_cdc.kind, not an mssql_cdc facts"),
        (
            lambda p: "ops.facts",
            "ops.facts is a catalog name; status reads the facts table "
            "without Spark, from its files: pass the table's path",
        ),
        (lambda p: "ops.facts; DROP TABLE x", "--facts"),
    ],
    ids=[
        "missing",
        "someones-files",
        "no-commit",
        "wrong-kind",
        "no-kind",
        "catalog-name",
        "bad-name",
    ],
)
def test_a_facts_argument_that_is_no_facts_table_exits_two_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, expected: str
) -> None:
    facts = make(tmp_path)
    code, out, err = status(capsys, str(tmp_path), "--app-id", "orders-v1", "--facts", facts)
    assert (code, out) == (2, "")
    assert err.startswith("mssql-cdc status: ")
    assert expected.format(p=tmp_path) in err


def test_facts_without_an_app_id_exits_two(
    stream: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = status(capsys, stream[0], "--facts", stream[1])
    assert (code, out) == (2, "")
    assert "--facts needs --app-id" in err


def test_status_with_facts_never_imports_pyspark(stream: tuple[str, str]) -> None:
    ckpt, facts = stream
    probe = (
        "import sys\n"
        "from mssql_cdc.cli import main\n"
        f"code = main(['status', {ckpt!r}, '--app-id', 'orders-v1', '--facts', {facts!r}])\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j'))\n"
        "print('LOADED', loaded, code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.splitlines()[-1] == "LOADED [] 0"
    assert "batch 1 of orders-v1.g1" in done.stdout


def test_an_app_id_the_facts_table_records_for_another_stream_exits_two_naming_it(
    stream: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ckpt, facts = stream
    code, out, err = status(capsys, ckpt, "--app-id", "customers", "--facts", facts)
    assert (code, out) == (2, "")
    assert "--app-id customers is not the stream of checkpoint" in err
    assert "pass --app-id orders-v1" in err


@pytest.mark.parametrize("uri", ["s3://bucket/facts", "abfss://c@a.dfs.core.windows.net/f"])
def test_a_uri_facts_table_is_refused_in_one_line_without_a_credentials_lookup(
    stream: tuple[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    uri: str,
) -> None:
    import deltalake

    def no_open(*args: object, **kwargs: object) -> None:
        raise AssertionError("deltalake was asked to open a URI table")

    monkeypatch.setattr(deltalake, "DeltaTable", no_open)
    code, out, err = status(capsys, stream[0], "--app-id", "orders-v1", "--facts", uri)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert f"--facts {uri} is a URI or a /dbfs/ path, which status does not read" in err
