"""reconcile(): compare a copy with its source by key tiles, and repair what differs.

These names are the package's face; other packages import them from here.
"""

from mssql_cdc.reconciliation.api import reconcile
from mssql_cdc.reconciliation.result import Against, ReconcileResult, SampleVerdict

__all__ = ["Against", "ReconcileResult", "SampleVerdict", "reconcile"]
