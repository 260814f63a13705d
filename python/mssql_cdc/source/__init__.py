"""The Spark data sources `mssql_cdc` (streaming) and `mssql_cdc_snapshot` (batch): planning,
reading ranges, schema and type rules, and the data-loss guards."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mssql_cdc.source.parallelism import default_parallelism
from mssql_cdc.source.type_rules import widens_to

# Names whose modules load Spark or the emulator's Arrow: imported on first use, so
# importing this package stays light for Spark's Python workers and the driver.
_LAZY = {
    "register": "mssql_cdc.source.formats",
}

if TYPE_CHECKING:
    from mssql_cdc.source.formats import register


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "default_parallelism",
    "register",
    "widens_to",
]
