"""One writer process and four reader processes share an emulator file (spec 40, section 5.5):
every reader sees a consistent prefix of whole commits, never a torn transaction."""

from __future__ import annotations

import multiprocessing
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.emulator import Emulator, EmulatorReader
from tests.unit.support.emulator_oracle import at

ACCOUNTS = 8
BALANCE = 100
COMMITS = 120
K = 4


def make_file(path: Path, capture: str) -> Emulator:
    emu = Emulator.create(path, capture=capture)  # type: ignore[arg-type]
    emu.create_table("dbo.accounts", {"id": "int", "balance": "bigint"}, primary_key="id")
    emu.create_table(
        "dbo.ledger",
        {"id": "int", "src": "int", "dst": "int", "amount": "bigint"},
        primary_key="id",
    )
    emu.enable_cdc("dbo.accounts")
    emu.enable_cdc("dbo.ledger")
    emu.commit(
        [("insert", "dbo.accounts", {"id": i, "balance": BALANCE}) for i in range(ACCOUNTS)],
        at=at(0),
    )
    if capture == "manual":
        emu.configure(maxtrans=K)
        emu.drain()
    return emu


def writer(path: str, capture: str, out: multiprocessing.Queue[Any]) -> None:
    emu = Emulator.open(path)
    rng = random.Random(11)
    balances = [BALANCE] * ACCOUNTS
    plan: list[tuple[str, int, int, int]] = []
    for n in range(1, COMMITS + 1):
        src, dst = rng.sample(range(ACCOUNTS), 2)
        amount = rng.randint(1, 20)
        balances[src] -= amount
        balances[dst] += amount
        lsn = emu.commit(
            [
                ("update", "dbo.accounts", {"id": src, "balance": balances[src]}),
                ("update", "dbo.accounts", {"id": dst, "balance": balances[dst]}),
                ("insert", "dbo.ledger", {"id": n, "src": src, "dst": dst, "amount": amount}),
            ],
            at=at(n),
        )
        plan.append((lsn, src, dst, amount))
        if capture == "manual" and n % K == 0:
            emu.capture()
        time.sleep(0.005)  # let the readers interleave with the commits
    out.put(("writer", plan, balances))


def reader(path: str, capture: str, stop_file: str, out: multiprocessing.Queue[Any]) -> None:
    r = EmulatorReader(path)
    r.max_lsn()
    out.put(("ready",))
    problems: list[str] = []
    last_max = ""
    rounds = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = Path(stop_file).exists()
        rounds += 1
        total = sum(r.read_table("dbo.accounts").read_all().column("balance").to_pylist())
        if total != ACCOUNTS * BALANCE:
            problems.append(f"sum {total}")
        top = r.max_lsn()
        assert top is not None
        if top < last_max:
            problems.append(f"max_lsn fell from {last_max} to {top}")
        last_max = top
        moves: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        acc = r.read_changes("dbo_accounts", r.min_lsn("dbo_accounts"), top).read_all()
        for row in acc.to_pylist():
            sign = {3: -1, 4: 1}.get(row["_operation"], 0)
            moves[row["_start_lsn"]][row["id"]] += sign * row["balance"]
        led = r.read_changes("dbo_ledger", r.min_lsn("dbo_ledger"), top).read_all().to_pylist()
        if sorted(row["_start_lsn"] for row in led) != sorted(
            k for k in moves if len(moves[k]) == 2
        ):
            problems.append("ledger and account commits differ")
        for row in led:
            m = moves[row["_start_lsn"]]
            if m != {row["src"]: -row["amount"], row["dst"]: row["amount"]}:
                problems.append(f"torn transaction at {row['_start_lsn']}")
        if capture == "manual" and len(led) % K != 0:
            problems.append(f"{len(led)} visible commits is not a multiple of {K}")
        if done:
            break
    final = r.read_table("dbo.accounts").read_all().column("balance").to_pylist()
    out.put(("reader", rounds, problems, final))


@pytest.mark.parametrize("capture", ["immediate", "manual"])
def test_readers_see_whole_commits_while_a_writer_commits(tmp_path: Path, capture: str) -> None:
    path = tmp_path / "e.db"
    make_file(path, capture).close()
    stop = tmp_path / "writer-done"
    ctx = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[Any] = ctx.Queue()
    readers = [
        ctx.Process(target=reader, args=(str(path), capture, str(stop), queue)) for _ in range(4)
    ]
    for p in readers:
        p.start()
    assert [queue.get(timeout=120) for _ in readers] == [("ready",)] * len(readers)
    w = ctx.Process(target=writer, args=(str(path), capture, queue))
    w.start()
    results = [queue.get(timeout=120)]
    assert results[0][0] == "writer"
    stop.touch()
    results += [queue.get(timeout=120) for _ in readers]
    for p in [w, *readers]:
        p.join(timeout=60)
        assert p.exitcode == 0
    _, plan, balances = results[0]
    for _, rounds, problems, final in results[1:]:
        assert problems == []
        assert rounds >= 2  # each reader read while the writer committed
        assert final == balances
    # every planned commit is in the change tables with exactly its planned ledger row
    emu = Emulator.open(path)
    emu.drain()
    ledger = {r["__$start_lsn"]: r for r in emu.change_rows("dbo_ledger")}
    assert len(ledger) == COMMITS
    for lsn, src, dst, amount in plan:
        row = ledger[lsn]
        assert (row["src"], row["dst"], row["amount"]) == (src, dst, amount)
