"""An independent history checker for a chaos run: did the library keep its promise?

Its inputs are the source's full change history, kept aside by the run before CDC cleanup or a
disabled capture instance could purge it (`SourceHistory`), and what the library left on disk
for each stream: bronze, the facts rows of its target, its generation state file and silver
(`StreamOutput`). It never imports the library's readers: `load_outputs` reads the Delta tables
with `deltalake` and the state file as JSON, and every rule below is plain Python.

The rules, per stream:

- no duplicate: no `(_start_lsn, _seqval, _operation)` twice among bronze's change rows;
- no phantom: every bronze change row is a change of the source, with the source's values;
- exactly once: every source change after the bootstrap snapshot is in bronze, unless it lies
  inside an interval a `resnapshot` (from its `lost_from_ts` up to its snapshot LSN) or a
  `data_skipped` facts row (from `lost_from_ts` to `lost_to_ts`) records as lost;
- snapshots: each whole snapshot in bronze (rows with `_operation` 0, one `_snapshot` LSN S)
  equals the source table at S, rebuilt from the history, and the `rows` of its facts row;
- facts: each micro-batch row's `rows`, `inserts`, `updates` and `deletes` equal bronze's rows of
  that batch inside `[min_lsn, max_lsn]`, no batch is recorded twice, and the batch rows add up
  to bronze's change rows;
- state: the state file's generation and snapshot LSN are those of the newest `resnapshot`
  row, and no recovery is left open;
- silver: equal to the source table at the end, key by key and column by column.

`CheckReport.render()` prints what was checked and every violation. A chaos run saves its
inputs in its folder (`save_run`); `python -m tests.support.history_checker FOLDER` checks
them again (decision 1403).
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = [
    "CheckReport",
    "SourceChange",
    "SourceHistory",
    "StreamOutput",
    "check_history",
    "load_outputs",
    "load_run",
    "save_run",
    "source_state",
]

STATE_FILE = "_mssql_cdc_generation.json"  # the generation state file's documented name

ChangeId = tuple[int, int, int]  # (start LSN, seqval, operation), LSNs as integers


def lsn_int(value: object) -> int:
    """An LSN string such as '0x0000002A000001F00003' as an integer (orders as LSNs do)."""
    return int(str(value), 16)


@dataclass(frozen=True, slots=True)
class SourceChange:
    """One change row of the source, as a change table held it."""

    start_lsn: str
    seqval: str
    operation: int  # 1 delete, 2 insert, 3 update before-image, 4 update after-image
    command_id: int
    commit_ts: datetime
    values: Mapping[str, object]

    @property
    def ident(self) -> ChangeId:
        return (lsn_int(self.start_lsn), lsn_int(self.seqval), self.operation)


@dataclass(frozen=True, slots=True)
class SourceHistory:
    """Every change of one source table, its key columns and its rows at the end."""

    table: str
    key: tuple[str, ...]
    changes: tuple[SourceChange, ...]
    final_rows: tuple[Mapping[str, object], ...]


@dataclass(frozen=True, slots=True)
class StreamOutput:
    """What the library left for one stream: rows as dicts, the state file's JSON or None."""

    target: str
    bronze: tuple[Mapping[str, Any], ...]
    facts: tuple[Mapping[str, Any], ...]
    state: Mapping[str, Any] | None = None
    silver: tuple[Mapping[str, Any], ...] | None = None


@dataclass(slots=True)
class CheckReport:
    """What a check looked at (`checked`, counts by rule) and what it found wrong."""

    checked: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def render(self) -> str:
        lines = ["history check:"]
        lines += [f"  {name}: {count}" for name, count in sorted(self.checked.items())]
        lines.append(f"  violations: {len(self.violations)}")
        lines += [f"  VIOLATION {v}" for v in self.violations]
        return "\n".join(lines)


def _order(change: SourceChange) -> tuple[int, int, int, int]:
    return (lsn_int(change.start_lsn), change.command_id, lsn_int(change.seqval), change.operation)


def source_state(
    history: SourceHistory, at_lsn: int | None = None
) -> dict[tuple[object, ...], dict[str, object]]:
    """The source table at `at_lsn` (None: after every change), rebuilt from the changes:
    an insert or an update's after-image sets its key's row, a delete or an update's
    before-image removes it. The table starts empty: the run enables CDC before any row."""
    rows: dict[tuple[object, ...], dict[str, object]] = {}
    for change in sorted(history.changes, key=_order):
        if at_lsn is not None and lsn_int(change.start_lsn) > at_lsn:
            break
        key = tuple(change.values.get(k) for k in history.key)
        if change.operation in (2, 4):
            rows[key] = dict(change.values)
        else:
            rows.pop(key, None)
    return rows


def _source_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if not k.startswith("_")}


def _compare_rows(
    what: str,
    key: Sequence[str],
    expected: Mapping[tuple[object, ...], Mapping[str, object]],
    found: Iterable[Mapping[str, Any]],
    report: CheckReport,
) -> None:
    """Key by key: a key missing, a key too many, or a column that differs (a column the
    source row lacks is NULL there: it was added after the row's last change)."""
    seen: dict[tuple[object, ...], dict[str, Any]] = {}
    for row in found:
        values = _source_columns(row)
        k = tuple(values.get(c) for c in key)
        if k in seen:
            report.violations.append(f"{what}: key {k} appears twice")
        seen[k] = values
    for k in sorted(set(expected) - set(seen), key=repr):
        report.violations.append(f"{what}: key {k} is missing")
    for k in sorted(set(seen) - set(expected), key=repr):
        report.violations.append(f"{what}: key {k} is not in the source")
    for k in sorted(set(seen) & set(expected), key=repr):
        for column, value in seen[k].items():
            if expected[k].get(column) != value:
                report.violations.append(
                    f"{what}: key {k} column {column} is {value!r}, the source has "
                    f"{expected[k].get(column)!r}"
                )
    report.checked[f"{what.split(' ')[0]} rows compared"] += len(seen)


def _same_rows(
    a: Mapping[tuple[object, ...], Mapping[str, object]],
    b: Mapping[tuple[object, ...], Mapping[str, object]],
) -> bool:
    """Equal keys, and equal values in every column either side has (missing is NULL)."""
    if set(a) != set(b):
        return False
    return all(a[k].get(c) == b[k].get(c) for k in a for c in {*a[k], *b[k]})


def _later_states(
    history: SourceHistory, at: int, until: datetime | None
) -> dict[tuple[object, ...], list[dict[str, object] | None]]:
    """Each key's states after the commits above `at` made up to `until` (none without it):
    the images a snapshot read stamped `at` may also have seen (docs/snapshots.md, step 2 of
    'Full snapshots': a later commit the read saw reaches bronze again through the stream)."""
    state = source_state(history, at)
    later: dict[tuple[object, ...], list[dict[str, object] | None]] = defaultdict(list)
    if until is None:
        return later
    commits: dict[int, list[SourceChange]] = defaultdict(list)
    for change in sorted(history.changes, key=_order):
        if lsn_int(change.start_lsn) > at and change.commit_ts <= until:
            commits[lsn_int(change.start_lsn)].append(change)
    for lsn in sorted(commits):
        touched = []
        for change in commits[lsn]:
            key = tuple(change.values.get(k) for k in history.key)
            touched.append(key)
            if change.operation in (2, 4):
                state[key] = dict(change.values)
            else:
                state.pop(key, None)
        for key in touched:  # a commit's own before-images are never seen alone
            later[key].append(state.get(key))
    return later


def _same_row(a: Mapping[str, object] | None, b: Mapping[str, object] | None) -> bool:
    if a is None or b is None:
        return a is b
    return all(a.get(c) == b.get(c) for c in {*a, *b})


def _compare_snapshot(
    what: str,
    history: SourceHistory,
    at: int,
    until: datetime | None,
    found: Sequence[Mapping[str, Any]],
    report: CheckReport,
) -> None:
    """Each key of a snapshot read stamped `at` holds the source's image at `at`, or one a
    commit after it made before the snapshot's completion row was written (`until`)."""
    base = source_state(history, at)
    later = _later_states(history, at, until)
    strict = {k: v for k, v in base.items() if not later.get(k)}
    _compare_rows(
        what,
        history.key,
        strict,
        [r for r in found if tuple(r.get(c) for c in history.key) not in later],
        report,
    )
    seen = {tuple(r.get(c) for c in history.key): _source_columns(r) for r in found}
    for key, states in later.items():
        allowed = [base.get(key), *states]
        if not any(_same_row(seen.get(key), state) for state in allowed):
            report.violations.append(
                f"{what}: key {key} is {seen.get(key)!r}, the source held it as none of "
                f"{allowed!r} between the snapshot's LSN and its completion"
            )
        report.checked["snapshot keys changed during the read"] += 1


def _lost_intervals(
    facts: Sequence[Mapping[str, Any]],
) -> list[tuple[str, datetime | None, int | None, datetime | None]]:
    """(event, from commit time, to LSN, to commit time) of every recorded loss."""
    intervals: list[tuple[str, datetime | None, int | None, datetime | None]] = []
    for row in facts:
        if row.get("event") == "resnapshot":
            intervals.append(("resnapshot", row.get("lost_from_ts"), lsn_int(row["min_lsn"]), None))
        elif row.get("event") == "data_skipped":
            intervals.append(("data_skipped", row.get("lost_from_ts"), None, row.get("lost_to_ts")))
    return intervals


def _inside(
    change: SourceChange,
    intervals: Sequence[tuple[str, datetime | None, int | None, datetime | None]],
) -> bool:
    for _, lost_from, to_lsn, to_ts in intervals:
        if lost_from is not None and change.commit_ts < lost_from:
            continue
        if to_lsn is not None and lsn_int(change.start_lsn) <= to_lsn:
            return True
        if to_ts is not None and change.commit_ts <= to_ts:
            return True
    return False


def _check_changes(
    history: SourceHistory, out: StreamOutput, report: CheckReport, bootstrap: int | None
) -> None:
    name = out.target
    by_id = {c.ident: c for c in history.changes}
    rows = [r for r in out.bronze if r["_operation"] in (1, 2, 3, 4)]
    counts: Counter[ChangeId] = Counter()
    for row in rows:
        ident = (lsn_int(row["_start_lsn"]), lsn_int(row["_seqval"]), int(row["_operation"]))
        counts[ident] += 1
        change = by_id.get(ident)
        if change is None:
            report.violations.append(f"{name}: bronze holds change {ident} the source never had")
            continue
        for column, value in _source_columns(row).items():
            if value is not None and change.values.get(column) != value:
                report.violations.append(
                    f"{name}: change {change.start_lsn}/{change.seqval}/{change.operation} "
                    f"column {column} is {value!r} in bronze, {change.values.get(column)!r} "
                    "in the source"
                )
        if bootstrap is not None and ident[0] <= bootstrap:
            report.violations.append(
                f"{name}: change {ident} is at or below the bootstrap snapshot, which holds it"
            )
    for ident, n in counts.items():
        if n > 1:
            report.violations.append(
                f"{name}: duplicate (_start_lsn, _seqval, _operation) {ident} appears {n} times"
            )
    intervals = _lost_intervals(out.facts)
    for change in history.changes:
        if bootstrap is not None and lsn_int(change.start_lsn) <= bootstrap:
            continue
        report.checked["source changes checked"] += 1
        if counts[change.ident]:
            continue
        if _inside(change, intervals):
            report.checked["changes inside a recorded loss"] += 1
            continue
        report.violations.append(
            f"{name}: change {change.start_lsn}/{change.seqval}/{change.operation} "
            f"(committed {change.commit_ts}) is missing from bronze and no resnapshot or "
            "data_skipped row records its loss"
        )
    report.checked["bronze change rows"] += len(rows)


def _check_snapshots(history: SourceHistory, out: StreamOutput, report: CheckReport) -> None:
    snapshots: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in out.bronze:
        if row["_operation"] == 0:
            if row.get("_chunk") is not None:
                report.checked["chunked snapshot rows (not rebuilt)"] += 1
                continue
            snapshots[row["_snapshot"]].append(row)
    completions = {
        lsn_int(r["min_lsn"]): r
        for r in out.facts
        if r.get("event") in ("bootstrap", "resnapshot") and r.get("min_lsn")
    }
    for lsn, rows in snapshots.items():
        at = lsn_int(lsn)
        completion = completions.get(at)
        until = completion.get("written_at") if completion else None
        _compare_snapshot(f"snapshot {lsn} of {out.target}", history, at, until, rows, report)
        report.checked["snapshots rebuilt"] += 1
        if completion is None:
            report.violations.append(f"{out.target}: snapshot {lsn} has no completion facts row")
        elif completion.get("rows") is not None and completion["rows"] != len(rows):
            report.violations.append(
                f"{out.target}: the {completion['event']} row of {lsn} says {completion['rows']} "
                f"rows, bronze holds {len(rows)}"
            )


def _check_facts(out: StreamOutput, report: CheckReport) -> None:
    batches = [r for r in out.facts if r.get("event") is None]
    seen: Counter[tuple[object, object]] = Counter((r["app_id"], r["batch_id"]) for r in batches)
    for (app_id, batch_id), n in seen.items():
        if n > 1:
            report.violations.append(
                f"{out.target}: facts record batch {batch_id} of {app_id} {n} times"
            )
    changes = [r for r in out.bronze if r["_operation"] in (1, 2, 3, 4)]
    total = 0
    for row in batches:
        report.checked["facts batch rows"] += 1
        total += row["rows"] or 0
        if not row["rows"]:
            continue
        lo, hi = lsn_int(row["min_lsn"]), lsn_int(row["max_lsn"])
        mine = [
            r
            for r in changes
            if r["_batch_id"] == row["batch_id"] and lo <= lsn_int(r["_start_lsn"]) <= hi
        ]
        ops = Counter(int(r["_operation"]) for r in mine)
        found = {"rows": len(mine), "deletes": ops[1], "inserts": ops[2], "updates": ops[4]}
        for column, value in found.items():
            if row.get(column) is not None and row[column] != value:
                report.violations.append(
                    f"{out.target}: facts batch {row['batch_id']} of {row['app_id']} says "
                    f"{column}={row[column]}, bronze holds {value}"
                )
    if total != len(changes):
        report.violations.append(
            f"{out.target}: facts batch rows add up to {total} changes, bronze holds {len(changes)}"
        )


def _check_state(out: StreamOutput, report: CheckReport) -> None:
    resnapshots = [r for r in out.facts if r.get("event") == "resnapshot"]
    newest = max(resnapshots, key=lambda r: r["generation"], default=None)
    state = out.state
    report.checked["state files"] += state is not None
    if state is None:
        if newest is not None:
            report.violations.append(
                f"{out.target}: a resnapshot row records generation {newest['generation']} but "
                "there is no state file"
            )
        return
    if state.get("recovering"):
        report.violations.append(f"{out.target}: the state file has a recovery still open")
    if newest is None:
        if state.get("generation", 0) != 0:
            report.violations.append(
                f"{out.target}: the state file is at generation {state['generation']} and no "
                "resnapshot row records it"
            )
        return
    if state.get("generation") != newest["generation"]:
        report.violations.append(
            f"{out.target}: the state file is at generation {state.get('generation')}, the "
            f"newest resnapshot row at {newest['generation']}"
        )
    snapshot = state.get("snapshot_lsn")
    if snapshot is None or lsn_int(snapshot) != lsn_int(newest["min_lsn"]):
        report.violations.append(
            f"{out.target}: the state file's snapshot is {snapshot}, the newest resnapshot "
            f"row's {newest['min_lsn']}"
        )


def check_history(
    histories: Mapping[str, SourceHistory], outputs: Mapping[str, StreamOutput]
) -> CheckReport:
    """Check every stream of `outputs` (keyed by source table) against its table's history."""
    report = CheckReport()
    for table, out in sorted(outputs.items()):
        history = histories[table]
        report.checked["streams"] += 1
        boots = [lsn_int(r["min_lsn"]) for r in out.facts if r.get("event") == "bootstrap"]
        if len(boots) > 1:
            report.violations.append(f"{out.target}: {len(boots)} bootstrap rows")
        _check_changes(history, out, report, min(boots) if boots else None)
        _check_snapshots(history, out, report)
        _check_facts(out, report)
        _check_state(out, report)
        if out.silver is not None:
            expected = {tuple(r.get(k) for k in history.key): dict(r) for r in history.final_rows}
            _compare_rows(f"silver of {out.target}", history.key, expected, out.silver, report)
            rebuilt = source_state(history)
            if not _same_rows(rebuilt, expected):
                report.violations.append(
                    f"{table}: the kept change history does not rebuild the source table's "
                    "final rows (the run lost history before it was kept)"
                )
    return report


def _delta_rows(path: str, where: tuple[str, str] | None = None) -> tuple[dict[str, Any], ...]:
    from deltalake import DeltaTable

    table = DeltaTable(path).to_pyarrow_table()
    rows = table.to_pylist()
    if where is not None:
        rows = [r for r in rows if r.get(where[0]) == where[1]]
    return tuple(rows)


def load_outputs(streams: Sequence[Mapping[str, str]], facts: str) -> dict[str, StreamOutput]:
    """Read what the library left: `streams` holds, per stream, its `table`, `bronze` path,
    `checkpoint` folder and optionally `silver` path; `facts` is the facts table's path."""
    fact_rows = _delta_rows(facts)
    outputs: dict[str, StreamOutput] = {}
    for s in streams:
        state_file = Path(s["checkpoint"]) / STATE_FILE
        silver = s.get("silver")
        outputs[s["table"]] = StreamOutput(
            target=s["bronze"],
            bronze=_delta_rows(s["bronze"]),
            facts=tuple(r for r in fact_rows if r["target"] == s["bronze"]),
            state=json.loads(state_file.read_text()) if state_file.exists() else None,
            silver=_delta_rows(silver) if silver and Path(silver).exists() else None,
        )
    return outputs


def save_run(
    folder: Path,
    histories: Mapping[str, SourceHistory],
    streams: Sequence[Mapping[str, str]],
    facts: str,
) -> None:
    """Write a run's histories and stream paths to `folder/history.json`."""
    doc = {
        "facts": facts,
        "streams": list(streams),
        "tables": {
            table: {
                "key": list(h.key),
                "final_rows": list(h.final_rows),
                "changes": [
                    {
                        "start_lsn": c.start_lsn,
                        "seqval": c.seqval,
                        "operation": c.operation,
                        "command_id": c.command_id,
                        "commit_ts": c.commit_ts.isoformat(),
                        "values": dict(c.values),
                    }
                    for c in h.changes
                ],
            }
            for table, h in histories.items()
        },
    }
    (folder / "history.json").write_text(json.dumps(doc, default=str))


def load_run(folder: Path) -> tuple[dict[str, SourceHistory], dict[str, StreamOutput]]:
    """A saved run's histories (`save_run`) and what the library left, read again."""
    doc = json.loads((folder / "history.json").read_text())
    histories = {
        table: SourceHistory(
            table,
            tuple(t["key"]),
            tuple(
                SourceChange(
                    c["start_lsn"],
                    c["seqval"],
                    c["operation"],
                    c["command_id"],
                    datetime.fromisoformat(c["commit_ts"]),
                    c["values"],
                )
                for c in t["changes"]
            ),
            tuple(t["final_rows"]),
        )
        for table, t in doc["tables"].items()
    }
    return histories, load_outputs(doc["streams"], doc["facts"])


if __name__ == "__main__":
    report = check_history(*load_run(Path(sys.argv[1])))
    print(report.render())
    sys.exit(0 if report.ok else 1)
