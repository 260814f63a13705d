"""Test support: named failpoints to crash the library at its durable steps."""

from mssql_cdc.testing.failpoints import InjectedFault, failpoint, failpoints

__all__ = ["InjectedFault", "failpoint", "failpoints"]
