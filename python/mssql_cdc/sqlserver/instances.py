"""Which capture instance serves what: name matching, a table's instances, the cut at S.

Pure functions over `CaptureInstance` values (docs/source.md, 'Capture instances'); the backends
only list instances.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.core import Piece, cut_at_switch, lsn
from mssql_cdc.errors import ConfigError, quoted
from mssql_cdc.sqlserver.metadata import CaptureInstance

if TYPE_CHECKING:
    from mssql_cdc.sqlserver.protocols import CaptureCatalog

__all__ = [
    "ResolvedInstance",
    "find_instance",
    "instances_named",
    "pieces",
    "resolve_instance",
    "serving_instance",
    "table_instances",
]

_log = logging.getLogger("mssql_cdc.sqlserver")


@dataclass(frozen=True, slots=True)
class ResolvedInstance:
    """The configured instance as found, or the instance that now serves its table."""

    instance: CaptureInstance
    followed_from: str | None  # the configured name, when it was disabled and followed


def resolve_instance(
    configured: str,
    available: Sequence[CaptureInstance],
    *,
    remembered: tuple[str, str] | None = None,
) -> ResolvedInstance:
    """Find `configured` among the instances the login can read.

    Matched exactly, then ignoring case. A disabled instance is followed to its table's
    remaining instance: within a run through `remembered`, the (schema, table) this run
    resolved before, whatever the instance's name; at start only when it has the default name
    `<schema>_<table>` (compared ignoring case), the one way to know its table.

    Raises:
        ConfigError: no match (the message lists the names found), two matches ignoring case
            and none exact (it lists both), or a disabled custom-named instance.
    """
    for instance in available:
        if instance.name == configured:
            return ResolvedInstance(instance, None)
    folded = [i for i in available if i.name.lower() == configured.lower()]
    if len(folded) == 1:
        return ResolvedInstance(folded[0], None)
    if len(folded) > 1:
        names = ", ".join(repr(i.name) for i in folded)
        raise ConfigError(
            f"option captureInstance {quoted(configured)} matches {names} ignoring case and none "
            "exactly; give the name with its exact case"
        )
    if remembered is not None:
        same_table = [i for i in available if (i.source_schema, i.source_table) == remembered]
    else:
        same_table = [
            i
            for i in available
            if f"{i.source_schema}_{i.source_table}".lower() == configured.lower()
        ]
    remaining = table_instances(same_table)
    if remaining:
        newest = remaining[-1]
        _log.warning(
            "capture instance %r is disabled; following its table's remaining instance %r",
            configured,
            newest.name,
        )
        return ResolvedInstance(newest, configured)
    found = ", ".join(sorted(i.name for i in available)) or "none"
    raise ConfigError(
        f"capture instance {quoted(configured)} does not exist or this login cannot read it "
        f"(instances found: {found}); SQL Server lists only the instances a login may read: "
        "a db_owner sees the instance's gating role in the role_name column of "
        "sys.sp_cdc_help_change_data_capture and can run ALTER ROLE [<role_name>] ADD MEMBER "
        "[<this login's user>]; if it was disabled and had a custom name, set "
        "captureInstance to the table's remaining instance"
    )


def instances_named(catalog: CaptureCatalog, name: str) -> Sequence[CaptureInstance]:
    """The instances of the table whose instance is called `name` exactly, asked of that table
    alone; every instance the login can read when the name's table is not known.

    Listing every instance costs the server and the client in proportion to the database's
    instances, and each stream of a job of many tables asks several times per run (S1 in
    bench/REPORT.md); one table's instances cost the same at any size.
    """
    table = catalog.instance_table(name)
    if table is not None:
        found = catalog.capture_instances(*table)
        if any(i.name == name for i in found):
            return found
    return catalog.capture_instances()


def find_instance(
    catalog: CaptureCatalog, configured: str, *, remembered: tuple[str, str] | None = None
) -> ResolvedInstance:
    """`resolve_instance(configured, <every instance>)`, asking the server for one table's
    instances when the configured name is an instance's exact name, as it is but for a case
    slip or a disabled instance; the same answer, without listing every instance.

    Raises:
        ConfigError: as `resolve_instance`.
    """
    found = instances_named(catalog, configured)
    for instance in found:
        if instance.name == configured:
            return ResolvedInstance(instance, None)
    return resolve_instance(configured, found, remembered=remembered)


def table_instances(instances: Sequence[CaptureInstance]) -> list[CaptureInstance]:
    """A table's instances that capture has established, older first (create date, then S)."""
    established = [i for i in instances if i.start_lsn is not None]
    return sorted(established, key=lambda i: (i.create_date is None, i.create_date, i.start_lsn))


def serving_instance(instances: Sequence[CaptureInstance], at: lsn.Lsn) -> CaptureInstance:
    """The instance serving `at`: the newest whose start LSN is at or below it, else the oldest.

    Raises:
        ValueError: `instances` holds no established instance.
    """
    ordered = table_instances(instances)
    if not ordered:
        raise ValueError("the table has no capture instance with a start LSN yet")
    serving = [i for i in ordered if i.start_lsn is not None and i.start_lsn <= at]
    return serving[-1] if serving else ordered[0]


def pieces(first: lsn.Lsn, last: lsn.Lsn, instances: Sequence[CaptureInstance]) -> list[Piece]:
    """Cut `[first, last]` between the table's (at most two) instances at the newer one's S.

    Raises:
        ValueError: no established instance, or more than two.
    """
    ordered = table_instances(instances)
    if not ordered or len(ordered) > 2:
        raise ValueError(
            f"a table has one or two established capture instances; found {len(ordered)}"
        )
    if len(ordered) == 1:
        return cut_at_switch(first, last, ordered[0].name, None, None)
    older, newer = ordered
    return cut_at_switch(first, last, older.name, newer.name, newer.start_lsn)
