"""The library's Delta tables: references, shapes, definitions, writes, the Delta log read
without Spark jobs, commit lookup and the rows one commit added, write retries and
migrations."""

from __future__ import annotations

from mssql_cdc.tables.commit_lookup import Commit, find_commits
from mssql_cdc.tables.commit_rows import commit_frame, read_commit_rows
from mssql_cdc.tables.definitions import CONTROL, FACTS, library_columns
from mssql_cdc.tables.delta_log import CommitSummary, LogHead, LogReader
from mssql_cdc.tables.delta_read import newest_version, read_rows
from mssql_cdc.tables.delta_write import append_rows, columns_of, writes_in_process
from mssql_cdc.tables.merge_sql import merge_into
from mssql_cdc.tables.migrations import quote_identifier, sql_string
from mssql_cdc.tables.observed_write import (
    OBSERVATION_SETTLE_SECONDS,
    Observed,
    observe_aggregates,
    settled,
)
from mssql_cdc.tables.reference import TableOutOfReach, is_local, open_table
from mssql_cdc.tables.refs import (
    KIND_PROPERTY,
    TableRef,
    ensure_table,
    open_for_read,
    open_for_write,
    recorded_sql_types,
    require_distinct,
    table_properties,
    table_ref,
)
from mssql_cdc.tables.retry import retry_on_conflict
from mssql_cdc.tables.session import check_session, kind_of
from mssql_cdc.tables.shapes import check_append_schema, needs_column_mapping, spark_type_name
from mssql_cdc.tables.store_conf import store_settings
from mssql_cdc.tables.writes import allow_type_widening, append, append_idempotent, txn_version

__all__ = [
    "CONTROL",
    "FACTS",
    "KIND_PROPERTY",
    "OBSERVATION_SETTLE_SECONDS",
    "Commit",
    "CommitSummary",
    "LogHead",
    "LogReader",
    "Observed",
    "TableOutOfReach",
    "TableRef",
    "allow_type_widening",
    "append",
    "append_idempotent",
    "append_rows",
    "check_append_schema",
    "check_session",
    "columns_of",
    "commit_frame",
    "ensure_table",
    "find_commits",
    "is_local",
    "kind_of",
    "library_columns",
    "merge_into",
    "needs_column_mapping",
    "newest_version",
    "observe_aggregates",
    "open_for_read",
    "open_for_write",
    "open_table",
    "quote_identifier",
    "read_commit_rows",
    "read_rows",
    "recorded_sql_types",
    "require_distinct",
    "retry_on_conflict",
    "settled",
    "spark_type_name",
    "sql_string",
    "store_settings",
    "table_properties",
    "table_ref",
    "txn_version",
    "writes_in_process",
]
