"""reconcile(): compare a copy with its source by key tiles, and repair what differs."""

from mssql_cdc.reconciliation.api import Against, ReconcileResult, reconcile

__all__ = ["Against", "ReconcileResult", "reconcile"]
