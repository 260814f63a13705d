"""A stream on the emulator for the recovery's Spark tests, and the plain-Python rebuild oracle.

The oracle applies the rebuild rule of spec 30 section 1 to bronze's rows and the facts rows
it reads with Spark: it never calls library code, so it checks the library, not itself.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from mssql_cdc import stream
from mssql_cdc.emulator import Emulator
from mssql_cdc.emulator.profiles import Profile
from tests.spark.support.backends import Backend, backend_options
from tests.support import emulator_profile

START = datetime(2026, 9, 28, 13, 50)


def at(minutes: float) -> str:
    return (START + timedelta(minutes=minutes)).isoformat()


def lsn_key(text: str | None) -> int:
    return -1 if text is None else int(text, 16)


def feed(bronze: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """Bronze applied row by row in (_start_lsn, _command_id, _seqval, _operation) order, as a
    change feed: a snapshot row upserts its key, a delete removes it, nothing restarts."""

    def order(r: dict[str, Any]) -> tuple[int, int, int, int]:
        command = r.get("_command_id")
        return (
            lsn_key(r["_start_lsn"]),
            -1 if command is None else command,
            lsn_key(r.get("_seqval")),
            r["_operation"],
        )

    image: dict[int, str] = {}
    for r in sorted(bronze, key=order):
        if r["_operation"] == 1:
            image.pop(r["order_id"], None)
        elif r["_operation"] != 3:
            image[r["order_id"]] = r["status"]
    return sorted(image.items())


def rebuild(
    bronze: list[dict[str, Any]], facts: list[dict[str, Any]], target: str
) -> list[tuple[int, str]]:
    """The latest image per key by the rebuild rule, from rows only (the oracle)."""
    whole = [
        r["_snapshot"] or r["_start_lsn"]
        for r in bronze
        if r["_operation"] == 0 and r.get("_chunk") is None
    ]
    completions = [
        f["max_lsn"]
        for f in facts
        if f["event"] in ("bootstrap", "resnapshot") and f["target"] == target
    ]
    points = whole + completions
    if not points:
        chosen: list[dict[str, Any]] = [r for r in bronze if r["_operation"] != 3]
        p = -1
    else:
        p = max(lsn_key(x) for x in points)
        chosen = [
            r
            for r in bronze
            if (r["_operation"] == 0 and lsn_key(r["_snapshot"] or r["_start_lsn"]) == p)
            or (r["_operation"] not in (0, 3) and lsn_key(r["_start_lsn"]) > p)
        ]

    def order(r: dict[str, Any]) -> tuple[int, int, int, int]:
        command = r.get("_command_id")
        seqval = r.get("_seqval")
        return (
            lsn_key(r["_start_lsn"]),
            -1 if command is None else command,
            lsn_key(seqval),
            r["_operation"],
        )

    image: dict[int, str] = {}
    for r in sorted(chosen, key=order):
        if r["_operation"] == 1:
            image.pop(r["order_id"], None)
        else:
            image[r["order_id"]] = r["status"]
    return sorted(image.items())


@dataclass
class Orders:
    """dbo.orders on an emulator file, streamed by to_delta into path-based Delta tables."""

    spark: SparkSession
    root: Path
    app_id: str = "life-v1"
    minute: float = 0.0
    extra: dict[str, str] = field(default_factory=dict)
    times: dict[str, str] = field(default_factory=dict)  # commit LSN -> its commit time
    reopen: bool = False
    backend: Backend = "emulator"
    profile: Profile | None = None  # the environment's (tests/support/emulator_profile.py)

    def __post_init__(self) -> None:
        if self.reopen:
            self.emu = Emulator.open(self.root / "e.db")
        else:
            self.root.mkdir(parents=True, exist_ok=True)
            self.emu = emulator_profile.create(self.root / "e.db", pinned=self.profile, start=START)
            self.emu.create_table(
                "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
            )
            self.emu.enable_cdc("dbo.orders")
        self.target = str(self.root / "bronze")
        self.facts = str(self.root / "facts")
        self.checkpoint = self.root / "ckpt"

    @property
    def state_file(self) -> Path:
        return self.checkpoint / "_mssql_cdc_generation.json"

    def state(self) -> dict[str, Any] | None:
        return json.loads(self.state_file.read_text()) if self.state_file.exists() else None

    def _tick(self, minutes: float = 1.0) -> str:
        self.minute += minutes
        return at(self.minute)

    def commit(self, *changes: tuple[str, int, str | None]) -> str:
        rows = []
        for op, key, status in changes:
            if op == "delete":
                rows.append(("delete", "dbo.orders", {"order_id": key}))
            else:
                rows.append((op, "dbo.orders", {"order_id": key, "status": status}))
        when = START + timedelta(minutes=self.minute + 1)
        lsn = self.emu.commit(rows, at=self._tick())
        # Recorded from the commit's time: cleanup later deletes the mapping entry, and on the
        # realistic profile there is none until the capture job's next cycle.
        self.times[lsn] = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}"
        return lsn

    def orders(self, n: int) -> None:
        for i in range(n):
            self.commit(("insert", i, "new"))

    def cleanup_past_everything(self) -> str:
        """An idle entry past the retention, then the cleanup job up to it."""
        self.minute += 4 * 24 * 60
        mark = self.emu.idle(at=at(self.minute))
        self.emu.run_cleanup_job()
        return mark

    def switch_instance_over(self, *unread: tuple[str, int, str | None]) -> str:
        """Commit `unread` (captured by dbo_orders only), let a newer instance of dbo.orders
        take over with a change of its own, then disable dbo_orders: `unread` is lost to a
        stream that had not read it. Returns the newer instance's name."""
        self.commit(*unread)
        newer = self.emu.enable_cdc("dbo.orders", capture_instance="dbo_orders_v2")
        self.commit(("insert", 100, "after"))  # establishes the newer instance's start LSN
        self.emu.disable_cdc("dbo_orders")
        return newer

    def options(self) -> dict[str, str]:
        return {
            **backend_options(self.emu.path, self.backend),
            "captureInstance": "dbo_orders",
            **self.extra,
        }

    def wait_for_capture(self) -> None:
        """On the realistic profile, time passes until the capture job took every commit."""
        if (self.profile or emulator_profile.profile()) != "realistic":
            return  # touches nothing: a stashed story's emulator may be closed
        clock = emulator_profile.wait_for_capture(self.emu, at(self.minute))
        self.minute = (clock - START) / timedelta(minutes=1)

    def to_delta(self, **kw: Any) -> StreamingQuery:
        self.wait_for_capture()
        args: dict[str, Any] = {
            "trigger": {"availableNow": True},
            "bootstrap": True,
            "on_data_loss": "resnapshot",
        }
        args.update(kw)
        return stream(self.spark, self.options()).to_delta(
            self.target, self.app_id, str(self.checkpoint), self.facts, **args
        )

    def run(self, **kw: Any) -> StreamingQuery:
        query = self.to_delta(**kw)
        assert query.awaitTermination(300)
        assert query.exception() is None
        return query

    def bronze(self) -> list[dict[str, Any]]:
        if not (Path(self.target) / "_delta_log").exists():
            return []
        return [r.asDict() for r in self.spark.read.format("delta").load(self.target).collect()]

    def facts_rows(self) -> list[dict[str, Any]]:
        if not (Path(self.facts) / "_delta_log").exists():
            return []
        return [r.asDict() for r in self.spark.read.format("delta").load(self.facts).collect()]

    def events(self, event: str) -> list[dict[str, Any]]:
        return [f for f in self.facts_rows() if f["event"] == event]

    def snapshot_lsns(self) -> set[str]:
        return {
            r["_snapshot"] or r["_start_lsn"]
            for r in self.bronze()
            if r["_operation"] == 0 and r.get("_chunk") is None
        }

    def rebuilt(self) -> list[tuple[int, str]]:
        return rebuild(self.bronze(), self.facts_rows(), self.target)

    def source(self) -> list[tuple[int, str]]:
        return [(int(r["order_id"]), str(r["status"])) for r in self.emu.rows("dbo.orders")]  # type: ignore[call-overload]

    def commit_time(self, lsn: str) -> str:
        """The commit time of `lsn`, from the mapping or, once purged, as recorded."""
        moment = self.emu.lsn_time(lsn)
        if moment is None:
            return self.times[lsn]
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def stash(orders: Orders, *, suffix: str = "-stash") -> Orders:
    """Copy `orders`' files aside; `restore` with the same `suffix` puts them back at the same
    path (several suffixes keep several points of one history).

    Facts rows hold the target's path, so a restored history runs at the path it was built.
    """
    orders.emu.close()
    shutil.copytree(orders.root, orders.root.with_name(orders.root.name + suffix))
    return replace(orders, reopen=True, times=dict(orders.times))


def restore(stashed: Orders, *, suffix: str = "-stash") -> Orders:
    """A fresh copy of the stashed history at its own path."""
    if stashed.root.exists():
        shutil.rmtree(stashed.root)
    shutil.copytree(stashed.root.with_name(stashed.root.name + suffix), stashed.root)
    return replace(stashed, times=dict(stashed.times))
