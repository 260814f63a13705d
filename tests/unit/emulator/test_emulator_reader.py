"""EmulatorReader: the metadata, planning and streaming reads of spec 40, section 6."""

from __future__ import annotations

import itertools
import operator
import pickle
import random
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pytest

from mssql_cdc.emulator import Emulator, EmulatorReader, InvalidRangeError, UnknownObjectError
from tests.unit.support.emulator_oracle import at, orders, raw_change_rows

ZERO = "0x" + "0" * 20


def filled(path: Path, commits: int = 20) -> Emulator:
    emu = orders(path)
    for i in range(commits):
        changes: list[tuple[object, ...]] = [("insert", "dbo.orders", {"order_id": 2 * i})]
        if i % 3 == 0:
            changes.append(("insert", "dbo.orders", {"order_id": 2 * i + 1}))
        if i > 0 and i % 4 == 0:
            changes.append(("update", "dbo.orders", {"order_id": 0, "status": f"v{i}"}))
        emu.commit(changes, at=at(i))
    return emu


def test_read_changes_returns_every_row_in_the_documented_order_and_schema(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    filled(path)
    reader = EmulatorReader(path)
    lo, hi = reader.min_lsn("dbo_orders"), reader.max_lsn()
    table = reader.read_changes("dbo_orders", lo, hi).read_all()
    assert table.schema.names == [
        "_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts",
        "order_id", "status", "amount",
    ]  # fmt: skip
    assert table.schema.field("amount").type == pa.decimal128(18, 2)
    assert table.schema.field("_commit_ts").type == pa.timestamp("us")
    oracle = raw_change_rows(path, "dbo_orders")
    got = table.to_pylist()
    assert [(r["_start_lsn"], r["_command_id"], r["_seqval"], r["_operation"]) for r in got] == [
        (
            "0x" + r["__$start_lsn"].hex().upper(),
            r["__$command_id"],
            "0x" + r["__$seqval"].hex().upper(),
            r["__$operation"],
        )
        for r in oracle
    ]
    key = [(r["_start_lsn"], r["_command_id"], r["_seqval"], r["_operation"]) for r in got]
    assert key == sorted(key)


def test_the_commit_time_column_is_the_mapping_time_of_each_row(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = filled(path, 5)
    reader = emu.reader()
    rows = reader.read_changes("dbo_orders", reader.min_lsn("dbo_orders"), reader.max_lsn())
    times = {e["start_lsn"]: e["tran_end_time"] for e in emu.lsn_time_mapping()}
    for r in rows.read_all().to_pylist():
        assert r["_commit_ts"] == times[r["_start_lsn"]]


def test_batches_never_exceed_batch_rows(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    filled(path, 30)
    reader = EmulatorReader(path)
    stream = reader.read_changes(
        "dbo_orders", reader.min_lsn("dbo_orders"), reader.max_lsn(), batch_rows=7
    )
    sizes = [b.num_rows for b in stream]
    assert max(sizes) == 7
    assert sum(sizes) == len(raw_change_rows(path, "dbo_orders"))


def test_ranges_are_closed_at_both_ends(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = filled(path, 6)
    commits = [e["start_lsn"] for e in emu.lsn_time_mapping()]
    reader = emu.reader()
    got = reader.read_changes("dbo_orders", commits[2], commits[3]).read_all().to_pylist()
    assert {r["_start_lsn"] for r in got} == {commits[2], commits[3]}


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("below", "below min_lsn"),
        ("above", "above max_lsn"),
        ("reversed", "above to_lsn"),
        ("missing", "missing"),
        ("filter", "row filter"),
    ],
)
def test_bad_ranges_raise_invalid_range_error_313(tmp_path: Path, case: str, match: str) -> None:
    path = tmp_path / "e.db"
    emu = filled(path, 4)
    reader = emu.reader()
    lo, hi = reader.min_lsn("dbo_orders"), reader.max_lsn()
    assert lo is not None
    assert hi is not None
    args: dict[str, object] = {
        "below": {"from_lsn": reader.decrement_lsn(lo), "to_lsn": hi},
        "above": {"from_lsn": lo, "to_lsn": reader.increment_lsn(hi)},
        "reversed": {"from_lsn": hi, "to_lsn": lo},
        "missing": {"from_lsn": None, "to_lsn": hi},
        "filter": {"from_lsn": lo, "to_lsn": hi, "row_filter": "all  update old"},
    }[case]  # type: ignore[assignment]
    with pytest.raises(InvalidRangeError, match=match) as caught:
        reader.read_changes("dbo_orders", **args)  # type: ignore[arg-type]
    assert caught.value.number == 313


def test_row_filter_all_drops_old_images_and_is_trimmed_and_case_insensitive(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    filled(path, 9)
    reader = EmulatorReader(path)
    lo, hi = reader.min_lsn("dbo_orders"), reader.max_lsn()
    ops = reader.read_changes("dbo_orders", lo, hi, row_filter="  ALL ").read_all()
    assert 3 not in ops.column("_operation").to_pylist()
    everything = reader.read_changes("dbo_orders", lo, hi, row_filter=" All Update Old").read_all()
    assert 3 in everything.column("_operation").to_pylist()


def test_a_dropped_or_unknown_instance_raises_208(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = filled(path, 2)
    reader = emu.reader()
    lo, hi = reader.min_lsn("dbo_orders"), reader.max_lsn()
    emu.disable_cdc("dbo_orders")
    with pytest.raises(UnknownObjectError) as caught:
        reader.read_changes("dbo_orders", lo, hi)
    assert caught.value.number == 208
    assert reader.min_lsn("dbo_orders") == ZERO


def test_min_lsn_is_none_until_capture_reaches_a_new_instance(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    reader = emu.reader()
    assert reader.min_lsn("dbo_orders") is None
    assert reader.min_lsn("nope") == ZERO
    assert reader.min_lsn("") == ZERO
    assert reader.max_lsn() is None
    emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    assert reader.min_lsn("dbo_orders") == emu.min_lsn("dbo_orders")


def test_columns_projection_keeps_the_order_asked_and_unknown_names_raise_207(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    filled(path, 3)
    reader = EmulatorReader(path)
    lo, hi = reader.min_lsn("dbo_orders"), reader.max_lsn()
    t = reader.read_changes(
        "dbo_orders", lo, hi, columns=["amount", "order_id"], include_command_id=False,
        include_update_mask=True, lsn_format="binary",
    ).read_all()  # fmt: skip
    assert t.schema.names == [
        "_start_lsn", "_seqval", "_operation", "_update_mask", "_commit_ts", "amount", "order_id",
    ]  # fmt: skip
    assert t.schema.field("_start_lsn").type == pa.binary(10)
    with pytest.raises(UnknownObjectError) as caught:
        reader.read_changes("dbo_orders", lo, hi, columns=["colour"])
    assert caught.value.number == 207


def test_split_points_match_a_brute_force_tiling(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    filled(path, 25)
    reader = EmulatorReader(path)
    lo, hi = reader.min_lsn("dbo_orders"), reader.max_lsn()
    assert lo is not None
    assert hi is not None
    per_commit: dict[str, int] = {}
    for r in raw_change_rows(path, "dbo_orders"):
        lsn = "0x" + r["__$start_lsn"].hex().upper()
        per_commit[lsn] = per_commit.get(lsn, 0) + 1
    commits = sorted(per_commit)
    total = sum(per_commit.values())
    for n in (1, 2, 3, 4, 7, 40):
        expected: list[tuple[str, int]] = []
        taken = 0
        for i in range(1, n):
            cum = 0
            bound = None
            for c in commits:
                cum += per_commit[c]
                if cum * n >= i * total:
                    bound = c
                    break
            if bound is None or cum >= total:
                break
            if expected and expected[-1][0] == bound:
                continue
            expected.append((bound, cum - taken))
            taken = cum
        expected.append((hi, total - taken))
        got = reader.split_points("dbo_orders", lo, hi, n)
        assert got == expected, n
        assert sum(rows for _, rows in got) == total


def _pick(
    entries: list[tuple[datetime, str]],
    relation: Callable[[datetime, datetime], bool],
    t: datetime,
    *,
    largest: bool,
) -> str | None:
    """Among entries whose time stands in `relation` to t, those at the extreme time; their
    extreme LSN."""
    kept = [e for e in entries if relation(e[0], t)]
    if not kept:
        return None
    edge = max(e[0] for e in kept) if largest else min(e[0] for e in kept)
    lsns = [e[1] for e in kept if e[0] == edge]
    return max(lsns) if largest else min(lsns)


def test_time_to_lsn_matches_brute_force_over_ties(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    rng = random.Random(3)
    second = 0
    for i in range(30):
        second += rng.choice([0, 0, 1, 2])  # equal times make ties
        emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(second))
    entries = [(e["tran_end_time"], e["start_lsn"]) for e in emu.lsn_time_mapping()]
    reader = emu.reader()
    for probe in range(-1, second + 2):
        t = datetime.fromisoformat(at(probe)) if probe >= 0 else datetime(2026, 9, 28, 13, 59)
        expect = {
            "largest less than": _pick(entries, operator.lt, t, largest=True),
            "largest less than or equal": _pick(entries, operator.le, t, largest=True),
            "smallest greater than": _pick(entries, operator.gt, t, largest=False),
            "smallest greater than or equal": _pick(entries, operator.ge, t, largest=False),
        }
        for relation, lsn in expect.items():
            assert reader.time_to_lsn(relation.upper() + " ", t) == lsn, (relation, probe)


def test_nth_commit_after_counts_entries_or_one_tables_commits(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = filled(path, 6)
    idle = emu.idle(at=at(100))
    entries = [e["start_lsn"] for e in emu.lsn_time_mapping()]
    reader = emu.reader()
    assert reader.nth_commit_after(ZERO, 1) == entries[0]
    assert reader.nth_commit_after(entries[2], 3) == entries[5]
    assert reader.nth_commit_after(entries[0], len(entries) - 1) == idle
    assert reader.nth_commit_after(entries[0], len(entries)) is None
    # the change table has no row at the idle entry
    assert reader.nth_commit_after(entries[0], len(entries) - 1, "dbo_orders") is None
    with pytest.raises(ValueError, match="n must be 1"):
        reader.nth_commit_after(ZERO, 0)


def test_key_tiles_cover_the_table_with_ntile_sizes(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    keys = list(range(0, 230, 10))  # 23 rows
    emu.commit([("insert", "dbo.orders", {"order_id": k}) for k in keys], at=at(1))
    reader = emu.reader()
    bounds = reader.key_tiles("dbo.orders", 5)
    # 23 rows in 5 tiles: 5, 5, 5, 4, 4
    assert bounds == [keys[5], keys[10], keys[15], keys[19]]
    assert reader.key_tiles("dbo.orders", rows_per_tile=10) == [keys[10], keys[20]]
    assert len(reader.key_tiles("dbo.orders", 100)) == 22  # never more tiles than rows
    pieces = [None, *bounds, None]
    seen = []
    for lo, hi in itertools.pairwise(pieces):
        seen += reader.read_table("dbo.orders", lo, hi).read_all().column("order_id").to_pylist()
    assert seen == keys


def test_key_extent_next_key_and_buckets(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("dbo.big", {"id": "bigint", "v": "int"}, primary_key="id")
    edge = [-(2**63), -5, 0, 7, 2**63 - 1]
    emu.commit([("insert", "dbo.big", {"id": k}) for k in edge], at=at(1))
    reader = emu.reader()
    assert reader.key_extent("dbo.big") == {"min": edge[0], "max": edge[-1], "rows": 5}
    assert reader.next_key("dbo.big", -5) == 0
    assert reader.next_key("dbo.big", 2**63 - 1) is None
    buckets = reader.key_buckets("dbo.big", 4)
    assert buckets[0][0] == -(2**63)
    assert buckets[-1][1] == 2**63
    assert sum(b[2] for b in buckets) == 5
    widths = [hi - lo for lo, hi, _ in buckets]
    assert max(widths) - min(widths) <= 1
    assert reader.key_buckets("dbo.big", 3, 0, 10) == [(0, 4, 1), (4, 7, 0), (7, 10, 1)]
    with pytest.raises(ValueError, match="one integer key column"):
        reader.key_buckets("dbo.big", 2, key_columns=["id", "v"])


def test_read_table_reads_composite_key_ranges_lexicographically(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("dbo.c", {"a": "int", "b": "nvarchar(5)", "v": "int"}, primary_key=["a", "b"])
    rows = [(a, b) for a in range(3) for b in ("x", "y", "z")]
    emu.commit([("insert", "dbo.c", {"a": a, "b": b, "v": 1}) for a, b in rows], at=at(1))
    reader = emu.reader()
    got = reader.read_table("dbo.c", (0, "y"), (2, "y"), columns=["b", "a"]).read_all()
    assert got.schema.names == ["b", "a"]
    expected = [(a, b) for a, b in rows if (0, "y") <= (a, b) < (2, "y")]
    assert (
        list(zip(got.column("a").to_pylist(), got.column("b").to_pylist(), strict=True)) == expected
    )


def test_data_reads_refuse_to_run_inside_a_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    filled(path, 2)
    reader = EmulatorReader(path)
    with reader.snapshot():
        lo, hi = reader.min_lsn("dbo_orders"), reader.max_lsn()
        with pytest.raises(ValueError, match="outside snapshot"):
            reader.read_changes("dbo_orders", lo, hi)


def test_a_snapshot_sees_one_state_while_a_writer_commits(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = filled(path, 2)
    reader = EmulatorReader(path)
    with reader.snapshot():
        before = reader.max_lsn()
        emu.commit([("insert", "dbo.orders", {"order_id": 999})], at=at(50))
        assert reader.max_lsn() == before
    assert reader.max_lsn() != before


def test_the_reader_pickles_as_its_path_and_reads_after_unpickling(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    filled(path, 3)
    reader = EmulatorReader(path)
    reader.max_lsn()
    copy = pickle.loads(pickle.dumps(reader))
    assert copy.path == path
    assert copy.max_lsn() == reader.max_lsn()


def test_an_early_released_stream_ends_its_read_transaction(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = filled(path, 30)
    reader = emu.reader()
    stream = reader.read_changes(
        "dbo_orders", reader.min_lsn("dbo_orders"), reader.max_lsn(), batch_rows=2
    )
    next(iter(stream))
    stream.close()
    del stream
    # with no reader holding the old snapshot, a checkpoint can reset the whole WAL
    emu.commit([("insert", "dbo.orders", {"order_id": 5000})], at=at(100))
    import sqlite3

    con = sqlite3.connect(path)
    busy, _, _ = con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    con.close()
    assert busy == 0


def test_tiles_over_nullable_key_columns_cover_every_row_once_with_null_first(
    tmp_path: Path,
) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("dbo.h", {"a": "int", "b": "nvarchar(3)", "v": "int"})
    rows = [(a, b) for a in (None, 1, 2) for b in (None, "x", "y")]
    emu.commit(
        [("insert", "dbo.h", {"a": a, "b": b, "v": i}) for i, (a, b) in enumerate(rows)], at=at(1)
    )
    reader = emu.reader()
    keys = ["a", "b"]
    bounds = reader.key_tiles("dbo.h", 4, key_columns=keys)
    pieces = [None, *bounds, None]
    seen: list[tuple[object, object]] = []
    for lo, hi in itertools.pairwise(pieces):
        t = reader.read_table("dbo.h", lo, hi, key_columns=keys).read_all()
        seen += list(zip(t.column("a").to_pylist(), t.column("b").to_pylist(), strict=True))

    def null_first(k: tuple[object, object]) -> tuple[tuple[bool, object], ...]:
        return tuple((v is not None, v if v is not None else 0) for v in k)

    assert seen == sorted(rows, key=null_first)
    assert reader.next_key("dbo.h", (None, "y"), key_columns=keys) == (1, None)


def test_a_batch_ends_once_its_buffers_pass_batch_bytes(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    emu.commit(
        [("insert", "dbo.orders", {"order_id": i, "status": "x" * 20}) for i in range(50)],
        at=at(1),
    )
    reader = EmulatorReader(path)
    lo, hi = reader.min_lsn("dbo_orders"), reader.max_lsn()
    small = [b.num_rows for b in reader.read_changes("dbo_orders", lo, hi, batch_bytes=1)]
    assert small == [1] * 50
    medium = [b.num_rows for b in reader.read_changes("dbo_orders", lo, hi, batch_bytes=2_000)]
    assert sum(medium) == 50
    assert 1 < max(medium) < 50
