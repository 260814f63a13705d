"""Silver: a current-state table kept from bronze by `apply_changes` (docs/silver.md)."""

from __future__ import annotations

from mssql_cdc.silver.apply import ApplyResult, SilverGranularity, apply_changes
from mssql_cdc.silver.checks import key_list
from mssql_cdc.silver.images import DELETE_FLAG, bronze_shape, latest_images

__all__ = [
    "DELETE_FLAG",
    "ApplyResult",
    "SilverGranularity",
    "apply_changes",
    "bronze_shape",
    "key_list",
    "latest_images",
]
