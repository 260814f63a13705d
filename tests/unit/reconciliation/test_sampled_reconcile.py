"""A sampled reconcile (decision 1376): its bound checked against plain binomial arithmetic,
its arguments refused before anything is read, the source side keeping the sampled keys only,
and the report's rows.

The bound's oracle is the binomial distribution written out with exact integers
(`math.comb`) and the rule of three (3/n, the approximate 95% bound when nothing was found).
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from fractions import Fraction
from pathlib import Path

import pytest

from mssql_cdc import ConfigError, reconcile
from mssql_cdc.core.row_digest import TileDigest, row_digest
from mssql_cdc.emulator import Emulator
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.reconciliation import ReconcileResult, SampleVerdict
from mssql_cdc.reconciliation.report import report_rows
from mssql_cdc.reconciliation.sampling import fraction_of, share_below, threshold
from mssql_cdc.reconciliation.source_side import SourceAsOf, SourceTable
from mssql_cdc.sqlserver.backend_choice import open_backend
from mssql_cdc.sqlserver.metadata import ReadColumn

OPTIONS = {"captureInstance": "dbo_t", "backend": "emulator", "emulatorPath": "/nowhere/e.db"}


def _binomial_at_most(d: int, n: int, p: Fraction) -> Fraction:
    """P(X <= d), X ~ Binomial(n, p), in exact rationals."""
    return sum((math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(d + 1)), Fraction(0))


@pytest.mark.parametrize("n", [10, 100, 3000, 1_000_000])
def test_no_difference_in_n_keys_bounds_the_share_near_the_rule_of_three(n: int) -> None:
    bound = share_below(n, 0)
    # (1 - p)**n = 0.05 at the bound: nothing found in n keys has a 5% chance there
    assert (1 - bound) ** n == pytest.approx(0.05, rel=1e-9)
    if n >= 100:
        assert bound == pytest.approx(3 / n, rel=0.02)  # the rule of three


@pytest.mark.parametrize(("n", "d"), [(50, 1), (50, 2), (200, 7), (1000, 30)])
def test_d_differences_in_n_keys_bound_the_share_where_d_or_fewer_has_a_5_percent_chance(
    n: int, d: int
) -> None:
    bound = share_below(n, d)
    assert bound > d / n
    exact = _binomial_at_most(d, n, Fraction(bound))
    assert float(exact) == pytest.approx(0.05, abs=1e-6)
    # a share a little lower still leaves d or fewer more likely than 5%: the bound is the least
    assert _binomial_at_most(d, n, Fraction(bound * 0.99)) > Fraction(5, 100)


def test_nothing_sampled_or_every_key_differing_bounds_nothing() -> None:
    assert share_below(0, 0) == 1.0
    assert share_below(5, 5) == 1.0


def test_a_fraction_is_a_bound_on_the_unsigned_key_digest_and_a_row_count_a_share() -> None:
    assert threshold(1.0) is None
    assert threshold(0.25) == 2**62
    assert threshold(0.5) == 2**63
    assert fraction_of(0.1, 500) == 0.1
    assert fraction_of(100, 1000) == 0.1
    assert fraction_of(5000, 1000) == 1.0
    assert fraction_of(100, None) == 1.0


def test_the_statement_says_the_bound_and_its_confidence() -> None:
    verdict = SampleVerdict(0.1, 3000, 0, 0.95, share_below(3000, 0))
    assert verdict.statement == (
        "0 of 3000 sampled keys differ: below 0.100% of the table's keys differ, at 95% confidence"
    )
    partial = SampleVerdict(0.1, 3000, 20, 0.95, None)
    assert "no bound" in partial.statement


@pytest.mark.parametrize(
    ("sampled", "message"),
    [
        (0, r"sampled=0 is no row count"),
        (-3, r"sampled=-3 is no row count"),
        (-0.5, r"sampled=-0.5 is no fraction"),
        (1.5, r"sampled=1.5 is no fraction"),
        (float("nan"), r"sampled=nan is no fraction"),
        ("0.1", r"sampled must be a number \(got '0.1'\)"),
        (True, r"sampled must be a number \(got True\)"),
    ],
    ids=["zero", "negative count", "negative", "above one", "nan", "text", "bool"],
)
def test_a_bad_sample_is_refused_before_anything_is_read(sampled: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        reconcile(object(), OPTIONS, "/lake/silver", control_table="/c", sampled=sampled)  # type: ignore[arg-type]


def test_a_sampled_repair_is_refused() -> None:
    with pytest.raises(ConfigError, match="repair=True compares every row"):
        reconcile(
            object(),  # type: ignore[arg-type]
            OPTIONS,
            "/lake/bronze",
            against="bronze",
            repair=True,
            app_id="a",
            checkpoint="/ck",
            facts_table="/f",
            sampled=0.5,
        )


@pytest.mark.parametrize(
    ("report", "message"),
    [
        ("/lake/../etc/report", r"climbs with '\.\.'"),
        ("ops..report", r"report_table"),
        ("ops.report;drop", r"report_table"),
        ("", r"report_table"),
        ("/lake/silver/", r"report_table is the same table as target"),
        ("/c", r"report_table is the same table as control_table"),
    ],
    ids=["dot-dot path", "empty part", "bad name", "empty", "the target", "the control table"],
)
def test_a_bad_report_table_is_refused_before_anything_is_read(report: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        reconcile(object(), OPTIONS, "/lake/silver", control_table="/c", report_table=report)  # type: ignore[arg-type]


def test_a_sampled_source_side_holds_only_the_keys_whose_key_digest_is_below_the_bound(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    emu = Emulator.create(path)
    emu.create_table("dbo.orders", {"id": "int", "status": "varchar(12)"}, primary_key="id")
    emu.enable_cdc("dbo.orders")
    emu.commit([("insert", "dbo.orders", {"id": k, "status": "new"}) for k in range(1, 201)])
    at = emu.max_lsn()
    assert at is not None
    then = emu.rows("dbo.orders")
    emu.commit([("update", "dbo.orders", {"id": k, "status": "later"}) for k in range(1, 60)])
    backend = open_backend(
        SourceConfig.from_options(
            {"captureInstance": "dbo_orders", "backend": "emulator", "emulatorPath": str(path)}
        )
    )
    columns = (ReadColumn("id", "INT", "int"), ReadColumn("status", "STRING", "varchar"))
    table = SourceTable("dbo_orders", "dbo", "orders", columns, ("id",))
    below = 2**62
    side = SourceAsOf(
        table, at, tiles=backend.tiles, chunks=backend.chunks, changes=backend.changes,
        sample_below=below, fraction=0.25,
    )  # fmt: skip
    sampled = {
        (r["id"],): row_digest([r["id"], r["status"]])
        for r in then
        if row_digest([r["id"]]) < below
    }
    assert 20 < len(sampled) < 80  # about a quarter of 200
    assert side.digests([(None, 100), (100, None)]) == [
        TileDigest.of(d for k, d in sampled.items() if k[0] < 100),
        TileDigest.of(d for k, d in sampled.items() if k[0] >= 100),
    ]
    assert side.keyed((None, None)) == sampled
    backend.close()


def _result(**kw: object) -> ReconcileResult:
    base: dict[str, object] = dict(
        equal=False, lsn="0x1", against="silver", target="/lake/silver", tiles=4,
        differing_tiles=1, source_rows=10, target_rows=10, missing=(), extra=(), different=(),
        missing_count=0, extra_count=0, different_count=0, complete=True,
        columns=("a", "b", "s"), skipped_columns=(), seconds=0.1,
    )  # fmt: skip
    base.update(kw)
    return ReconcileResult(**base)  # type: ignore[arg-type]


def test_a_report_names_each_key_by_its_columns_and_an_equal_run_writes_one_none_row() -> None:
    at = datetime(2026, 12, 5, 8, 0)
    rows = report_rows(
        _result(missing=([1, "x"],), extra=([2, "y"],), different=([3, "z"],)),
        ["a", "b"], "run1", at,
    )  # fmt: skip
    assert [(r[7], json.loads(r[6])) for r in rows] == [
        ("missing", {"a": 1, "b": "x"}),
        ("extra", {"a": 2, "b": "y"}),
        ("different", {"a": 3, "b": "z"}),
    ]
    assert {(r[0], r[1], r[2], r[3], r[4]) for r in rows} == {
        ("run1", at, "/lake/silver", "silver", "0x1")
    }
    (equal,) = report_rows(_result(equal=True, differing_tiles=0), ["a"], "run2", at)
    assert (equal[6], equal[7], equal[9], equal[10]) == (None, "none", True, 1.0)
