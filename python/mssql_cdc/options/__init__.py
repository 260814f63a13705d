"""The source options: raw option reading, the typed `SourceConfig`, connection strings,
declared columns and SQL Server identifiers."""

from __future__ import annotations

from mssql_cdc.options.config import (
    KNOWN_OPTIONS,
    Backend,
    DurationGuard,
    IsolationLevel,
    OnDataLoss,
    SchemaChangePolicy,
    SnapshotMode,
    SourceConfig,
    StreamSnapshotMode,
)
from mssql_cdc.options.connection_string import ConnectionString
from mssql_cdc.options.credentials import CREDENTIAL_OPTIONS, Credentials
from mssql_cdc.options.declared_columns import (
    METADATA_COLUMNS,
    KeyBound,
    SnapshotChunk,
    check_chunk_order,
    parse_chunks,
)
from mssql_cdc.options.identifiers import change_table, check_collation, quote_name, two_part_name
from mssql_cdc.options.reader import given_option, is_uri
from mssql_cdc.options.store_folder import StoreFolder, open_folder, store_filesystem

__all__ = [
    "CREDENTIAL_OPTIONS",
    "KNOWN_OPTIONS",
    "METADATA_COLUMNS",
    "Backend",
    "ConnectionString",
    "Credentials",
    "DurationGuard",
    "IsolationLevel",
    "KeyBound",
    "OnDataLoss",
    "SchemaChangePolicy",
    "SnapshotChunk",
    "SnapshotMode",
    "SourceConfig",
    "StoreFolder",
    "StreamSnapshotMode",
    "change_table",
    "check_chunk_order",
    "check_collation",
    "given_option",
    "is_uri",
    "open_folder",
    "parse_chunks",
    "quote_name",
    "store_filesystem",
    "two_part_name",
]
