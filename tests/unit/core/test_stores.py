"""A metrics folder on an object store (core/stores.py) against moto's S3 server: files written
in one PUT, read back, listed and removed by the sink's steps, and the settings that reach it,
never shown. The objects are checked with boto3, not with the pyarrow the library uses."""

from __future__ import annotations

import json
import logging

import pyarrow as pa
import pytest

from mssql_cdc.core import (
    StoreSettings,
    deltalake_options,
    filesystem_spec,
    is_store_uri,
    read_batch_files,
    remember_settings,
    settings_from_conf,
    write_json_atomic,
)
from mssql_cdc.options import SourceConfig, StoreFolder
from mssql_cdc.sink.metrics_dir import clear_dead_attempts, remove_files, scan
from mssql_cdc.tables import newest_version, table_ref
from tests.support.s3_server import SECRET_KEY, S3Server


def _settings(server: S3Server) -> StoreSettings:
    return StoreSettings.of(server.hadoop)


def test_a_metrics_file_written_to_an_s3a_folder_is_one_object_under_its_name(
    s3: S3Server,
) -> None:
    folder = s3.uri("metrics/orders")
    store = StoreFolder(folder, _settings(s3))
    assert write_json_atomic(folder, "range-a-b.json", {"rows": 3}, store)
    # One PUT, no temporary object left beside it.
    assert s3.keys() == ["metrics/orders/range-a-b.json"]
    assert json.loads(s3.get("metrics/orders/range-a-b.json")) == {"rows": 3}


def test_the_sink_reads_clears_and_removes_an_s3a_metrics_folder(s3: S3Server) -> None:
    folder = s3.uri("m/orders")
    store = StoreFolder(folder, _settings(s3))
    record = {"kind": "range", "rows": 2, "events": []}
    s3.put("m/orders/range-1-2.json", json.dumps(record).encode())
    s3.put("m/orders/notes.txt", b"another program's file")
    s3.put("m/orders/_backfill/chunk-0.json", b"{}")  # a subfolder is never read
    found = scan(folder, store)
    assert found.ranges == (record,)
    assert found.paths == (s3.uri("m/orders/range-1-2.json"),)
    remove_files(found.paths, store)
    assert s3.keys("m/orders/") == ["m/orders/_backfill/chunk-0.json", "m/orders/notes.txt"]
    # a dead attempt's range file goes before the read; event files and foreign files stay
    s3.put("m/orders/range-3-4.json", b"{}")
    s3.put("m/orders/event-data_skipped-dbo_o-00.json", b"{}")
    assert clear_dead_attempts(folder, store) == 1
    assert s3.keys("m/orders/") == [
        "m/orders/_backfill/chunk-0.json",
        "m/orders/event-data_skipped-dbo_o-00.json",
        "m/orders/notes.txt",
    ]


def test_a_missing_s3a_folder_reads_as_empty(s3: S3Server) -> None:
    missing = s3.uri("nothing/here")
    assert read_batch_files(missing, StoreFolder(missing, _settings(s3))).paths == ()


def test_a_write_the_store_refuses_is_a_warning_that_shows_no_key(
    s3: S3Server, caplog: pytest.LogCaptureFixture
) -> None:
    # nothing listens on port 9: the PUT fails after the store's retries
    wrong = StoreSettings.of(
        {k: v for k, v in s3.hadoop.items() if not k.endswith(".endpoint")}
        | {f"fs.s3a.bucket.{s3.bucket}.endpoint": "http://127.0.0.1:9"}
    )
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.metrics"):
        store = StoreFolder(s3.uri("m"), wrong)
        assert not write_json_atomic(s3.uri("m"), "range-a-b.json", {"rows": 1}, store)
    assert "could not be written" in caplog.text
    assert SECRET_KEY not in caplog.text


def test_per_bucket_settings_win_over_plain_ones_and_start_up_spellings_count() -> None:
    conf = {
        "fs.s3a.endpoint": "http://plain:1",
        "fs.s3a.bucket.b1.endpoint": "http://bucket:2",
        "spark.hadoop.fs.s3a.access.key": "started-with",
    }
    found = settings_from_conf(conf.get, "s3a://b1/metrics")
    assert found.get("endpoint", "b1") == "http://bucket:2"
    assert found.get("access.key", "b1") == "started-with"
    assert settings_from_conf(conf.get, "gs://b1/metrics") == StoreSettings()
    assert settings_from_conf(conf.get, "/local/metrics") == StoreSettings()


def test_deltalake_gets_the_s3a_settings_in_its_own_names() -> None:
    # delta-rs's AWS storage options: https://delta-io.github.io/delta-rs/integrations/object-storage/s3/
    settings = StoreSettings.of(
        {
            "fs.s3a.bucket.b1.endpoint": "127.0.0.1:9000",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.path.style.access": "true",
            "fs.s3a.access.key": "AK",
            "fs.s3a.secret.key": "SK",
        }
    )
    assert deltalake_options("s3a://b1/t", settings) == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "AK",
        "AWS_SECRET_ACCESS_KEY": "SK",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
    }
    assert deltalake_options("gs://b1/t", settings) == {}
    # S3A's default is a bucket's host name; path-style access is only what is asked for
    hosted = StoreSettings.of({"fs.s3a.endpoint": "https://s3.eu-west-1.amazonaws.com"})
    assert deltalake_options("s3a://b1/t", hosted) == {
        "AWS_ENDPOINT_URL": "https://s3.eu-west-1.amazonaws.com",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "true",
    }


def test_the_store_settings_travel_as_options_and_no_repr_shows_a_value(s3: S3Server) -> None:
    options = {"captureInstance": "dbo_o", "backend": "emulator", "emulatorPath": __file__}
    config = SourceConfig.from_options({**options, **s3.hadoop, "metricsPath": s3.uri("m")})
    assert config.metrics_path == s3.uri("m")
    assert SourceConfig.from_options(config.to_options()) == config
    assert config.to_options()[f"fs.s3a.bucket.{s3.bucket}.secret.key"] == SECRET_KEY
    assert SECRET_KEY not in repr(config)
    assert f"fs.s3a.bucket.{s3.bucket}.secret.key" in repr(config.store)


def test_hadoop_schemes_and_file_uris_are_store_uris_and_others_are_not() -> None:
    for uri in ("s3a://b/m", "S3://b/m", "gs://b/m", "abfss://c@a.dfs.core.windows.net/m"):
        assert is_store_uri(uri)
    assert is_store_uri("file:/tmp/m")
    for text in ("/tmp/m", "dbfs:/m", "wasbs://c@a.blob.core.windows.net/m", "C:/m"):
        assert not is_store_uri(text)


def test_deltalake_reads_an_s3a_table_with_the_settings_a_session_gave(s3: S3Server) -> None:
    from deltalake import write_deltalake

    options = deltalake_options(s3.uri("t", "s3"), _settings(s3))
    # delta-rs needs a locking provider or this flag to commit on S3; the test writes alone.
    write = {**options, "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    data = pa.table({"id": [1, 2, 3]})
    write_deltalake(s3.uri("t", "s3"), data, storage_options=write)
    write_deltalake(s3.uri("t", "s3"), data, mode="append", storage_options=write)
    remember_settings(s3.uri("t"), _settings(s3))
    assert newest_version(table_ref(s3.uri("t"))).version == 1


def test_an_s3a_uri_maps_to_pyarrows_s3_file_system_as_s3a_would_address_it() -> None:
    # S3A's settings: https://hadoop.apache.org/docs/stable/hadoop-aws/tools/hadoop-aws/index.html
    path_style = StoreSettings.of(
        {
            "fs.s3a.bucket.b1.endpoint": "http://127.0.0.1:9000",
            "fs.s3a.path.style.access": "true",
            "fs.s3a.secret.key": "SK",
        }
    )
    spec = filesystem_spec("s3a://b1/metrics/orders/", path_style)
    assert (spec.kind, spec.path) == ("s3", "b1/metrics/orders")
    arguments = dict(spec.arguments)
    assert arguments["endpoint_override"] == "127.0.0.1:9000"
    assert arguments["scheme"] == "http"
    assert arguments["force_virtual_addressing"] is False
    assert "SK" not in repr(spec)
    hosted = filesystem_spec("s3a://b1/m", StoreSettings.of({"fs.s3a.endpoint": "s3.example"}))
    assert dict(hosted.arguments)["force_virtual_addressing"] is True
    assert filesystem_spec("gs://b1/m", path_style).kind == "gcs"
    assert filesystem_spec("file:/tmp/m", path_style).path == "/tmp/m"
