"""A fan-out job's description: every defect refused before Spark starts, naming its entry."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc import StreamEntry
from mssql_cdc.errors import ConfigError
from mssql_cdc.pipeline.fan_out_plan import JobSettings, check_limit, plan_streams


@pytest.fixture
def settings(tmp_path: Path) -> JobSettings:
    db = tmp_path / "e.db"
    db.write_bytes(b"")  # the config only checks that the file exists
    return JobSettings(
        options={"backend": "emulator", "emulatorPath": str(db)},
        facts_table=str(tmp_path / "facts"),
        root=str(tmp_path / "lake"),
        on_data_loss="resnapshot",
    )


def with_(settings: JobSettings, **kw: Any) -> JobSettings:
    values = {f: getattr(settings, f) for f in settings.__dataclass_fields__}
    values.update(kw)
    return JobSettings(**values)


def test_defaults_come_from_the_root_and_the_instance_name(
    settings: JobSettings, tmp_path: Path
) -> None:
    planned = plan_streams([{"capture_instance": "dbo_orders"}], settings)
    [one] = planned
    lake = tmp_path / "lake"
    assert one.args.target == f"{lake}/bronze/dbo_orders"
    assert one.args.checkpoint == f"{lake}/checkpoints/dbo_orders"
    assert one.args.app_id == "dbo_orders"
    assert one.args.facts_table == settings.facts_table
    assert one.config.capture_instance == "dbo_orders"
    assert one.args.on_data_loss == "resnapshot"


def test_an_entry_overrides_the_jobs_settings_and_options(
    settings: JobSettings, tmp_path: Path
) -> None:
    entry = StreamEntry(
        capture_instance="dbo_items",
        target=str(tmp_path / "elsewhere"),
        app_id="items-v2",
        options={"maxCommitsPerBatch": "5"},
        on_data_loss="fail",
        bootstrap=True,
    )
    [planned] = plan_streams([entry], settings)
    assert planned.args.target == str(tmp_path / "elsewhere")
    assert planned.args.app_id == "items-v2"
    assert planned.args.checkpoint == f"{tmp_path}/lake/checkpoints/dbo_items"
    assert (planned.args.on_data_loss, planned.args.bootstrap) == ("fail", True)
    assert planned.config.max_commits_per_batch == 5


def test_gap_deletes_comes_from_the_job_unless_an_entry_gives_its_own(
    settings: JobSettings,
) -> None:
    streams = [
        {"capture_instance": "a"},
        {"capture_instance": "b", "gap_deletes": False},
        StreamEntry(capture_instance="c", gap_deletes=True),
    ]

    off = plan_streams(streams, settings)
    on = plan_streams(streams, with_(settings, gap_deletes=True))

    assert [p.args.gap_deletes for p in off] == [False, False, True]
    assert [p.args.gap_deletes for p in on] == [True, False, True]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"capture_instance": "a", "gap_deletes": "yes"}, "streams[0] (a): gap_deletes='yes'"),
        (
            {"capture_instance": "a", "gap_deletes": True, "on_data_loss": "fail"},
            "streams[0] (a): gap_deletes",
        ),
    ],
    ids=["not-a-bool", "without-resnapshot"],
)
def test_a_bad_gap_deletes_names_its_entry(
    settings: JobSettings, entry: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        plan_streams([entry], settings)


@pytest.mark.parametrize(
    ("streams", "message"),
    [
        ([], "pass a non-empty list of streams"),
        ("dbo_orders", "pass a non-empty list of streams"),
        ([42], "streams[0]=42: pass a mapping"),
        ([{"captureinstance": "x"}],
         "unknown field 'captureinstance' (did you mean capture_instance?)"),
        ([{"capture_instance": ""}], "streams[0]: capture_instance=''"),
        ([{"capture_instance": "a"}, {"capture_instance": "b", "on_data_loss": "skip"}],
         "streams[1] (b): on_data_loss='skip'"),
        ([{"capture_instance": "a", "options": {"captureInstance": "b"}}],
         "streams[0] (a): options gives captureInstance"),
        ([{"capture_instance": "a", "options": {"maxCommitsPerBatch": "x"}}],
         "streams[0] (a): option maxCommitsPerBatch"),
        ([{"capture_instance": "a", "app_id": "a#1"}], "streams[0] (a): app_id='a#1'"),
    ],
    ids=[
        "no stream", "a string for the list", "an entry that is no mapping", "a mistyped field",
        "an empty capture instance", "a bad mode in the second entry", "an instance in options",
        "a bad option of one entry", "a bad app_id",
    ],
)  # fmt: skip
def test_a_bad_entry_is_refused_naming_it_and_its_field(
    settings: JobSettings, streams: list[Any], message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        plan_streams(streams, settings)
    assert message in str(refused.value)


@pytest.mark.parametrize(
    "name",
    ["..", ".hidden", "dbo/orders", "dbo\\orders", "dbo orders", "dbo_ordérs", "a\x00b"],
    ids=["dot-dot", "a leading dot", "a slash", "a backslash", "a space", "an accent", "a NUL"],
)
def test_no_folder_or_app_id_is_derived_from_an_unsafe_name(
    settings: JobSettings, name: str
) -> None:
    with pytest.raises(ConfigError, match="cannot derive target") as refused:
        plan_streams([{"capture_instance": name}], settings)
    assert "give this stream its target, app_id and checkpoint" in str(refused.value)


def test_an_unsafe_name_streams_when_its_entry_names_everything(
    settings: JobSettings, tmp_path: Path
) -> None:
    entry = {
        "capture_instance": "dbo orders",
        "target": str(tmp_path / "t"),
        "app_id": "orders",
        "checkpoint": str(tmp_path / "c"),
    }
    [planned] = plan_streams([entry], settings)
    assert planned.config.capture_instance == "dbo orders"


def test_without_a_root_each_entry_must_name_its_folders(settings: JobSettings) -> None:
    with pytest.raises(ConfigError, match=r"streams\[0\] \(a\): target is missing"):
        plan_streams([{"capture_instance": "a"}], with_(settings, root=None))


@pytest.mark.parametrize(
    ("second", "message"),
    [
        ({"capture_instance": "DBO_Orders"}, "app_id 'DBO_Orders' is a case-variant app_id"),
        ({"capture_instance": "b", "app_id": "dbo_orders"}, "is the same app_id"),
        ({"capture_instance": "b", "checkpoint": "CKPT"}, "each stream needs its own checkpoint"),
        ({"capture_instance": "b", "target": "TGT"}, "each stream needs its own target"),
    ],
    ids=["a case collision", "a repeated app_id", "a shared checkpoint", "a shared target"],
)
def test_two_streams_share_nothing_but_the_facts_table(
    settings: JobSettings, tmp_path: Path, second: dict[str, str], message: str
) -> None:
    first = {"capture_instance": "dbo_orders"}
    for key in ("checkpoint", "target"):
        if second.get(key) in ("CKPT", "TGT"):
            first[key] = str(tmp_path / second[key].lower())
            second = {**second, key: str(tmp_path / second[key].lower())}
    with pytest.raises(ConfigError) as refused:
        plan_streams([first, second], settings)
    assert message in str(refused.value)
    assert "streams[1]" in str(refused.value)
    assert "streams[0]" in str(refused.value)


def test_the_shared_options_may_not_name_a_capture_instance(settings: JobSettings) -> None:
    shared = {**settings.options, "captureInstance": "x"}
    with pytest.raises(ConfigError, match="options gives captureInstance"):
        plan_streams([{"capture_instance": "a"}], with_(settings, options=shared))


@pytest.mark.parametrize("value", [0, 65, True, 2.0, "2"])
def test_the_limits_take_a_whole_number_from_1_to_64(value: object) -> None:
    with pytest.raises(ConfigError, match=f"max_snapshots={value!r}"):
        check_limit("max_snapshots", value, "full snapshots may be read at once")
    assert check_limit("max_snapshots", 64, "x") == 64


def test_a_five_thousand_character_capture_instance_is_quoted_cut_short(
    settings: JobSettings,
) -> None:
    with pytest.raises(ConfigError) as caught:
        plan_streams([{"capture_instance": "a b" * 2000}], settings)
    message = str(caught.value)
    assert "(6,000 characters)" in message
    assert len(message) < 600, message
