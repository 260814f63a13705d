"""Numeric options have upper bounds: the largest is accepted, one more is refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.emulator import EmulatorReader
from mssql_cdc.errors import ConfigError, MssqlCdcError
from mssql_cdc.options.config import SourceConfig
from tests.unit.support.emulator_oracle import at, orders

BASE = {"captureInstance": "dbo_orders", "connectionString": "Server=db;UID=u;PWD=x"}

# The oracle is the bounds' sources, not the constants of the code under test.
BOUNDS = [
    ("connectTimeout", "connect_timeout", 1, 86_400),
    ("maxCommitsPerBatch", "max_commits_per_batch", 1, 2**31 - 1),
    ("numPartitions", "num_partitions", 1, 32_767),
    ("arrowBatchSize", "arrow_batch_size", 1, 1_000_000),
    ("lockTimeoutMs", "lock_timeout_ms", 0, 2**31 - 1),  # SQL Server's SET LOCK_TIMEOUT int
]


def parse(option: str, value: str) -> SourceConfig:
    return SourceConfig.from_options({**BASE, option: value})


@pytest.mark.parametrize(("option", "field", "low", "high"), BOUNDS, ids=[b[0] for b in BOUNDS])
def test_each_numeric_option_takes_its_whole_range(
    option: str, field: str, low: int, high: int
) -> None:
    assert getattr(parse(option, str(low)), field) == low
    assert getattr(parse(option, str(high)), field) == high
    assert getattr(parse(option, f"000{high}"), field) == high  # leading zeros are digits too


@pytest.mark.parametrize(("option", "field", "low", "high"), BOUNDS, ids=[b[0] for b in BOUNDS])
@pytest.mark.parametrize("past", [1, 10**30], ids=["one-more", "10e30"])
def test_a_value_past_the_bound_names_the_option_the_value_and_the_range(
    option: str, field: str, low: int, high: int, past: int
) -> None:
    value = str(high + past)
    with pytest.raises(ConfigError) as caught:
        parse(option, value)
    message = str(caught.value)
    assert message.startswith(f"option {option} must be")
    assert f"at most {high:,}" in message
    assert repr(value) in message


def test_a_number_of_thousands_of_digits_is_a_config_error_not_a_conversion_error() -> None:
    with pytest.raises(ConfigError, match="option maxCommitsPerBatch must be a positive whole"):
        parse("maxCommitsPerBatch", "9" * 5000)


def test_the_emulator_reads_batches_of_the_largest_arrow_batch_size_and_no_larger(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    orders(path).commit([("insert", "dbo.orders", {"order_id": 1})], at=at(0))
    largest = parse("arrowBatchSize", "1000000").arrow_batch_size
    reader = EmulatorReader(path)
    lo, hi = reader.min_lsn("dbo_orders"), reader.max_lsn()
    assert reader.read_changes("dbo_orders", lo, hi, batch_rows=largest).read_all().num_rows == 1
    with pytest.raises(MssqlCdcError, match="batch_rows=1000001 is not valid"):
        reader.read_changes("dbo_orders", lo, hi, batch_rows=largest + 1).read_all()
