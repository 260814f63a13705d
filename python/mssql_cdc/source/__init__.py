"""The Spark data sources `mssql_cdc` (streaming) and `mssql_cdc_snapshot` (batch): planning,
reading ranges, schema and type rules, and the data-loss guards."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.core import lazy_names
from mssql_cdc.source.parallelism import default_parallelism
from mssql_cdc.source.type_rules import widens_to

# Names whose modules load Spark or the emulator's Arrow: imported on first use, so
# importing this package stays light for Spark's Python workers and the driver.
__getattr__ = lazy_names(__name__, {"register": "mssql_cdc.source.formats"})

if TYPE_CHECKING:
    from mssql_cdc.source.formats import register


__all__ = [
    "default_parallelism",
    "register",
    "widens_to",
]
