"""Event records: the files earlier versions wrote read back, and the source writes them alike.

The oracles are literal files as the library wrote them before the record became one type
(`json.dumps(record, ensure_ascii=False)` of the source's dicts): a stream upgraded mid-batch
reads the files its previous version left, and the new writer produces the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.core.batch_files import read_batch_files
from mssql_cdc.core.events import EventRecord
from mssql_cdc.core.metrics_files import write_json_atomic
from mssql_cdc.errors import StateFileError
from mssql_cdc.source.loss_guards import data_skipped_event
from mssql_cdc.source.type_rules import schema_change_event, switch_event

START, FROM, MIN, S = (
    "0x0000002A000001100000",
    "0x0000002A000001100001",
    "0x0000002A000001700001",
    "0x0000002A000001F00003",
)
REASON = "CDC cleanup raised min_lsn past the range start during the read"

CERTAIN_SKIP_NAME = f"event-data_skipped-dbo_orders-{FROM}.json"
CERTAIN_SKIP = (
    '{"event": "data_skipped", "capture_instance": "dbo_orders", '
    '"lsn": "0x0000002A000001700001", "commit_ts": "2026-09-25T14:10:00.000", '
    '"detail": {"from": "0x0000002A000001100001", "to": "0x0000002A000001700001", '
    '"certain": true, "capture_instance": "dbo_orders"}, '
    '"lost_from_ts": "2026-09-22T08:00:00.000", "lost_to_ts": "2026-09-25T14:10:00.000", '
    '"batch_start_lsn": "0x0000002A000001100000", "batch_end_lsn": "0x0000002A000001700001"}'
)
POSSIBLE_SKIP = (
    '{"event": "data_skipped", "capture_instance": "dbo orders", '
    '"lsn": "0x0000002A000001700001", "commit_ts": null, '
    '"detail": {"from": "0x0000002A000001100001", "to": "0x0000002A000001700001", '
    '"certain": false, "reason": "CDC cleanup raised min_lsn past the range start during the '
    'read", "capture_instance": "dbo orders"}, "lost_from_ts": null, "lost_to_ts": null, '
    '"batch_start_lsn": "0x0000002A000001100000", "batch_end_lsn": "0x0000002A000001F00003"}'
)
SCHEMA_CHANGE_NAME = f"event-schema_change-dbo%20orders-{S}.json"
SCHEMA_CHANGE = (
    '{"event": "schema_change", "capture_instance": "dbo orders", '
    '"lsn": "0x0000002A000001F00003", "commit_ts": "2026-09-28T14:03:12.117", '
    '"detail": {"capture_instance": "dbo orders", "ddl": "ALTER TABLE dbo.orders ADD café int"}, '
    '"lost_from_ts": null, "lost_to_ts": null, '
    '"batch_start_lsn": "0x0000002A000001100000", "batch_end_lsn": "0x0000002A000001F00003"}'
)
SWITCH_NAME = f"event-capture_instance_switched-dbo_orders_v2-{S}.json"
SWITCH = (
    '{"event": "capture_instance_switched", "capture_instance": "dbo_orders_v2", '
    '"lsn": "0x0000002A000001F00003", "commit_ts": null, '
    '"detail": {"old": "dbo_orders", "new": "dbo_orders_v2", "uncaptured": ["fax", "note"]}, '
    '"lost_from_ts": null, "lost_to_ts": null, '
    '"batch_start_lsn": "0x0000002A000001100000", "batch_end_lsn": "0x0000002A000001F00003"}'
)
RANGE_NAME = f"range-{FROM}-{S}.json"
RANGE_WITH_POSSIBLE_SKIP = (
    '{"kind": "range", "capture_instance": "dbo orders", "from_lsn": "0x0000002A000001100001", '
    '"to_lsn": "0x0000002A000001F00003", "last": true, '
    '"batch_start_lsn": "0x0000002A000001100000", "batch_end_lsn": "0x0000002A000001F00003", '
    '"rows": 3, "bytes": 120, "seconds": 0.25, "to_commit_ts": null, "rtt_ms": null, '
    '"network_wait_ms": null, "retention_watermark_ts": null, "source_max_lsn": null, '
    '"source_max_commit_ts": null, "capture_lag_seconds": null, "warnings": ["w"], '
    f'"events": [{POSSIBLE_SKIP}]}}'
)


def old_files(folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    for name, text in [
        (CERTAIN_SKIP_NAME, CERTAIN_SKIP),
        (SCHEMA_CHANGE_NAME, SCHEMA_CHANGE),
        (SWITCH_NAME, SWITCH),
        (RANGE_NAME, RANGE_WITH_POSSIBLE_SKIP),
    ]:
        (folder / name).write_text(text, encoding="utf-8")


def test_the_event_files_an_earlier_version_wrote_read_back_as_records(tmp_path: Path) -> None:
    old_files(tmp_path / "metrics")
    found = read_batch_files(tmp_path / "metrics")
    assert found.unreadable == ()
    assert [e.event for e in found.events] == [
        "capture_instance_switched",  # the event files in name order, then the range file's
        "data_skipped",
        "schema_change",
        "data_skipped",
    ]
    switch, certain, ddl, possible = found.events
    assert certain == EventRecord(
        event="data_skipped",
        capture_instance="dbo_orders",
        lsn=MIN,
        commit_ts="2026-09-25T14:10:00.000",
        detail={"from": FROM, "to": MIN, "certain": True, "capture_instance": "dbo_orders"},
        lost_from_ts="2026-09-22T08:00:00.000",
        lost_to_ts="2026-09-25T14:10:00.000",
        batch_start_lsn=START,
        batch_end_lsn=MIN,
    )
    assert possible.detail == {
        "from": FROM,
        "to": MIN,
        "certain": False,
        "reason": REASON,
        "capture_instance": "dbo orders",
    }
    assert (possible.commit_ts, possible.lost_from_ts, possible.batch_end_lsn) == (None, None, S)
    assert (ddl.capture_instance, ddl.lsn, ddl.commit_ts) == (
        "dbo orders",
        S,
        "2026-09-28T14:03:12.117",
    )
    assert ddl.detail == {
        "capture_instance": "dbo orders",
        "ddl": "ALTER TABLE dbo.orders ADD café int",
    }
    assert (switch.capture_instance, switch.lsn, switch.lost_to_ts) == ("dbo_orders_v2", S, None)
    assert switch.detail == {
        "old": "dbo_orders",
        "new": "dbo_orders_v2",
        "uncaptured": ["fax", "note"],
    }
    [range_file] = found.ranges
    assert (range_file["rows"], range_file["warnings"]) == (3, ["w"])
    assert sorted(p.name for p in found.paths) == sorted(
        [CERTAIN_SKIP_NAME, SCHEMA_CHANGE_NAME, SWITCH_NAME, RANGE_NAME]
    )


def test_a_record_read_back_writes_the_same_bytes_under_the_same_name(tmp_path: Path) -> None:
    old_files(tmp_path / "old")
    found = read_batch_files(tmp_path / "old")
    for record in found.events[:3]:
        assert write_json_atomic(tmp_path / "new", record.file_name, record.to_json())
    for name in (CERTAIN_SKIP_NAME, SCHEMA_CHANGE_NAME, SWITCH_NAME):
        assert (tmp_path / "new" / name).read_bytes() == (tmp_path / "old" / name).read_bytes()


def test_the_source_writes_each_event_kind_byte_for_byte_as_before(tmp_path: Path) -> None:
    certain = data_skipped_event(
        "dbo_orders",
        FROM,
        MIN,
        min_commit_ts="2026-09-25T14:10:00.000",
        lost_from_ts="2026-09-22T08:00:00.000",
        batch_start_lsn=START,
        batch_end_lsn=MIN,
    )
    ddl = schema_change_event(
        "dbo orders",
        S,
        "2026-09-28T14:03:12.117",
        "ALTER TABLE dbo.orders ADD café int",
        batch_start_lsn=START,
        batch_end_lsn=S,
    )
    switch = switch_event(
        "dbo_orders",
        "dbo_orders_v2",
        S,
        None,
        ("fax", "note"),
        batch_start_lsn=START,
        batch_end_lsn=S,
    )
    for record in (certain, ddl, switch):
        assert write_json_atomic(tmp_path, record.file_name, record.to_json())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [CERTAIN_SKIP_NAME, SCHEMA_CHANGE_NAME, SWITCH_NAME]
    )
    for name, text in [
        (CERTAIN_SKIP_NAME, CERTAIN_SKIP),
        (SCHEMA_CHANGE_NAME, SCHEMA_CHANGE),
        (SWITCH_NAME, SWITCH),
    ]:
        assert (tmp_path / name).read_text(encoding="utf-8") == text
    possible = data_skipped_event(
        "dbo orders",
        FROM,
        MIN,
        min_commit_ts=None,
        lost_from_ts=None,
        batch_start_lsn=START,
        batch_end_lsn=S,
        reason=REASON,
    )
    assert json.dumps(possible.to_json(), ensure_ascii=False) == POSSIBLE_SKIP


def broken(change: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(CERTAIN_SKIP)
    for key, value in change.items():
        if value is KeyError:
            del record[key]
        else:
            record[key] = value
    return record


@pytest.mark.parametrize(
    ("payload", "fault"),
    [
        ([1, 2], "holds a JSON list, not an object"),
        (broken({"event": "vacuum"}), "its event 'vacuum' is not one of"),
        (broken({"lsn": KeyError}), "its lsn is not a string"),
        (broken({"capture_instance": 7}), "its capture_instance is not a string"),
        (broken({"batch_end_lsn": KeyError}), "its batch_end_lsn is not a string"),
        (broken({"commit_ts": KeyError}), "its commit_ts is neither a string nor null"),
        (broken({"lost_to_ts": 1.5}), "its lost_to_ts is neither a string nor null"),
        (broken({"detail": "0x01..0x02"}), "its detail is not an object"),
        (broken({"detail": {"to": MIN}}), "its detail's from is not a string"),
    ],
)
def test_a_malformed_record_is_refused_naming_its_file_and_key(payload: object, fault: str) -> None:
    with pytest.raises(StateFileError) as refused:
        EventRecord.from_json(payload, where="event file /m/event-x.json")
    assert str(refused.value).startswith(
        "event file /m/event-x.json is not a source event record: "
    )
    assert fault in str(refused.value)


def test_the_batch_reader_reports_each_file_and_record_it_leaves_out(tmp_path: Path) -> None:
    old_files(tmp_path)
    (tmp_path / "event-data_skipped-x-0x1.json").write_text(json.dumps(broken({"lsn": 1})))
    (tmp_path / "range-torn.json").write_text('{"rows": ')
    bad_events = {"rows": 1, "events": [json.loads(SWITCH), {"event": "vacuum"}]}
    (tmp_path / "range-z.json").write_text(json.dumps(bad_events))
    found = read_batch_files(tmp_path)
    assert len(found.paths) == 7  # every file read, left out or not, so the sink removes it
    assert [e.event for e in found.events] == [
        "capture_instance_switched",
        "data_skipped",
        "schema_change",
        "data_skipped",
        "capture_instance_switched",
    ]
    assert [r.get("rows") for r in found.ranges] == [3, 1]
    first, second, third = found.unreadable
    assert first.startswith(f"event file {tmp_path / 'event-data_skipped-x-0x1.json'} is not")
    assert f"metrics file {tmp_path / 'range-torn.json'} is not valid JSON" in second
    assert third.startswith(f"{tmp_path / 'range-z.json'} events[1] is not a source event record")
