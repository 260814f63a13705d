"""Type stubs of the native core. The binding converts types and errors, nothing else."""

from types import ModuleType
from typing import Literal, TypedDict

# The recovery enums' names, spelled once: _native.recovery.enum_names() lists the same, in
# the same order (tests/unit/core/test_recovery_enum_names.py).
from mssql_cdc.core.recovery_decision import (
    Action,
    DurationGuard,
    ErrorKind,
    Mode,
    ReuseKind,
    StartSource,
    Step,
)

class _LsnModule(ModuleType):
    @staticmethod
    def normalize(text: str) -> str: ...
    @staticmethod
    def increment(text: str) -> str: ...
    @staticmethod
    def decrement(text: str) -> str: ...
    @staticmethod
    def compare(a: str, b: str) -> int: ...
    @staticmethod
    def zero() -> str: ...
    @staticmethod
    def max() -> str: ...
    @staticmethod
    def fields(text: str) -> tuple[int, int, int]: ...
    @staticmethod
    def from_fields(vlf: int, block: int, slot: int) -> str: ...

lsn: _LsnModule

# Plain-data forms of mssql_cdc.core.checkpoint and mssql_cdc.core.recovery_decision dataclasses.

class OffsetDict(TypedDict):
    lsn: str
    commit_ts: str | None

class StateDict(TypedDict):
    generation: int
    snapshot: OffsetDict | None
    at: str | None
    recovering: OffsetDict | None
    failed_at: str | None

EntryKindName = Literal["folder", "file", "link"]

class GcRemovalDict(TypedDict):
    generation: int
    path: str  # relative to the checkpoint, '/'-separated
    folder: bool

class GcLeftDict(TypedDict):
    path: str
    why: str

class GcPlanDict(TypedDict):
    remove: list[GcRemovalDict]
    kept: list[int]
    left: list[GcLeftDict]

class PathsDict(TypedDict):
    generation: int
    checkpoint: str
    app_id: str
    metrics_path: str
    state_file: str

class _CheckpointModule(ModuleType):
    STATE_FILE_NAME: str
    @staticmethod
    def read_state(checkpoint: str) -> StateDict | None: ...
    @staticmethod
    def write_state(checkpoint: str, state: StateDict) -> None: ...
    @staticmethod
    def replace_state(checkpoint: str, expected: StateDict, state: StateDict) -> bool: ...
    @staticmethod
    def last_committed_offset(spark_checkpoint: str) -> tuple[int, str, str] | None: ...
    @staticmethod
    def has_metadata(spark_checkpoint: str) -> bool: ...
    @staticmethod
    def parse_source_offset(json_text: str, origin: str) -> OffsetDict: ...
    @staticmethod
    def source_offset_json(offset: OffsetDict) -> str: ...
    @staticmethod
    def generation_paths(
        checkpoint: str, app_id: str, generation: int, metrics_path: str | None = None
    ) -> PathsDict: ...
    @staticmethod
    def in_family(row_app_id: str, app_id: str, generation: int) -> bool: ...
    @staticmethod
    def plan_gc(
        live_generation: int,
        keep: int,
        root: list[tuple[str, EntryKindName]],
        generations: list[tuple[str, EntryKindName]],
    ) -> GcPlanDict: ...

checkpoint: _CheckpointModule

class EnumNamesDict(TypedDict):
    mode: list[str]
    action: list[str]
    reuse_kind: list[str]
    start_source: list[str]
    duration_guard: list[str]
    error_kind: list[str]
    step: list[str]

class InstanceDict(TypedDict):
    name: str
    start_lsn: str
    min_lsn: str | None
    min_commit_ts: str | None

class ObservationDict(TypedDict):
    max_lsn: str | None
    instances: list[InstanceDict]

class OpenRowDict(TypedDict):
    generation: int
    mode: Mode
    kind: str
    s: OffsetDict

class CompletionRowDict(TypedDict):
    generation: int
    lsn: OffsetDict

class LossDict(TypedDict):
    low: str
    low_commit_ts: str | None
    instance: str

class StartInputsDict(TypedDict):
    state: StateDict
    last_committed: OffsetDict | None
    has_metadata: bool
    live_batches_in_facts: bool
    bootstrap: bool
    starting_lsn: str | None
    newest_known: OffsetDict | None
    live_checkpoint: str

class StartResultDict(TypedDict):
    start: OffsetDict | None
    source: StartSource

class EstimateDict(TypedDict):
    rows: int | None
    rows_per_second: float | None
    seconds: float | None
    retention_hours: float | None
    fits: bool | None

class DecideInputsDict(TypedDict):
    target: str
    app_id: str
    state: StateDict
    start: OffsetDict | None
    mode: Mode
    observation: ObservationDict
    opens: list[OpenRowDict]
    completions: list[CompletionRowDict]
    newest_whole: OffsetDict | None
    interval_days: float
    now: str
    estimate: EstimateDict
    duration_guard: DurationGuard

class ReuseDict(TypedDict):
    kind: ReuseKind
    offset: OffsetDict | None
    generation: int

class DecisionDict(TypedDict):
    action: Action
    reason: str
    error_kind: ErrorKind
    error_message: str
    target: str
    app_id: str
    generation: int
    next_generation: int
    start: OffsetDict | None
    low: LossDict | None
    lost_from_ts: str | None
    lost_to_ts: str | None
    reuse: ReuseDict
    mode: Mode
    interval_ok: bool
    steps: list[Step]
    warning: str

class ConclusionDict(TypedDict):
    ok: bool
    state_to_write: StateDict
    message: str

class _RecoveryModule(ModuleType):
    @staticmethod
    def enum_names() -> EnumNamesDict: ...
    @staticmethod
    def lost(x: str, observation: ObservationDict) -> LossDict | None: ...
    @staticmethod
    def has_range(start: OffsetDict, max_lsn: str | None) -> bool: ...
    @staticmethod
    def resolve_start(inputs: StartInputsDict) -> StartResultDict: ...
    @staticmethod
    def lock_violation(
        mode: Mode,
        opens: list[OpenRowDict],
        completions: list[CompletionRowDict],
        observation: ObservationDict,
        target: str,
        app_id: str,
    ) -> str | None: ...
    @staticmethod
    def estimate_snapshot(
        table_rows: int | None, newest_first: list[tuple[int, int]], retention_hours: float | None
    ) -> EstimateDict: ...
    @staticmethod
    def decide(inputs: DecideInputsDict) -> DecisionDict: ...
    @staticmethod
    def conclude(
        decision: DecisionDict,
        snapshot: OffsetDict,
        fresh: ObservationDict,
        state: StateDict,
        now: str,
        rows: int | None = None,
        duration_ms: int | None = None,
    ) -> ConclusionDict: ...

recovery: _RecoveryModule

class _EmuEngine:
    def __init__(self, path: str) -> None: ...
    @staticmethod
    def create(path: str, start_micros: int, retention_minutes: int, capture: str) -> None: ...
    def create_table(
        self, table: str, columns: list[tuple[str, str]], primary_key: list[str]
    ) -> None: ...
    def enable_cdc(
        self,
        table: str,
        capture_instance: str | None,
        captured_columns: list[str] | None,
        role_name: str | None = None,
    ) -> str: ...
    def create_user(self, name: str, roles: list[str]) -> None: ...
    def add_role_member(self, role: str, user: str) -> None: ...
    def disable_cdc(self, capture_instance: str) -> None: ...
    def add_column(self, table: str, column: str, sql_type: str, at: int | None) -> str: ...
    def drop_column(self, table: str, column: str, at: int | None) -> str: ...
    def alter_column(self, table: str, column: str, sql_type: str, at: int | None) -> str: ...
    def commit(self, changes: object, at: int | None) -> str: ...
    def commit_many(self, transactions: object, at: list[int | None]) -> list[str]: ...
    def idle(self, at: int | None) -> str: ...
    def capture(self) -> str | None: ...
    def drain(self) -> str | None: ...
    def pending_capture(self) -> int: ...
    def cleanup(self, capture_instance: str, low_water_mark: str) -> None: ...
    def run_cleanup_job(self, retention_minutes: int | None) -> None: ...
    def begin(self, at: int | None) -> int: ...
    def execute(self, txn: int, changes: object) -> None: ...
    def commit_open(self, txn: int, at: int | None) -> str: ...
    def rollback(self, txn: int) -> None: ...
    def rollback_all(self) -> None: ...
    def setting(self, name: str) -> str: ...
    def configure(self, name: str, value: str) -> None: ...
    def last_time(self) -> int: ...
    def add_hook(
        self,
        kind: str,
        read_kind: str,
        capture_instance: str,
        mark: str | None,
        after_rows: int,
        changes: object,
        at: int | None,
    ) -> None: ...
    def pending_hooks(self) -> list[dict[str, object]]: ...
    def clear_hooks(self) -> int: ...
    def workload(
        self,
        table: str,
        rate: float,
        duration_seconds: float,
        start: int | None,
        seed: int,
        insert_weight: int,
        update_weight: int,
        delete_weight: int,
        min_rows: int,
        max_rows: int,
        idle_every_seconds: float,
        cleanup_every_seconds: float,
    ) -> dict[str, object]: ...

class _EmuReader:
    def __init__(self, path: str) -> None: ...
    def act_as(self, user: str | None) -> None: ...
    def set_isolation(self, level: str, lock_timeout_ms: int) -> None: ...
    def may_read(self, capture_instance: str) -> bool: ...
    def begin_snapshot(self) -> None: ...
    def end_snapshot(self) -> None: ...
    def in_snapshot(self) -> bool: ...
    def max_lsn(self) -> str | None: ...
    def max_commit_lsn(self) -> str | None: ...
    def min_lsn(self, capture_instance: str) -> str | None: ...
    def lsn_to_time(self, lsn: str) -> int | None: ...
    def lsn_to_utc(self, lsn: str) -> int | None: ...
    def time_at_or_below(self, lsn: str) -> int | None: ...
    def time_to_lsn(self, relation: str, micros: int) -> str | None: ...
    def nth_commit_after(self, after: str, n: int, capture_instance: str | None) -> str | None: ...
    def split_points(
        self, capture_instance: str, from_lsn: str | None, to_lsn: str | None, n: int
    ) -> list[tuple[str, int]]: ...
    def read_changes(
        self,
        capture_instance: str,
        from_lsn: str | None,
        to_lsn: str | None,
        columns: list[str] | None,
        include_command_id: bool,
        include_update_mask: bool,
        row_filter: str,
        batch_rows: int,
        batch_bytes: int,
        lsn_format: str,
        inspect: bool,
    ) -> object: ...
    def read_table(
        self,
        table: str,
        lo: object,
        hi: object,
        columns: list[str] | None,
        key_columns: list[str] | None,
        batch_rows: int,
        batch_bytes: int,
        inspect: bool,
    ) -> object: ...
    def captured_columns(self, capture_instance: str) -> list[dict[str, object]]: ...
    def ddl_history(
        self, capture_instance: str, after: str, upto: str
    ) -> list[dict[str, object]]: ...
    def capture_instances(self, table: str) -> list[dict[str, object]]: ...
    def resolve_instance(self, capture_instance: str) -> dict[str, object]: ...
    def table_info(self, table: str) -> dict[str, object]: ...
    def key_extent(self, table: str, key_columns: list[str] | None) -> dict[str, object] | None: ...
    def key_tiles(
        self, table: str, n: int, rows_per_tile: int, key_columns: list[str] | None
    ) -> list[tuple[object, ...]]: ...
    def next_key(
        self, table: str, after: object, key_columns: list[str] | None
    ) -> tuple[object, ...] | None: ...
    def key_buckets(
        self, table: str, n: int, lo: int | None, hi: int | None, key_columns: list[str] | None
    ) -> list[tuple[int, int, int]]: ...
    def statistics(
        self, table: str, auto_update: bool = True, build: bool = False
    ) -> dict[str, object] | None: ...
    def lsn_time_mapping(self) -> list[dict[str, object]]: ...
    def server_time_zone(self) -> str: ...
    def tables(self) -> list[str]: ...

class _EmuModule(ModuleType):
    Engine: type[_EmuEngine]
    Reader: type[_EmuReader]
    # The row digest (core.row_digest) of each row of a pyarrow record batch, natively.
    @staticmethod
    def batch_digests(batch: object) -> list[int]: ...
    # (rows, their row digests summed modulo 2**64) of a pyarrow record batch, natively.
    @staticmethod
    def batch_tile(batch: object) -> tuple[int, int]: ...

emu: _EmuModule

class _TdsServer:
    def __init__(
        self,
        path: str,
        host: str,
        port: int,
        database: str,
        max_connections: int,
        faults: list[tuple[str, str, str, int, int, int, int, int]] = ...,
        tls: bool = False,
        login: tuple[str, bytes, bytes, int] | None = None,
        access_token: tuple[bytes, int | None] | None = None,
        log_statements: str = "",
    ) -> None: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def database(self) -> str: ...
    @property
    def certificate_pem(self) -> str: ...
    def live_connections(self) -> int: ...
    def stop(self) -> None: ...

class _TdsModule(ModuleType):
    Server: type[_TdsServer]

tds: _TdsModule
