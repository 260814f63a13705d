"""Silver: a current-state table kept from bronze by `apply_changes` (docs/silver.md)."""

from mssql_cdc.silver.apply import ApplyResult, apply_changes

__all__ = ["ApplyResult", "apply_changes"]
