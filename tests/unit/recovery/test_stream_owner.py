"""A checkpoint run under another stream's app_id is refused from its files, before Spark.

The facts tables here are written by delta-rs (`write_deltalake`) in the facts schema; the
checkpoints are written as Spark writes them. `mssql-cdc plan` and `resnapshot` run with a
`local_session` that fails the test if it is ever called.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from mssql_cdc.cli import main
from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import ConfigError
from mssql_cdc.recovery import check_stream_owner
from tests.unit.support.facts_arrow import FACTS_SCHEMA, lsn

SCHEMA = FACTS_SCHEMA


def spark_batch(ckpt: Path, n: int) -> None:
    (ckpt / "offsets").mkdir(parents=True, exist_ok=True)
    (ckpt / "commits").mkdir(parents=True, exist_ok=True)
    (ckpt / "metadata").write_text('{"id":"x"}')
    line3 = json.dumps({"lsn": lsn(n), "commit_ts": "2026-09-28T14:03:12.117"})
    (ckpt / "offsets" / str(n)).write_text(f"v1\n{{}}\n{line3}")
    (ckpt / "commits" / str(n)).write_text("v1\n{}")


def batch_row(app_id: str, generation: int, batch_id: int, end: int) -> dict[str, Any]:
    r: dict[str, Any] = dict.fromkeys(SCHEMA.names)
    r.update(
        app_id=app_id,
        generation=generation,
        batch_id=batch_id,
        end_lsn=lsn(end),
        target="/data/bronze",
        written_at=datetime(2026, 11, 2),
    )
    return r


@pytest.fixture
def stream(tmp_path: Path) -> tuple[str, str]:
    """The checkpoint and facts table of the stream 'orders-v1', two batches committed, beside
    another stream's rows in the same facts table."""
    ckpt = tmp_path / "ckpt"
    spark_batch(ckpt, 3)
    spark_batch(ckpt, 4)
    facts = tmp_path / "facts"
    rows = [batch_row("orders-v1", 0, 3, 3), batch_row("orders-v1", 0, 4, 4)]
    rows.append(batch_row("customers", 0, 4, 9))  # another stream at another offset
    write_deltalake(str(facts), pa.Table.from_pylist(rows, schema=SCHEMA))
    return str(ckpt), str(facts)


def test_another_streams_app_id_on_a_started_checkpoint_is_refused_naming_both(
    stream: tuple[str, str],
) -> None:
    ckpt, facts = stream
    with pytest.raises(ConfigError) as caught:
        check_stream_owner(ckpt, "customers", facts)
    message = str(caught.value)
    assert f"app_id='customers' is not the stream of checkpoint {ckpt}" in message
    assert f"the facts table {facts} record it as the stream 'orders-v1'" in message
    assert "pass app_id='orders-v1' to continue that stream" in message


def test_the_streams_own_app_id_a_new_checkpoint_and_a_silent_facts_table_pass(
    stream: tuple[str, str], tmp_path: Path
) -> None:
    ckpt, facts = stream
    check_stream_owner(ckpt, "orders-v1", facts)
    check_stream_owner(str(tmp_path / "new"), "customers", facts)  # a new stream
    check_stream_owner(ckpt, "customers", None)  # nothing names the checkpoint's stream
    check_stream_owner(ckpt, "customers", "ops.facts")  # a catalog table: not read here


def test_a_later_generation_is_recognized_by_its_sink_id(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    state = {
        "generation": 2,
        "snapshot_lsn": lsn(40),
        "commit_ts": "2026-11-02T08:15:04.250",
        "at": "2026-11-09T06:00:12+00:00",
    }
    ckpt.mkdir()
    (ckpt / "_mssql_cdc_generation.json").write_text(json.dumps(state))
    facts = tmp_path / "facts"
    opened = batch_row("orders-v1.g2", 2, 0, 0)
    opened.update(event="snapshot_open", batch_id=None, end_lsn=None, min_lsn=lsn(40))
    write_deltalake(str(facts), pa.Table.from_pylist([opened], schema=SCHEMA))
    check_stream_owner(str(ckpt), "orders-v1", str(facts))
    with pytest.raises(ConfigError, match="record it as the stream 'orders-v1'"):
        check_stream_owner(str(ckpt), "orders-v2", str(facts))


def test_the_family_cache_names_the_checkpoints_stream(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    spark_batch(ckpt, 0)
    cache = {
        "format": 1,
        "app_id": "orders-v1",
        "table_id": "t",
        "location": "/data/facts",
        "version": 1,
        "commit_id": "c",
        "rows": [],
    }
    (ckpt / "_mssql_cdc_family_cache.json").write_text(json.dumps(cache))
    with pytest.raises(ConfigError, match="the checkpoint's family cache record it"):
        check_stream_owner(str(ckpt), "orders-v2", None)


def test_a_family_cache_naming_the_callers_app_id_is_enough_and_the_facts_are_not_scanned(
    stream: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The facts table grows by a file per batch of every stream of a job: scanning it at
    # each start of each stream costs the job tables x batches file reads per run.
    ckpt, facts = stream
    cache = {"format": 1, "app_id": "orders-v1", "table_id": "t", "location": facts}
    cache |= {"version": 1, "commit_id": "c", "rows": []}
    (Path(ckpt) / "_mssql_cdc_family_cache.json").write_text(json.dumps(cache))
    scanned: list[str] = []
    monkeypatch.setattr(
        "mssql_cdc.recovery.owner.checkpoint_owners",
        lambda table, **_: scanned.append(table) or frozenset(),
    )
    check_stream_owner(ckpt, "orders-v1", facts)
    assert scanned == []
    with pytest.raises(ConfigError, match="the checkpoint's family cache record it"):
        check_stream_owner(ckpt, "customers", facts)  # another app_id still reads both
    assert scanned == [facts]


def cli_args(verb: str, tmp_path: Path, app_id: str, ckpt: str, facts: str) -> list[str]:
    Emulator.create(tmp_path / "e.db").close()
    options = tmp_path / "options.json"
    given = {"backend": "emulator", "emulatorPath": str(tmp_path / "e.db"), "captureInstance": "ci"}
    options.write_text(json.dumps(given))
    return [
        verb, "--options", str(options), "--target", "/data/bronze", "--app-id", app_id,
        "--checkpoint", ckpt, "--facts", facts,
    ]  # fmt: skip


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the verb started Spark before it checked its arguments")

    monkeypatch.setattr("mssql_cdc.spark.local_session", refuse)


@pytest.mark.parametrize("verb", ["plan", "resnapshot"])
@pytest.mark.usefixtures("no_spark")
def test_plan_and_resnapshot_refuse_another_streams_app_id_with_exit_two_before_spark(
    stream: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], verb: str
) -> None:
    ckpt, facts = stream
    assert main(cli_args(verb, tmp_path, "customers", ckpt, facts)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mssql-cdc {verb}: app_id='customers' is not the stream of")
    assert "'orders-v1'" in err


@pytest.mark.usefixtures("no_spark")
def test_resnapshot_refuses_a_missing_checkpoint_with_exit_two_before_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nowhere")
    assert main(cli_args("resnapshot", tmp_path, "orders-v1", missing, str(tmp_path / "f"))) == 2
    err = capsys.readouterr().err
    assert f"checkpoint {missing} does not exist" in err
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.usefixtures("no_spark")
def test_plan_refuses_a_state_file_that_is_a_named_pipe_with_exit_two_before_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    os.mkfifo(ckpt / "_mssql_cdc_generation.json")
    assert main(cli_args("plan", tmp_path, "orders-v1", str(ckpt), str(tmp_path / "f"))) == 2
    assert "is a named pipe (FIFO), not a regular file" in capsys.readouterr().err
