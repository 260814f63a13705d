"""Test support: named failpoints to crash the library at its durable steps, and a pinned clock."""

from mssql_cdc.testing.clock import clock
from mssql_cdc.testing.failpoints import InjectedFault, failpoint, failpoints

__all__ = [
    "InjectedFault",
    "clock",
    "failpoint",
    "failpoints",
]
