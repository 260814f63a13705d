"""Source options: every option's default, a good value, and a bad value's message."""

from __future__ import annotations

import logging
import pickle
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.errors import ConfigError
from mssql_cdc.options.config import KNOWN_OPTIONS, SourceConfig
from mssql_cdc.options.credentials import CREDENTIAL_OPTIONS
from mssql_cdc.options.declared_columns import DeclaredColumn, SnapshotChunk

SECRET = "S3cr3t-Pa55"
CONN = f"Server=db.example,1433;Database=shop;UID=reader;PWD={SECRET}"
BASE = {"captureInstance": "dbo_orders", "connectionString": CONN}


def parse(**extra: object) -> SourceConfig:
    return SourceConfig.from_options({**BASE, **extra})


def test_the_defaults_are_those_of_the_option_table() -> None:
    config = parse()
    assert config.capture_instance == "dbo_orders"
    assert config.backend == "mssql-python"
    assert config.emulator_path is None
    assert config.connect_timeout == 30
    assert config.starting_lsn == "earliest"
    assert config.max_commits_per_batch is None
    assert config.num_partitions is None
    assert config.fail_on_data_loss is True
    assert config.metrics_path is None
    assert config.include_command_id is True
    assert config.arrow_batch_size == 10000
    assert config.columns is None
    assert config.source_time_zone == "auto"
    assert config.schema_change_policy == "classify"
    assert config.snapshot_lsn is None
    assert config.snapshot_chunks is None
    assert config.snapshot_keys is None
    assert config.isolation_level == "readCommitted"
    assert config.lock_timeout_ms is None
    assert config.snapshot_duration_guard == "warn"
    assert config.snapshot_mode == "never"


GOOD: list[tuple[str, str, str, Any]] = [
    ("backend", "PyMsSql", "backend", "pymssql"),
    ("connectTimeout", " 5 ", "connect_timeout", 5),
    ("startingLsn", "LATEST", "starting_lsn", "latest"),
    ("startingLsn", "Earliest", "starting_lsn", "earliest"),
    ("startingLsn", "2a000001f00003", "starting_lsn", "0x0000002A000001F00003"),
    ("maxCommitsPerBatch", "4", "max_commits_per_batch", 4),
    ("numPartitions", "AUTO", "num_partitions", None),
    ("numPartitions", "8", "num_partitions", 8),
    ("failOnDataLoss", "No", "fail_on_data_loss", False),
    ("failOnDataLoss", "Y", "fail_on_data_loss", True),
    ("failOnDataLoss", "0", "fail_on_data_loss", False),
    ("metricsPath", "/Volumes/c/s/v/m", "metrics_path", "/Volumes/c/s/v/m"),
    ("metricsPath", "C:\\metrics", "metrics_path", "C:\\metrics"),
    ("includeCommandId", "false", "include_command_id", False),
    ("arrowBatchSize", "500", "arrow_batch_size", 500),
    ("sourceTimeZone", "utc", "source_time_zone", "UTC"),
    ("sourceTimeZone", "Pacific Standard Time", "source_time_zone", "Pacific Standard Time"),
    ("schemaChangePolicy", "FAIL", "schema_change_policy", "fail"),
    ("snapshotLsn", "0x1", "snapshot_lsn", "0x00000000000000000001"),
    ("snapshotKeys", '["id", "region"]', "snapshot_keys", ("id", "region")),
    ("isolationLevel", "SNAPSHOT", "isolation_level", "snapshot"),
    ("isolationLevel", "readcommitted", "isolation_level", "readCommitted"),
    ("lockTimeoutMs", "0", "lock_timeout_ms", 0),
    ("lockTimeoutMs", "1500", "lock_timeout_ms", 1500),
    ("snapshotDurationGuard", "Refuse", "snapshot_duration_guard", "refuse"),
    ("snapshotDurationGuard", "off", "snapshot_duration_guard", "off"),
    ("snapshotOnSwitch", "TRUE", "snapshot_on_switch", True),
    ("snapshotMode", "Initial", "snapshot_mode", "initial"),
    ("snapshotMode", "WHEN_NEEDED", "snapshot_mode", "when_needed"),
    ("snapshotMode", "never", "snapshot_mode", "never"),
]


@pytest.mark.parametrize(
    ("option", "value", "field", "expected"), GOOD, ids=[f"{g[0]}={g[1]}" for g in GOOD]
)
def test_a_good_value_is_parsed_to_its_typed_form(
    option: str, value: str, field: str, expected: Any
) -> None:
    assert getattr(parse(**{option: value}), field) == expected


BAD: list[tuple[str, str, str]] = [
    ("backend", "odbc", "option backend must be one of mssql-python, pymssql, emulator"),
    (
        "connectTimeout",
        "0",
        "connectTimeout must be a positive whole number at most 86,400 (got '0')",
    ),
    ("connectTimeout", "2.5", "option connectTimeout must be a positive whole number"),
    ("startingLsn", "oldest", "option startingLsn must be earliest, latest or an LSN"),
    ("startingLsn", "0x" + "1" * 21, "option startingLsn must be earliest, latest or an LSN"),
    ("maxCommitsPerBatch", "-1", "omit it for no limit"),
    ("maxCommitsPerBatch", "0", "option maxCommitsPerBatch must be a positive whole number"),
    ("numPartitions", "many", "option numPartitions must be a positive whole number"),
    ("failOnDataLoss", "off", "option failOnDataLoss must be true or false (got 'off')"),
    ("metricsPath", "dbfs:/metrics", "option metricsPath must be a local or FUSE path"),
    ("metricsPath", "wasbs://c@a.blob.core.windows.net/m", "cannot open that URI"),
    ("includeCommandId", "maybe", "option includeCommandId must be true or false"),
    ("arrowBatchSize", "ten", "option arrowBatchSize must be a positive whole number"),
    ("columns", "id", "option columns: entry 0 ('id') is not a `name TYPE` pair"),
    ("columns", "id VARCHAR(10)", "unsupported type 'VARCHAR(10)'"),
    ("columns", "_Operation INT", "named like the metadata column _operation"),
    ("columns", "id INT, ID BIGINT", "column 'ID' is listed twice"),
    ("columns", "d DECIMAL(40,2)", "DECIMAL(p,s) needs 1 <= p <= 38"),
    ("sourceTimeZone", "bad\x01zone", "option sourceTimeZone must be auto, UTC or a time zone"),
    ("schemaChangePolicy", "ignore", "option schemaChangePolicy must be one of classify, fail"),
    ("snapshotLsn", "latest", "option snapshotLsn must be an LSN"),
    ("snapshotChunks", "[[0, 1]]", "option snapshotChunks: entry 0 must be a list [chunk, lo, hi]"),
    ("snapshotChunks", "[[0, null, 5], [0, 5, null]]", "entry 1: chunk 0 appears twice"),
    ("snapshotChunks", "[[0, null, 5], [1, 5, {}]]", "entry 1: hi must be a number"),
    ("snapshotChunks", "[[0, null, [1, 2]], [1, [1, 2], 9]]", "entry 1: a bound has 1 key part"),
    ("snapshotChunks", "[[-1, null, null]]", "entry 0: chunk must be an integer >= 0"),
    ("snapshotChunks", "not json", "option snapshotChunks must be a JSON list"),
    ("snapshotKeys", "id", "option snapshotKeys must be a JSON list of column names"),
    ("snapshotKeys", "[]", "option snapshotKeys must be a non-empty JSON list"),
    ("snapshotKeys", '["id", "ID"]', "column 'ID' is listed twice"),
    ("isolationLevel", "serializable", "option isolationLevel must be one of readCommitted"),
    ("isolationLevel", "readUncommitted", "NOLOCK and READ UNCOMMITTED are never used"),
    ("lockTimeoutMs", "-5", "option lockTimeoutMs must be a whole number >= 0"),
    ("snapshotDurationGuard", "block", "option snapshotDurationGuard must be one of warn"),
    ("snapshotOnSwitch", "sometimes", "snapshotOnSwitch"),
    (
        "snapshotMode",
        "always",
        "option snapshotMode must be one of never, initial, when_needed (got 'always')",
    ),
    # without snapshotMode=when_needed (tests/unit/options/test_gap_deletes_from_option.py)
    ("gapDeletesFrom", "/t/delivered", "only snapshotMode=when_needed re-snapshots"),
]


@pytest.mark.parametrize(("option", "value", "message"), BAD, ids=[f"{b[0]}={b[1]}" for b in BAD])
def test_a_bad_value_raises_a_config_error_naming_the_option(
    option: str, value: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(**{option: value})
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_every_option_of_the_table_is_known_and_tested() -> None:
    tested = {g[0] for g in GOOD} | {b[0] for b in BAD}
    tested |= {"captureInstance", "connectionString", "emulatorPath"}
    tested |= set(CREDENTIAL_OPTIONS)  # tests/unit/options/test_credentials.py
    assert tested == set(KNOWN_OPTIONS)


def test_option_names_match_ignoring_case_and_values_are_trimmed() -> None:
    config = SourceConfig.from_options(
        {"CAPTUREINSTANCE": "  dbo_orders ", "connectionstring": CONN, "FailOnDataLoss": " no "}
    )
    assert config.capture_instance == "dbo_orders"
    assert config.fail_on_data_loss is False


def test_one_option_given_twice_with_different_values_is_refused() -> None:
    with pytest.raises(ConfigError, match="failOnDataLoss and FAILONDATALOSS name the same"):
        parse(failOnDataLoss="true", FAILONDATALOSS="false")


def test_python_booleans_and_integers_read_like_spark_would_write_them() -> None:
    config = parse(failOnDataLoss=False, maxCommitsPerBatch=3)
    assert (config.fail_on_data_loss, config.max_commits_per_batch) == (False, 3)
    with pytest.raises(ConfigError, match="option arrowBatchSize must be given as a string"):
        parse(arrowBatchSize=2.5)


def test_capture_instance_is_required_and_checked() -> None:
    with pytest.raises(ConfigError, match="option captureInstance is required"):
        SourceConfig.from_options({"connectionString": CONN})
    with pytest.raises(ConfigError, match="at most 100"):
        parse(captureInstance="x" * 101)
    with pytest.raises(ConfigError, match="holds a control character"):
        parse(captureInstance="dbo\norders")
    assert parse(captureInstance="a]b").capture_instance == "a]b"


def test_the_connection_string_is_required_except_with_the_emulator(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="option connectionString is required with backend"):
        SourceConfig.from_options({"captureInstance": "dbo_orders"})
    file = tmp_path / "emu.db"
    file.write_bytes(b"")
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_orders", "backend": "emulator", "emulatorPath": str(file)}
    )
    assert (config.connection_string, config.emulator_path) == (None, str(file))


def test_the_emulator_path_must_be_an_existing_file_and_only_with_the_emulator(
    tmp_path: Path,
) -> None:
    emu = {"captureInstance": "dbo_orders", "backend": "emulator"}
    with pytest.raises(ConfigError, match="option emulatorPath is required with backend"):
        SourceConfig.from_options(emu)
    with pytest.raises(ConfigError, match="option emulatorPath: no file at"):
        SourceConfig.from_options({**emu, "emulatorPath": str(tmp_path / "missing.db")})
    with pytest.raises(ConfigError, match="must be a local or FUSE path"):
        SourceConfig.from_options({**emu, "emulatorPath": "dbfs:/emu.db"})
    with pytest.raises(ConfigError, match="emulatorPath is set but backend is 'mssql-python'"):
        parse(emulatorPath=str(tmp_path))


def test_pymssql_takes_only_the_keys_freetds_understands() -> None:
    ok = parse(backend="pymssql", connectionString="server=h,1433;database=d;uid=u;pwd=p;app=x")
    assert ok.connection_string is not None
    assert ok.connection_string.get("SERVER") == "h,1433"
    with pytest.raises(
        ConfigError, match="key 'MultiSubnetFailover' is not supported with backend 'pymssql'"
    ):
        parse(backend="pymssql", connectionString="MultiSubnetFailover=yes;" + CONN)


def test_pymssql_reads_encrypt_as_freetds_encryption() -> None:
    from mssql_cdc.sqlserver.tsql.drivers import pymssql_arguments

    def encryption(value: str) -> object:
        config = parse(backend="pymssql", connectionString=f"Encrypt={value};" + CONN)
        assert config.connection_string is not None
        return pymssql_arguments(config.connection_string, 5).get("encryption")

    assert encryption("yes") == "require"
    assert encryption("Mandatory") == "require"
    assert encryption("no") == "request"
    assert encryption("optional") == "request"
    with pytest.raises(ConfigError, match="Encrypt='strict' cannot be used with pymssql"):
        encryption("strict")


def test_the_connection_string_is_never_shown() -> None:
    config = parse()
    assert SECRET not in repr(config)
    assert "connection_string=<hidden>" in repr(config)
    assert pickle.loads(pickle.dumps(config)) == config
    for bad in (f"Server=h;PWD={{{SECRET}", f"{SECRET}"):
        with pytest.raises(ConfigError) as caught:
            parse(connectionString=bad)
        assert SECRET not in str(caught.value)


def test_a_secret_given_under_another_option_is_not_echoed() -> None:
    with pytest.raises(ConfigError) as caught:
        parse(failOnDataLoss=f"PWD={SECRET}")
    assert SECRET not in str(caught.value)
    assert "option failOnDataLoss must be true or false" in str(caught.value)


def test_braced_values_may_hold_semicolons_and_doubled_braces() -> None:
    config = parse(connectionString="Server=h;PWD={a;b}}c};Database= shop ")
    assert config.connection_string is not None
    assert config.connection_string.get("pwd") == "a;b}c"
    assert config.connection_string.get("database") == "shop"


def test_an_unknown_option_is_warned_once_listing_the_known_names(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.options.config"):
        parse(maxCommitPerBatch="4")
        parse(MAXCOMMITPERBATCH="4")
    warnings = [r.getMessage() for r in caplog.records if "maxCommitPerBatch" in r.getMessage()]
    assert len(warnings) == 1
    assert (
        "unknown option maxCommitPerBatch is ignored (did you mean maxCommitsPerBatch?)"
        in (warnings[0])
    )


def test_an_unknown_option_far_from_every_name_gets_no_suggestion(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.options.config"):
        parse(colour="blue")
    warning = next(r.getMessage() for r in caplog.records if "colour" in r.getMessage())
    assert warning.startswith("unknown option colour is ignored; known options: ")


def test_declared_columns_accept_backquotes_aliases_and_decimals() -> None:
    config = parse(columns="`order id` INTEGER, `a``b` real, amount DECIMAL(12, 2), d decimal")
    assert config.columns == (
        DeclaredColumn("order id", "INT"),
        DeclaredColumn("a`b", "FLOAT"),
        DeclaredColumn("amount", "DECIMAL(12,2)"),
        DeclaredColumn("d", "DECIMAL(10,0)"),
    )


def test_snapshot_chunks_hold_open_ends_scalars_and_composite_keys() -> None:
    config = parse(snapshotChunks="[[0, null, 100], [1, 100, null]]")
    assert config.snapshot_chunks == (SnapshotChunk(0, None, 100), SnapshotChunk(1, 100, None))
    strings = parse(snapshotChunks='[[2, "a", "b"]]')
    assert strings.snapshot_chunks == (SnapshotChunk(2, "a", "b"),)
    composite = parse(snapshotChunks='[[3, [1, null], [2, "x"]]]')
    assert composite.snapshot_chunks == (SnapshotChunk(3, (1, None), (2, "x")),)


def test_auto_partitions_use_spark_parallelism_else_the_cpu_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert parse(numPartitions="3").partitions(16) == 3
    assert parse().partitions(16) == 16
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    assert parse().partitions(None) == 6
    monkeypatch.setattr("os.cpu_count", lambda: None)
    assert parse().partitions(None) == 1


def test_a_none_value_reads_as_an_option_not_given() -> None:
    assert parse(maxCommitsPerBatch=None).max_commits_per_batch is None
    assert parse(failOnDataLoss=None).fail_on_data_loss is True


def test_the_options_reference_lists_every_known_option() -> None:
    doc = (Path(__file__).resolve().parents[3] / "docs" / "source-options.md").read_text()
    missing = [name for name in KNOWN_OPTIONS if f"| `{name}` |" not in doc]
    assert not missing


def test_snapshot_mode_when_needed_with_fail_on_data_loss_false_is_refused_naming_both() -> None:
    with pytest.raises(ConfigError) as caught:
        parse(snapshotMode="when_needed", failOnDataLoss="false")
    assert "snapshotMode=when_needed" in str(caught.value)
    assert "failOnDataLoss=false" in str(caught.value)
    assert parse(snapshotMode="initial", failOnDataLoss="false").snapshot_mode == "initial"
