"""`mssql_cdc.types`: the annotations users write agree with what the library accepts."""

from __future__ import annotations

import re
import typing

import pytest

from mssql_cdc import types
from mssql_cdc.core import lsn
from mssql_cdc.errors import ConfigError
from mssql_cdc.facts import SnapshotOpenDetail
from mssql_cdc.options import KNOWN_OPTIONS, SourceConfig
from mssql_cdc.sqlserver import ChangeRangeReader

REQUIRED = {"captureInstance": "dbo_orders", "connectionString": "Server=db;UID=u;PWD=p"}


def test_source_options_has_exactly_the_known_options_and_all_are_optional() -> None:
    assert set(types.SourceOptions.__optional_keys__) == set(KNOWN_OPTIONS)
    assert types.SourceOptions.__required_keys__ == frozenset()


def accepted_isolation_levels() -> set[str]:
    """The values the isolationLevel option accepts, as its refusal lists them."""
    with pytest.raises(ConfigError) as refused:
        SourceConfig.from_options({**REQUIRED, "isolationLevel": "serializable"})
    listed = re.search(r"must be one of ([\w, ]+) \(got", str(refused.value))
    assert listed is not None, str(refused.value)
    return set(listed.group(1).split(", "))


def test_the_isolation_literal_is_what_the_isolation_option_accepts() -> None:
    assert set(typing.get_args(types.IsolationLevel)) == accepted_isolation_levels()
    for level in typing.get_args(types.IsolationLevel):
        config = SourceConfig.from_options({**REQUIRED, "isolationLevel": level})
        assert config.isolation_level == level


def test_numbers_and_flags_typed_as_python_values_parse_like_their_text() -> None:
    given: types.SourceOptions = {
        "captureInstance": "dbo_orders",
        "connectionString": "Server=db;UID=u;PWD=p",
        "connectTimeout": 5,
        "maxCommitsPerBatch": 3,
        "numPartitions": 4,
        "failOnDataLoss": False,
        "includeCommandId": True,
        "arrowBatchSize": 100,
        "lockTimeoutMs": 250,
        "snapshotOnSwitch": True,
        "isolationLevel": "snapshot",
        "backend": "pymssql",
    }
    as_text = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in given.items()}
    assert SourceConfig.from_options(given) == SourceConfig.from_options(as_text)


def test_the_types_are_the_librarys_own_not_copies() -> None:
    assert types.Lsn is lsn.Lsn
    assert types.ChangeRangeReader is ChangeRangeReader
    assert types.SnapshotOpenDetail is SnapshotOpenDetail
    assert typing.is_typeddict(types.SnapshotOpenDetail)


def test_every_detail_payload_of_the_facts_table_is_exported_as_a_typed_dict() -> None:
    from mssql_cdc.facts import detail_payloads

    defined = {n for n in detail_payloads.__all__ if n.endswith(("Detail", "Extent"))}
    exported = {n for n in types.__all__ if n.endswith(("Detail", "Extent"))}
    assert exported == defined
    assert all(typing.is_typeddict(getattr(types, n)) for n in exported)


def test_the_granularity_literal_is_silvers_own_and_what_apply_changes_accepts() -> None:
    from mssql_cdc.silver import SilverGranularity
    from mssql_cdc.silver.checks import check_arguments

    assert types.SilverGranularity is SilverGranularity
    names = {"bronze": "b", "target": "t", "control_table": "c", "facts_table": None}
    for granularity in typing.get_args(types.SilverGranularity):
        check_arguments(**names, keys=["id"], capture_instance=None, granularity=granularity)
    with pytest.raises(ConfigError, match="granularity='history' is not one of 'key', 'commit'"):
        check_arguments(**names, keys=["id"], capture_instance=None, granularity="history")
