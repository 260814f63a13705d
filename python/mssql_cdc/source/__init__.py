"""The Spark data sources `mssql_cdc` (streaming) and `mssql_cdc_snapshot` (batch): planning,
reading ranges, schema and type rules, and the data-loss guards."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.core import lazy_names
from mssql_cdc.source.parallelism import default_parallelism
from mssql_cdc.source.type_rules import widens_to

# `register` loads PySpark, so it is imported on first use: the pure modules of the source
# (guards, ranges, type rules) stay importable without Spark.
__getattr__ = lazy_names(__name__, {"register": "mssql_cdc.source.formats"})

if TYPE_CHECKING:
    from mssql_cdc.source.formats import register


__all__ = [
    "default_parallelism",
    "register",
    "widens_to",
]
