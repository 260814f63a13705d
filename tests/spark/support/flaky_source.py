"""`mssql_cdc_flaky`: the `mssql_cdc` source whose driver connection fails on a plan, for the
driver-retry tests (10-source.md section 11).

The plan is a JSON file named by the option `faultPlan`: `{"fail": {method: [error, ...]},
"calls": {method: count}}`. Every call of a StreamPlanner or CaptureCatalog method on the
driver counts itself under `calls` and, while its `fail` list is not empty, pops the first entry
and raises it: "busy" is the emulator's transient BusyError, "data_loss" a DataLossError (a
decision, never retried). The file is shared by the processes Spark plans in (the schema worker,
the source runner); executors read through their own, unwrapped backend.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark import cloudpickle

from mssql_cdc.errors import BusyError, DataLossError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.source.formats import CdcDataSource
from mssql_cdc.sqlserver.backend_choice import Backend, open_backend

# Spark's planning processes cannot import tests.spark: the class travels by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def write_plan(path: Path, fail: dict[str, list[str]]) -> None:
    path.write_text(json.dumps({"fail": fail, "calls": {}}))


def read_plan(path: Path) -> dict[str, Any]:
    plan: dict[str, Any] = json.loads(path.read_text())
    return plan


def _fault(plan_file: str, method: str) -> None:
    path = Path(plan_file)
    plan = read_plan(path)
    plan["calls"][method] = plan["calls"].get(method, 0) + 1
    queue = plan["fail"].get(method, [])
    error = queue.pop(0) if queue else None
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(plan))
    os.replace(temporary, path)
    if error == "busy":
        raise BusyError(f"{method}: the emulator file is locked (injected by the fault plan)")
    if error == "data_loss":
        raise DataLossError(
            f"capture instance 'dbo_orders': {method} found the changes purged (injected)",
            "dbo_orders",
        )


class _Flaky:
    """A view of one Protocol object whose method calls go through the plan first."""

    def __init__(self, real: object, plan_file: str) -> None:
        self._real = real
        self._plan_file = plan_file

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._real, name)
        if name == "close" or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            _fault(self._plan_file, name)
            return attr(*args, **kwargs)

        return call


def flaky_open(plan_file: str, config: SourceConfig) -> Backend:
    real = open_backend(config)
    return Backend(
        _Flaky(real.planner, plan_file),  # type: ignore[arg-type]
        _Flaky(real.catalog, plan_file),  # type: ignore[arg-type]
        real.changes,
        real.snapshots,
        real.chunks,
        real.tiles,
        real.close,
    )


class FlakyCdcDataSource(CdcDataSource):
    """`spark.readStream.format("mssql_cdc_flaky")`: mssql_cdc with a planned faulty driver."""

    def __init__(self, options: dict[str, str]) -> None:
        plan = {k.lower(): v for k, v in options.items()}.get("faultplan")
        if plan is None:
            raise ValueError("option faultPlan is required: the path of the fault plan file")
        super().__init__({k: v for k, v in options.items() if k.lower() != "faultplan"})
        connect: Callable[[SourceConfig], Backend] = functools.partial(flaky_open, plan)
        self.connect = connect

    @classmethod
    def name(cls) -> str:
        return "mssql_cdc_flaky"
