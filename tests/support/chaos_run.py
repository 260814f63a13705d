"""A chaos run: a `fan_out` job over TDS under faults at random instants, then the checker.

`python -m tests.support.chaos_run --seconds N --seed S` (or `make chaos SECONDS=N SEED=S`):

1. creates an emulator file on the `realistic` profile (capture in 5 s cycles) with a few
   tables, and serves it over TDS on a fixed port;
2. starts the driver process (`tests.support.chaos_job`: one `fan_out` job, every table
   bootstrapped, `on_data_loss="resnapshot"`), reading through pymssql and mssql-python in
   turn: each restart of the driver uses the other driver;
3. for N seconds commits a random workload (inserts, updates, deletes) and, at instants drawn
   from the seeded generator, injects one fault at a time, each kind in turn in a shuffled
   order (`FAULT_KINDS`):
   - `kill`: `kill -9` of the driver's process group (Python and its JVM), then a restart;
   - `cleanup`: CDC cleanup of one table's instances at a short retention (seconds);
   - `switch`: a second capture instance of a table, capturing every column it has now
     (the old one is disabled `SWITCH_DISABLE_AFTER` seconds later);
   - `add_column`: a nullable column added to a table (captured only after a switch);
   - `server_restart`: the TDS server stopped, and started again on its port after a pause;
   - `drop`: the server restarted with a fault that closes the connection in the middle of
     the next change read's result;
   - `slow`: the server restarted with a stall of a few seconds on each of its next answers;
   - `disk_full`: the small disk (a tmpfs the run mounts, `tests.support.full_disk`) that
     holds every checkpoint and the metrics folder filled with a ballast file: the running
     driver meets ENOSPC, or is killed after `DISK_FULL_WAIT` seconds; a driver started on the
     full disk must fail with the library's `DiskFullError` message (naming the fault and
     saying to free space and run again); then the ballast is removed and the driver started
     again (`DiskFault`, decision 1428);
   a driver process that ends on its own (a stream failed) is restarted too, and its failure
   is kept;
4. stops the faults, captures everything, runs the job to its end (`availableNow`) and
   `apply_changes` into silver, and runs the history checker (tests/support/history_checker.py)
   over the change history it kept aside after every few commits and before each cleanup or
   disabled instance purged it.

The seed fixes the workload and the faults' kinds, instants and parameters; the job's own
timing is the machine's, so a replay meets the same faults at the same instants, not the same
interleaving. The `disk_full` fault needs root (a tmpfs mount); without it the run says so
and draws it as not applicable.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from mssql_cdc.emulator import Emulator, EmulatorError, TdsServer, serve
from mssql_cdc.emulator.wire_faults import WireFault
from tests.support.full_disk import FILLER, SmallDisk, mountable, small_disk
from tests.support.history_checker import (
    CheckReport,
    SourceChange,
    SourceHistory,
    check_history,
    load_outputs,
    save_run,
)

__all__ = ["DISK_FULL_ADVICE", "FAULT_KINDS", "ChaosResult", "ChaosSettings", "main", "run_chaos"]

REPO = Path(__file__).resolve().parents[2]
FAULT_KINDS = (
    "kill",
    "cleanup",
    "switch",
    "add_column",
    "server_restart",
    "drop",
    "slow",
    "disk_full",
)
DRIVERS = ("pymssql", "mssql-python")
PASSWORD = "Chaos-run-1"
SWITCH_DISABLE_AFTER = (15.0, 45.0)  # seconds after a switch, drawn
HISTORY_EVERY = 3.0  # seconds between copies of the change tables
FINAL_TIMEOUT = 900.0
BOOTSTRAP_TIMEOUT = 600.0
_GUARD_ADVICE = "rerun with resnapshot_interval_days=0"
CLEANUP_RETENTION = (5.0, 120.0)  # seconds of changes a cleanup keeps, drawn
_META = "__$"
DISK_MB = 128  # the small disk of the checkpoints and the metrics folder
DISK_FULL_WAIT = 20.0  # seconds the running driver is left on the full disk before a kill
DISK_REFUSAL_TIMEOUT = 600.0  # seconds a driver started on the full disk has to refuse
DISK_FULL_ADVICE = (  # what the library's DiskFullError message must hold
    "DiskFullError: no space left on device for ",
    "Free space on that file system",
    "run again",
)


@dataclass(frozen=True, slots=True)
class ChaosSettings:
    """One run: how long, which seed, where, how many tables, how often a fault."""

    seconds: float
    seed: int
    out: Path
    tables: int = 3
    mean_gap: float = 20.0  # mean seconds between two faults
    commit_every: float = 0.25  # seconds between two workload transactions


@dataclass(slots=True)
class ChaosResult:
    """What a run did and what the checker found."""

    seed: int
    faults: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    commits: int = 0
    driver_starts: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    guard_overrides: int = 0
    disk_refusals: list[str] = field(default_factory=list)
    disk_stops: int = 0  # drivers that stopped on their own on the full disk, naming it
    problems: list[str] = field(default_factory=list)
    report: CheckReport = field(default_factory=CheckReport)

    @property
    def ok(self) -> bool:
        """No violation, and every full-disk failure said what happened and what to do."""
        return self.report.ok and not self.problems

    def render(self) -> str:
        lines = [
            f"chaos run, seed {self.seed}",
            f"  commits: {self.commits}",
            f"  driver starts: {dict(self.driver_starts)}",
            f"  faults injected: {dict(sorted(self.faults.items()))}",
        ]
        if self.skipped:
            lines.append(f"  faults drawn but not applicable: {dict(self.skipped)}")
        lines += [f"  driver ended on its own: {f[:600]}" for f in self.failures]
        if self.guard_overrides:
            lines.append(
                f"  restarts with resnapshot_interval_days=0, as the anti-loop guard's message "
                f"says: {self.guard_overrides}"
            )
        if self.faults["disk_full"]:
            lines.append(
                f"  full disk: {self.disk_stops} running drivers stopped naming it, "
                f"{len(self.disk_refusals)} DiskFullError refusals of a start on it"
            )
            lines += [f"  refused on the full disk: {r[:300]}" for r in self.disk_refusals[:3]]
        lines += [f"  PROBLEM: {p}" for p in self.problems]
        lines.append(self.report.render())
        return "\n".join(lines)


class Source:
    """The emulator, its TDS server, the workload, and the change history kept aside."""

    def __init__(self, folder: Path, tables: int, rng: random.Random) -> None:
        self.rng = rng
        self.emu = Emulator.create(folder / "chaos.db", profile="realistic")
        self.tables = [f"dbo.t{i}" for i in range(tables)]
        self.live: dict[str, set[int]] = {t: set() for t in self.tables}
        self.next_id = dict.fromkeys(self.tables, 1)
        self.added: dict[str, list[str]] = {t: [] for t in self.tables}
        self.writable: dict[str, list[str]] = {t: [] for t in self.tables}
        self.switched: set[str] = set()
        self.to_disable: list[tuple[float, str]] = []
        self.kept: dict[str, dict[tuple[int, int, int], dict[str, Any]]] = {
            t: {} for t in self.tables
        }
        self.commit_times: dict[str, datetime] = {}
        self.commits = 0
        for table in self.tables:
            self.emu.create_table(
                table, {"id": "int", "v": "nvarchar(40)", "n": "int"}, primary_key="id"
            )
            self.emu.enable_cdc(table)
        self.server: TdsServer | None = None
        self.port = 0

    def instance(self, table: str) -> str:
        return table.replace(".", "_")

    # The server.

    def start_server(self, faults: Sequence[WireFault] = ()) -> None:
        for attempt in range(50):
            try:
                self.server = serve(
                    self.emu.path, port=self.port, password=PASSWORD, faults=list(faults)
                )
                break
            except OSError:
                if attempt == 49:
                    raise
                time.sleep(0.2)
        assert self.server is not None
        self.port = self.server.port

    def stop_server(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def options(self, driver: str) -> dict[str, str]:
        assert self.server is not None
        return {
            "backend": driver,
            "connectionString": self.server.connection_string(driver),  # type: ignore[arg-type]
        }

    # The workload.

    def commit_some(self) -> None:
        table = self.rng.choice(self.tables)
        changes: list[Any] = []
        touched: set[int] = set()
        for _ in range(self.rng.randint(1, 4)):
            live = sorted(self.live[table] - touched)
            roll = self.rng.random()
            if not live or roll < 0.45 or (len(live) < 20 and roll < 0.7):
                key = self.next_id[table]
                self.next_id[table] += 1
                changes.append(("insert", table, self.row(table, key)))
                self.live[table].add(key)
            elif roll < 0.85:
                key = self.rng.choice(live)
                changes.append(("update", table, self.row(table, key)))
            else:
                key = self.rng.choice(live)
                changes.append(("delete", table, {"id": key}))
                self.live[table].discard(key)
            touched.add(key)
        lsn = self.emu.commit(changes)
        self.commits += 1
        self.commit_times[lsn] = self.emu.lsn_time(lsn) or self.emu.now()

    def row(self, table: str, key: int) -> dict[str, object]:
        row: dict[str, object] = {
            "id": key,
            "v": f"v{self.rng.randrange(10**6)}",
            "n": self.rng.randrange(1000),
        }
        for column in self.writable[table]:
            row[column] = self.rng.randrange(1000)
        return row

    # The history, kept aside.

    def keep_history(self) -> None:
        """Copy every change row of every instance; the widest copy of a change wins (a
        newer instance captures the added columns)."""
        for table in self.tables:
            kept = self.kept[table]
            for ci in self.emu.capture_instances(table):
                for row in self.emu.change_rows(ci):
                    ident = (
                        int(str(row["__$start_lsn"]), 16),
                        int(str(row["__$seqval"]), 16),
                        int(str(row["__$operation"])),
                    )
                    old = kept.get(ident)
                    if old is None or len(old) < len(row):
                        kept[ident] = row

    def history(self, table: str) -> SourceHistory:
        changes = []
        for row in self.kept[table].values():
            lsn = str(row["__$start_lsn"])
            commit_ts = self.commit_times.get(lsn) or self.emu.lsn_time(lsn)
            assert commit_ts is not None, lsn
            changes.append(
                SourceChange(
                    start_lsn=lsn,
                    seqval=str(row["__$seqval"]),
                    operation=int(str(row["__$operation"])),
                    command_id=int(str(row.get("__$command_id") or 0)),
                    commit_ts=commit_ts,
                    values={k: v for k, v in row.items() if not k.startswith(_META)},
                )
            )
        final = tuple(self.emu.rows(table))
        return SourceHistory(table, ("id",), tuple(changes), final)

    # Faults on the source.

    def cleanup(self, retention: float) -> str:
        """Purge one table's change rows older than `retention` seconds, never past what
        was kept."""
        self.keep_history()
        table = self.rng.choice(self.tables)
        cutoff = self.emu.now().timestamp() - retention
        done = []
        for ci in self.emu.capture_instances(table):
            kept = [
                str(r["__$start_lsn"])
                for r in self.emu.change_rows(ci)
                if self.commit_times.get(str(r["__$start_lsn"]), self.emu.now()).timestamp()
                <= cutoff
            ]
            if not kept:
                continue
            mark = max(kept, key=lambda lsn: int(lsn, 16))
            try:
                self.emu.cleanup(ci, mark)
                done.append(f"{ci} below {mark}")
            except EmulatorError as exc:
                done.append(f"{ci} refused ({exc})")
        return f"{table} at {retention:.0f} s retention: {', '.join(done) or 'nothing old'}"

    def switch(self, now: float) -> str | None:
        open_tables = [t for t in self.tables if t not in self.switched]
        if not open_tables:
            return None
        table = self.rng.choice(open_tables)
        self.keep_history()
        new = f"{self.instance(table)}_v2"
        self.emu.enable_cdc(table, capture_instance=new)
        self.switched.add(table)
        self.writable[table] = list(self.added[table])
        self.to_disable.append((now + self.rng.uniform(*SWITCH_DISABLE_AFTER), table))
        return f"{table} to {new} (captures {['id', 'v', 'n', *self.added[table]]})"

    def add_column(self) -> str | None:
        table = self.rng.choice([t for t in self.tables if len(self.added[t]) < 3] or [""])
        if not table:
            return None
        column = f"c{len(self.added[table]) + 1}"
        self.emu.add_column(table, column, "int")
        self.added[table].append(column)
        return f"{table}.{column} int"

    def disable_due(self, now: float, log: Any) -> None:
        for due, table in list(self.to_disable):
            if due <= now:
                self.to_disable.remove((due, table))
                self.keep_history()
                self.emu.disable_cdc(self.instance(table))
                log(f"disabled the old instance {self.instance(table)}")


class Driver:
    """The driver process: one `fan_out` job in `tests.support.chaos_job`."""

    def __init__(
        self, folder: Path, source: Source, result: ChaosResult, disk: Path | None = None
    ) -> None:
        self.folder = folder
        self.disk = disk  # the small disk's folder: the checkpoints and metrics go there
        self.source = source
        self.result = result
        self.process: subprocess.Popen[bytes] | None = None
        self.log_file: Path | None = None
        self.turn = 0
        self.lake = folder / "lake"
        self.override_guard = False  # the next start passes resnapshot_interval_days=0

    def job(self, mode: str, driver: str) -> dict[str, Any]:
        streams = [
            {"capture_instance": self.source.instance(t), "checkpoint": self.checkpoint(t)}
            for t in self.source.tables
        ]
        options = self.source.options(driver)
        if self.disk is not None:
            options["metricsPath"] = str(self.disk / "metrics")
        job: dict[str, Any] = {
            "mode": mode,
            "warehouse": str(self.folder / "warehouse"),
            "streams": streams,
            "options": options,
            "facts_table": str(self.lake / "facts"),
            "root": str(self.lake),
            "bootstrap": True,
            "on_data_loss": "resnapshot",
            "max_snapshots": 2,
            "max_starting": 2,
            "trigger": {"processingTime": "2 seconds"},
        }
        if self.override_guard:
            job["resnapshot_interval_days"] = 0
            self.override_guard = False
            self.result.guard_overrides += 1
        if mode == "final":
            job["trigger"] = {"availableNow": True}
            job["control_table"] = str(self.lake / "control")
            job["silver"] = [
                {"bronze": self.bronze(t), "silver": self.silver(t), "keys": ["id"]}
                for t in self.source.tables
            ]
        return job

    def bronze(self, table: str) -> str:
        return str(self.lake / "bronze" / self.source.instance(table))

    def silver(self, table: str) -> str:
        return str(self.lake / "silver" / self.source.instance(table))

    def checkpoint(self, table: str) -> str:
        base = self.lake if self.disk is None else self.disk
        return str(base / "checkpoints" / self.source.instance(table))

    def start(self, mode: str = "stream") -> str:
        driver = DRIVERS[self.turn % len(DRIVERS)]
        self.turn += 1
        n = sum(self.result.driver_starts.values())
        job_file = self.folder / f"job-{n}.json"
        job_file.write_text(json.dumps(self.job(mode, driver)))
        self.log_file = self.folder / f"job-{n}.log"
        with self.log_file.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.support.chaos_job", str(job_file)],
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # the JVM joins this group: kill -9 takes both
            )
        self.result.driver_starts[driver] += 1
        return driver

    def kill(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process = None

    def ended(self) -> int | None:
        """The exit code of a driver process that ended on its own, else None."""
        if self.process is None or self.process.poll() is None:
            return None
        code = self.process.returncode
        self.kill()  # its JVM, if it outlived it
        return code

    def follow_advice(self, lines: Sequence[str]) -> None:
        """Do what a failure says to do: the anti-loop guard (a second loss within
        resnapshot_interval_days of a re-snapshot) asks for a rerun with the interval 0."""
        if any(_GUARD_ADVICE in line for line in lines):
            self.override_guard = True

    def log_text(self) -> str:
        if self.log_file is None or not self.log_file.exists():
            return ""
        return self.log_file.read_text(errors="replace")

    def failure_lines(self) -> list[str]:
        text = self.log_text()
        return [line.strip() for line in text.splitlines() if "chaos job: stream failed" in line]


@dataclass(slots=True)
class DiskFault:
    """The `disk_full` fault in its phases: "filled" (the running driver is on the full
    disk), "refused" (a driver started on it must fail with `DiskFullError`), then freed."""

    disk: SmallDisk
    phase: str = ""  # "" when the disk has room
    since: float = 0.0

    def fill(self, now: float) -> str:
        ballast = self.disk.fill()
        self.phase, self.since = "filled", now
        return (
            f"the disk of the checkpoints and the metrics folder filled with {ballast:,} "
            "bytes of ballast"
        )

    def step(
        self, now: float, code: int | None, driver: Driver, result: ChaosResult, log: Any
    ) -> None:
        """Move the fault on; `code` is the exit code of a driver that ended on its own."""
        if self.phase == "filled":
            if code is None and now - self.since < DISK_FULL_WAIT:
                return
            if code is None:
                driver.kill()
                log(f"the driver ran {DISK_FULL_WAIT:.0f} s on the full disk: killed")
            else:
                lines = driver.failure_lines() or [f"exit code {code}, no failure printed"]
                result.failures += lines
                driver.follow_advice(lines)
                if "no space left on device" in driver.log_text().lower():
                    result.disk_stops += 1
                log(f"driver ended on its own on the full disk ({code}): {lines[0]}")
            self.disk.fill()  # whatever a stopped writer left free
            self.phase, self.since = "refused", now
            log(f"driver started on the full disk on {driver.start()}")
            return
        if code is None and now - self.since < DISK_REFUSAL_TIMEOUT:
            return
        if code is None:
            driver.kill()
            result.problems.append(
                f"a driver started on the full disk ran {DISK_REFUSAL_TIMEOUT:.0f} s without "
                f"failing; read {driver.log_file}"
            )
        else:
            lines = driver.failure_lines()
            driver.follow_advice(lines)
            result.disk_refusals += lines
            wrong = [ln for ln in lines if not all(part in ln for part in DISK_FULL_ADVICE)]
            if not lines or wrong:
                result.problems.append(
                    f"a start on the full disk did not fail with DiskFullError's message "
                    f"(naming the fault and saying to free space and run again): "
                    f"{(wrong or [f'exit code {code}, no failure printed'])[0][:600]}"
                )
            log(f"driver refused on the full disk ({code}): {(lines or ['no failure'])[0]}")
        self.free()
        log(f"space freed; driver restarted on {driver.start()}")

    def free(self) -> None:
        self.disk.free()
        self.phase = ""


def run_chaos(settings: ChaosSettings) -> ChaosResult:
    """Run one chaos run (module docstring) and return what it did and found."""
    out = settings.out
    out.mkdir(parents=True, exist_ok=False)
    log_path = out / "chaos.log"

    def log(message: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {message}"
        print(line, flush=True)
        with log_path.open("a") as handle:
            handle.write(line + "\n")

    log(f"chaos: seed {settings.seed}, {settings.seconds:.0f} s, folder {out}")
    log(f"chaos: replay with make chaos SECONDS={settings.seconds:.0f} SEED={settings.seed}")
    if not mountable():
        log("chaos: not root, so no small disk: the disk_full fault is not applicable")
        return _run(settings, None, log)
    kept = out / "disk.kept"
    try:
        with small_disk(out / "disk", size_mb=DISK_MB) as disk:
            try:
                return _run(settings, disk, log)
            finally:
                _keep(disk, kept)
    finally:  # the disk's files, back where the run wrote them once it is unmounted
        _restore(kept, out / "disk")


def _keep(disk: SmallDisk, kept: Path) -> None:
    """Copy the disk's files (the ballast aside) to `kept`, to put back once unmounted."""
    disk.free()
    shutil.copytree(disk.path, kept, ignore=shutil.ignore_patterns(FILLER))


def _restore(kept: Path, where: Path) -> None:
    if not kept.exists():
        return
    for entry in kept.iterdir():
        entry.rename(where / entry.name)
    kept.rmdir()


def _run(settings: ChaosSettings, disk: SmallDisk | None, log: Any) -> ChaosResult:
    out = settings.out
    result = ChaosResult(settings.seed)
    faults_rng = random.Random(settings.seed)
    source = Source(out, settings.tables, random.Random(settings.seed + 1))
    source.start_server()
    for _ in range(20):  # a few rows for the bootstrap to read
        source.commit_some()
    driver = Driver(out, source, result, None if disk is None else disk.path)
    disk_fault = None if disk is None else DiskFault(disk)
    log(f"driver started on {driver.start()}")
    try:
        wait_until_bootstrapped(source, driver, settings.tables, log)
        start = time.monotonic()
        bag: list[str] = []
        next_fault = start + faults_rng.uniform(0.5, 1.5) * settings.mean_gap
        next_copy = start + HISTORY_EVERY
        while (now := time.monotonic()) < start + settings.seconds or (
            disk_fault is not None and disk_fault.phase  # a full disk is seen to its end
        ):
            source.commit_some()
            if now >= next_copy:
                source.keep_history()
                next_copy = now + HISTORY_EVERY
            source.disable_due(now, log)
            code = driver.ended()
            if disk_fault is not None and disk_fault.phase:
                disk_fault.step(now, code, driver, result, log)
                next_fault = max(next_fault, now + 1.0)  # one fault at a time
            elif code is not None:
                lines = driver.failure_lines() or [f"exit code {code}, no failure printed"]
                result.failures += lines
                driver.follow_advice(lines)
                log(f"driver ended on its own ({code}): {lines[0]}")
                log(f"driver restarted on {driver.start()}")
            if now >= next_fault and now < start + settings.seconds:
                if not bag:
                    bag = list(FAULT_KINDS)
                    faults_rng.shuffle(bag)
                kind = bag.pop()
                if kind == "disk_full":
                    what = None if disk_fault is None else disk_fault.fill(now)
                else:
                    what = inject(kind, source, driver, faults_rng, now)
                if what is None:
                    result.skipped[kind] += 1
                    log(f"fault {kind}: not applicable")
                else:
                    result.faults[kind] += 1
                    log(f"fault {kind}: {what}")
                next_fault = now + faults_rng.uniform(0.5, 1.5) * settings.mean_gap
            time.sleep(settings.commit_every)
        log("chaos over: stopping the driver, capturing everything, running to the end")
        driver.kill()
        source.stop_server()
        source.start_server()
        source.emu.drain()
        source.keep_history()
        result.commits = source.commits
        finish(driver, result, log)
        source.keep_history()
        histories = {t: source.history(t) for t in source.tables}
        streams = [
            {
                "table": t,
                "bronze": driver.bronze(t),
                "checkpoint": driver.checkpoint(t),
                "silver": driver.silver(t),
            }
            for t in source.tables
        ]
        facts = str(driver.lake / "facts")
        save_run(out, histories, streams, facts)
        result.report = check_history(histories, load_outputs(streams, facts))
    finally:
        driver.kill()
        source.stop_server()
        source.emu.close()
    rendered = result.render()
    log(rendered)
    (out / "result.txt").write_text(rendered + "\n")
    return result


def wait_until_bootstrapped(source: Source, driver: Driver, tables: int, log: Any) -> None:
    """Commit the workload until every stream has bootstrapped, so the faults meet a job
    that streams (a loaded machine starts Spark slowly)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    log("waiting for every stream's bootstrap before the first fault")
    deadline = time.monotonic() + BOOTSTRAP_TIMEOUT
    facts = driver.lake / "facts"
    while time.monotonic() < deadline:
        source.commit_some()
        time.sleep(1.0)
        if driver.ended() is not None:
            raise RuntimeError(
                f"the driver ended before every stream bootstrapped; read {driver.log_file}"
            )
        if not (facts / "_delta_log").exists():
            continue
        try:
            events = DeltaTable(str(facts)).to_pyarrow_table(columns=["event"])["event"]
        except DeltaError:  # a log whose first commit is not finished yet
            continue
        if events.to_pylist().count("bootstrap") >= tables:
            log("every stream bootstrapped: faults start")
            return
    raise RuntimeError(
        f"the streams did not bootstrap within {BOOTSTRAP_TIMEOUT:.0f} s; read {driver.log_file}"
    )


def inject(kind: str, source: Source, driver: Driver, rng: random.Random, now: float) -> str | None:
    """Inject one fault of `kind`; a description, or None when it does not apply now."""
    if kind == "kill":
        driver.kill()
        return f"kill -9; restarted on {driver.start()}"
    if kind == "cleanup":
        return source.cleanup(rng.uniform(*CLEANUP_RETENTION))
    if kind == "switch":
        return source.switch(now)
    if kind == "add_column":
        return source.add_column()
    if kind == "server_restart":
        pause = rng.uniform(1.0, 8.0)
        source.stop_server()
        time.sleep(pause)
        source.start_server()
        return f"server down {pause:.1f} s"
    if kind == "drop":
        rows = rng.randrange(0, 20)
        source.stop_server()
        source.start_server([WireFault("drop", match="[_start_lsn]", after_rows=rows, times=1)])
        return f"the next change read is cut after {rows} rows"
    if kind == "slow":
        seconds, times = rng.uniform(1.0, 4.0), rng.randrange(5, 30)
        source.stop_server()
        source.start_server([WireFault("stall", seconds=seconds, times=times)])
        return f"the next {times} answers each wait {seconds:.1f} s"
    raise ValueError(f"unknown fault kind {kind!r}; use one of {FAULT_KINDS}")


def finish(driver: Driver, result: ChaosResult, log: Any) -> None:
    """Run the job to its end and apply silver; a driver that fails is started again, at
    most three times (a restart is what a stream's failure message asks for)."""
    for attempt in range(3):
        log(f"final run {attempt + 1} on {driver.start('final')}")
        assert driver.process is not None
        try:
            code = driver.process.wait(FINAL_TIMEOUT)
        except subprocess.TimeoutExpired:
            driver.kill()
            raise RuntimeError(
                f"the final run did not end within {FINAL_TIMEOUT:.0f} s; read "
                f"{driver.log_file} for where it stalled"
            ) from None
        lines = driver.failure_lines()
        driver.kill()
        if code == 0:
            return
        result.failures += lines or [f"final run exit code {code}"]
        driver.follow_advice(lines)
        log(f"final run ended with {code}: {lines[:1]}")
    raise RuntimeError(
        f"the final run failed three times; read {driver.log_file} and the failures above"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="chaos_run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="how long faults come")
    parser.add_argument("--seed", type=int, default=None, help="the seed (default: a new one)")
    parser.add_argument("--out", type=Path, default=None, help="a new folder for the run")
    parser.add_argument("--tables", type=int, default=3)
    parser.add_argument("--mean-gap", type=float, default=20.0, help="mean seconds per fault")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    out = args.out or REPO / "build" / "chaos" / f"{time.strftime('%Y%m%d-%H%M%S')}-seed{seed}"
    out = out.absolute()  # the driver processes and Spark's file URIs need it whole
    result = run_chaos(ChaosSettings(args.seconds, seed, out, args.tables, args.mean_gap))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
