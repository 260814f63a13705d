"""`SourceConfig.to_options()` is the inverse of `SourceConfig.from_options()`.

Spark's readers take text options, so the stream and every snapshot read hand the parsed config
back as text; these tests check that the text parses to the very config it was written from.
The generators build configs and option text by hand, never through `to_options`.
"""

from __future__ import annotations

import json
import string
from typing import TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.options.config import (
    BACKENDS,
    KNOWN_OPTIONS,
    MAX_ARROW_BATCH_SIZE,
    MAX_CONNECT_TIMEOUT,
    MAX_LOCK_TIMEOUT_MS,
    MAX_PARTITIONS,
    SourceConfig,
)
from mssql_cdc.options.connection_string import MSSQL_PYTHON_KEYS as MSSQL_PYTHON_KEY_NAMES
from mssql_cdc.options.connection_string import ConnectionString
from mssql_cdc.options.declared_columns import METADATA_COLUMNS, DeclaredColumn, SnapshotChunk
from mssql_cdc.snapshot.read import read_config

T = TypeVar("T")
SETTINGS = settings(derandomize=True, database=None, max_examples=120, deadline=None)
SECRET = "\u2603pw"  # every generated password starts with it; no other generator makes it

AWKWARD_FILE_NAMES = ("e.db", "with space.db", "a;b=c.db", "{braced}.db", "x;{y}= z.db")
SIMPLE_TYPES = ("BOOLEAN", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE")
SIMPLE_TYPES += ("TIMESTAMP_NTZ", "TIMESTAMP", "STRING", "BINARY")
TYPE_SPELLINGS = {"INT": ("INT", "int", "Integer"), "FLOAT": ("FLOAT", "real", "Real")}
TRUE_WORDS = ("true", "1", "yes", "y")
FALSE_WORDS = ("false", "0", "no", "n")
NO_CONTROL = st.characters(
    blacklist_categories=("Cs",),
    blacklist_characters="".join(map(chr, [*range(32), 127])) + SECRET[0],
)


@pytest.fixture(scope="module")
def emulator_files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Existing files with ';', '=', braces and spaces in their paths (the config checks that
    an emulator file exists)."""
    folder = tmp_path_factory.mktemp("emulator files")
    paths = []
    for name in AWKWARD_FILE_NAMES:
        path = folder / name
        path.write_bytes(b"")
        paths.append(str(path))
    return paths


def trimmed(max_size: int) -> st.SearchStrategy[str]:
    """Text as the option reader leaves it: non-empty, no control character, trimmed."""
    edge = NO_CONTROL.filter(lambda c: not c.isspace())
    inner = st.text(NO_CONTROL, max_size=max_size - 2)
    return edge | st.tuples(edge, inner, edge).map("".join)


def any_case(word: str) -> st.SearchStrategy[str]:
    flips = st.lists(st.booleans(), min_size=len(word), max_size=len(word))
    return flips.map(
        lambda f: "".join(c.upper() if u else c.lower() for c, u in zip(word, f, strict=True))
    )


def padded(value: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    space = st.sampled_from(["", " ", "\t", "  "])
    return st.tuples(space, value, space).map("".join)


CAPTURE_INSTANCES = trimmed(100)
NAMES = st.text(NO_CONTROL, min_size=1, max_size=20).filter(
    lambda n: n.lower() not in METADATA_COLUMNS
)
LSN_VALUES = st.integers(0, 2**80 - 1)
CANONICAL_LSNS = LSN_VALUES.map(lambda n: f"0x{n:020X}")
COUNTS = st.integers(1, 2**31 - 1)
TIMEOUTS = st.integers(1, MAX_CONNECT_TIMEOUT)
PARTITIONS = st.integers(1, MAX_PARTITIONS)
BATCH_SIZES = st.integers(1, MAX_ARROW_BATCH_SIZE)
PATH_STARTS = st.sampled_from(["/", "./", "C:\\", "C:/", "/Volumes/x y/"])
LOCAL_PATHS = st.tuples(PATH_STARTS, st.just("") | trimmed(20)).map("".join)
ZONE_NAMES = trimmed(128).filter(lambda z: z.lower() != "auto" and z.upper() != "UTC")
TIME_ZONES = st.sampled_from(["auto", "UTC", "Europe/Paris"]) | ZONE_NAMES
NUMBERS = st.integers() | st.floats(allow_nan=False, allow_infinity=False)
TEXTS = st.text(max_size=8)
DECIMALS = st.integers(1, 38).flatmap(lambda p: st.tuples(st.just(p), st.integers(0, p)))


def connection_texts(keys: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """ODBC-style text with ';', '=', braces and spaces in its values, and always a password."""
    values = st.text(st.sampled_from(string.ascii_letters + ";={} \t,\u00e9"), max_size=12)

    @st.composite
    def build(draw: st.DrawFn) -> str:
        pairs = draw(st.lists(st.tuples(keys, values), max_size=4))
        pairs.append((draw(any_case("pwd")), SECRET + draw(values)))
        pairs = draw(st.permutations(pairs))
        parts = []
        for key, value in pairs:
            braced = any(c in value for c in ";{}") or value != value.strip()
            if braced or draw(st.booleans()):
                value = "{" + value.replace("}", "}}") + "}"
            parts.append(f"{key}={value}")
        text = draw(st.sampled_from([";", "; "])).join(parts)
        return text + draw(st.sampled_from(["", ";"]))

    return build()


LETTERS = st.sampled_from(string.ascii_letters)
ODBC_KEYS = LETTERS | st.tuples(
    LETTERS, st.text(st.sampled_from(string.ascii_letters + " _-."), max_size=10), LETTERS
).map("".join)
PYMSSQL_KEYS = st.sampled_from(["Server", "database", "UID", "App", "SERVER"])
# mssql-python refuses a key it does not know, and so does the config.
MSSQL_PYTHON_KEYS = st.sampled_from(MSSQL_PYTHON_KEY_NAMES).flatmap(any_case)


def connection_strings(backend: str) -> st.SearchStrategy[ConnectionString]:
    keys = {"pymssql": PYMSSQL_KEYS, "mssql-python": MSSQL_PYTHON_KEYS}.get(backend, ODBC_KEYS)
    return connection_texts(keys).map(ConnectionString.parse)


def unique_names(max_size: int) -> st.SearchStrategy[list[str]]:
    return st.lists(NAMES, min_size=1, max_size=max_size, unique_by=str.lower)


def declared_columns() -> st.SearchStrategy[tuple[DeclaredColumn, ...]]:
    types = st.sampled_from(SIMPLE_TYPES) | DECIMALS.map(lambda ps: f"DECIMAL({ps[0]},{ps[1]})")
    return unique_names(6).flatmap(
        lambda names: st.tuples(*(types.map(lambda t, n=n: DeclaredColumn(n, t)) for n in names))
    )


def snapshot_chunks() -> st.SearchStrategy[tuple[SnapshotChunk, ...]]:
    """Valid chunk lists: consecutive ranges between sorted distinct keys, open ends or not."""

    def order(key: object) -> tuple[object, ...]:
        parts = key if isinstance(key, tuple) else (key,)
        return tuple((p is not None, p) for p in parts)  # NULL parts first, as SQL Server

    @st.composite
    def build(draw: st.DrawFn) -> tuple[SnapshotChunk, ...]:
        width = draw(st.integers(1, 3))
        kinds = [draw(st.sampled_from([NUMBERS, TEXTS])) for _ in range(width)]
        key: st.SearchStrategy[object] = (
            kinds[0] if width == 1 else st.tuples(*(st.none() | k for k in kinds))
        )
        points: list[object] = sorted(
            draw(st.lists(key, min_size=1, max_size=5, unique_by=order)), key=order
        )
        below, above = draw(st.booleans()), draw(st.booleans())
        edges = [None] * below + points + [None] * (above or len(points) == 1)
        numbers = draw(
            st.lists(st.integers(0, 2**31 - 1), min_size=len(edges) - 1, max_size=len(edges) - 1,
                     unique=True)
        )  # fmt: skip
        return tuple(
            SnapshotChunk(n, lo, hi) for n, lo, hi in zip(numbers, edges, edges[1:], strict=False)
        )

    return build()


def optional(strategy: st.SearchStrategy[T]) -> st.SearchStrategy[T | None]:
    return st.none() | strategy


@st.composite
def configs(draw: st.DrawFn, emulator_files: list[str]) -> SourceConfig:
    """A valid config built field by field, every field drawn from its whole domain."""
    backend = draw(st.sampled_from(BACKENDS))
    connection: ConnectionString | None = draw(connection_strings(backend))
    emulator_path = None
    if backend == "emulator":
        connection = draw(optional(st.just(connection)))
        emulator_path = draw(st.sampled_from(emulator_files))
    keys = draw(optional(unique_names(4).map(tuple)))
    fail_on_data_loss = draw(st.booleans())
    modes = ["never", "initial", "when_needed"] if fail_on_data_loss else ["never", "initial"]
    return SourceConfig(
        capture_instance=draw(CAPTURE_INSTANCES),
        backend=backend,
        connection_string=connection,
        emulator_path=emulator_path,
        connect_timeout=draw(TIMEOUTS),
        starting_lsn=draw(st.sampled_from(["earliest", "latest"]) | CANONICAL_LSNS),
        max_commits_per_batch=draw(optional(COUNTS)),
        num_partitions=draw(optional(PARTITIONS)),
        fail_on_data_loss=fail_on_data_loss,
        metrics_path=draw(optional(LOCAL_PATHS)),
        include_command_id=draw(st.booleans()),
        arrow_batch_size=draw(BATCH_SIZES),
        columns=draw(optional(declared_columns())),
        source_time_zone=draw(TIME_ZONES),
        schema_change_policy=draw(st.sampled_from(["classify", "fail"])),
        snapshot_lsn=draw(optional(CANONICAL_LSNS)),
        snapshot_chunks=draw(optional(snapshot_chunks())),
        snapshot_keys=keys,
        isolation_level=draw(st.sampled_from(["readCommitted", "snapshot"])),
        lock_timeout_ms=draw(optional(st.integers(0, MAX_LOCK_TIMEOUT_MS))),
        snapshot_duration_guard=draw(st.sampled_from(["warn", "refuse", "off"])),
        snapshot_mode=draw(st.sampled_from(modes)),
    )


def count_text(low: int = 1, high: int = 2**31 - 1) -> st.SearchStrategy[object]:
    """A count as a caller may write it: with leading zeros, or as a Python int."""
    number = st.integers(low, high)
    zeros = st.sampled_from(["", "0", "000"])
    return number | st.tuples(zeros, number.map(str)).map("".join)


def boolean_text() -> st.SearchStrategy[object]:
    return st.booleans() | st.sampled_from(TRUE_WORDS + FALSE_WORDS).flatmap(any_case)


def lsn_text() -> st.SearchStrategy[str]:
    """1 to 20 hex digits in any case, with or without 0x."""
    digits = st.text(st.sampled_from(string.hexdigits), min_size=1, max_size=20)
    return st.tuples(st.sampled_from(["", "0x", "0X"]), digits).map("".join)


def columns_text() -> st.SearchStrategy[str]:
    """`name TYPE, ...` with backquoted or bare names, type aliases and odd spacing."""

    @st.composite
    def build(draw: st.DrawFn) -> str:
        entries = []
        for name in draw(unique_names(6)):
            bare = all(c in string.ascii_letters + "_" for c in name)
            if not bare or draw(st.booleans()):
                name = "`" + name.replace("`", "``") + "`"
            kind = draw(st.sampled_from((*SIMPLE_TYPES, "DECIMAL")))
            if kind == "DECIMAL":
                p, s = draw(DECIMALS)
                forms = ["decimal", f"DECIMAL({p})", f"Decimal ( {p} , {s} )", f"DECIMAL({p},{s})"]
                type_text = draw(st.sampled_from(forms))
            else:
                type_text = draw(st.sampled_from(TYPE_SPELLINGS.get(kind, (kind, kind.lower()))))
            entries.append(name + draw(st.sampled_from([" ", "\t", "  "])) + type_text)
        return draw(st.sampled_from([",", ", ", " ,  "])).join(entries)

    return build()


def json_text(value: st.SearchStrategy[object]) -> st.SearchStrategy[str]:
    layouts = st.sampled_from([(",", ":"), (", ", ": ")])
    return st.tuples(value, layouts, st.none() | st.just(1), st.booleans()).map(
        lambda v: json.dumps(v[0], separators=v[1], indent=v[2], ensure_ascii=v[3])
    )


def chunk_lists() -> st.SearchStrategy[object]:
    def as_json(chunk: SnapshotChunk) -> list[object]:
        def bound(b: object) -> object:
            return list(b) if isinstance(b, tuple) else b

        return [chunk.chunk, bound(chunk.lo), bound(chunk.hi)]

    return snapshot_chunks().map(lambda chunks: [as_json(c) for c in chunks])


@st.composite
def raw_options(draw: st.DrawFn, emulator_files: list[str]) -> dict[str, object]:
    """Options as a caller may write them: any case, padded, aliases, optional ones left out."""
    backend = draw(st.sampled_from(BACKENDS))
    given: dict[str, st.SearchStrategy[object]] = {"captureInstance": CAPTURE_INSTANCES}
    if backend != "mssql-python" or draw(st.booleans()):
        given["backend"] = any_case(backend)
    keys = {"pymssql": PYMSSQL_KEYS, "mssql-python": MSSQL_PYTHON_KEYS}.get(backend, ODBC_KEYS)
    connection = connection_texts(keys)
    if backend != "emulator" or draw(st.booleans()):
        given["connectionString"] = connection
    if backend == "emulator":
        given["emulatorPath"] = st.sampled_from(emulator_files)
    maybe: dict[str, st.SearchStrategy[object]] = {
        "connectTimeout": count_text(high=MAX_CONNECT_TIMEOUT),
        "startingLsn": any_case("earliest") | any_case("latest") | lsn_text(),
        "maxCommitsPerBatch": count_text(),
        "numPartitions": any_case("auto") | count_text(high=MAX_PARTITIONS),
        "failOnDataLoss": boolean_text(),
        "metricsPath": LOCAL_PATHS,
        "includeCommandId": boolean_text(),
        "arrowBatchSize": count_text(high=MAX_ARROW_BATCH_SIZE),
        "columns": columns_text(),
        "sourceTimeZone": any_case("auto") | any_case("utc") | TIME_ZONES,
        "schemaChangePolicy": any_case("classify") | any_case("fail"),
        "snapshotLsn": lsn_text(),
        "snapshotChunks": json_text(chunk_lists()),
        "snapshotKeys": json_text(unique_names(4)),
        "isolationLevel": any_case("readCommitted") | any_case("snapshot"),
        "lockTimeoutMs": count_text(low=0),
        "snapshotDurationGuard": any_case("warn") | any_case("refuse") | any_case("off"),
        "snapshotOnSwitch": boolean_text(),
        # when_needed refuses failOnDataLoss=false: tests/unit/options/test_config.py
        "snapshotMode": any_case("never") | any_case("initial"),
        "someSparkOption": st.text(max_size=5),  # unknown: warned about, then ignored
    }
    given.update({k: v for k, v in maybe.items() if draw(st.booleans())})
    options: dict[str, object] = {}
    for name, value in given.items():
        drawn = draw(value)
        spelled = draw(st.sampled_from([name, name.lower(), name.upper(), f" {name} "]))
        options[spelled] = draw(padded(st.just(drawn))) if isinstance(drawn, str) else drawn
    return options


@SETTINGS
@given(data=st.data())
def test_a_config_written_as_options_parses_back_to_itself(
    emulator_files: list[str], data: st.DataObject
) -> None:
    config = data.draw(configs(emulator_files))
    assert SourceConfig.from_options(config.to_options()) == config


@SETTINGS
@given(data=st.data())
def test_options_as_a_caller_writes_them_survive_a_second_trip_unchanged(
    emulator_files: list[str], data: st.DataObject
) -> None:
    parsed = SourceConfig.from_options(data.draw(raw_options(emulator_files)))
    assert SourceConfig.from_options(parsed.to_options()) == parsed


@settings(SETTINGS, max_examples=40)
@given(data=st.data())
def test_the_repr_of_a_config_never_shows_its_password(
    emulator_files: list[str], data: st.DataObject
) -> None:
    config = data.draw(configs(emulator_files))
    assert SECRET not in repr(config)
    if config.connection_string is not None:
        assert SECRET in config.to_options()["connectionString"]  # Spark's reader needs it


def test_options_are_written_in_their_canonical_spelling_defaults_included(
    emulator_files: list[str],
) -> None:
    config = SourceConfig.from_options(
        {
            "CAPTUREINSTANCE": " dbo_orders ",
            "backend": "Emulator",
            "emulatorPath": emulator_files[2],
            "startingLsn": "2a000001f00003",
            "numPartitions": "AUTO",
            "failOnDataLoss": "Y",
            "lockTimeoutMs": "007",
            "sourceTimeZone": "utc",
            "columns": "id integer, `a``b c` decimal(5)",
            "snapshotKeys": '[ "id" ]',
            "snapshotChunks": '[[0, null, [1, "x"]], [1, [1, "x"], null]]',
        }
    )
    assert config.to_options() == {
        "captureInstance": "dbo_orders",
        "backend": "emulator",
        "emulatorPath": emulator_files[2],
        "connectTimeout": "30",
        "startingLsn": "0x0000002A000001F00003",
        "failOnDataLoss": "true",
        "includeCommandId": "true",
        "arrowBatchSize": "10000",
        "columns": "`id` INT, `a``b c` DECIMAL(5,0)",
        "sourceTimeZone": "UTC",
        "schemaChangePolicy": "classify",
        "snapshotChunks": '[[0, null, [1, "x"]], [1, [1, "x"], null]]',
        "snapshotKeys": '["id"]',
        "isolationLevel": "readCommitted",
        "lockTimeoutMs": "7",
        "snapshotDurationGuard": "warn",
        "snapshotOnSwitch": "false",
        "snapshotMode": "never",
    }


def test_a_config_with_every_option_set_writes_every_known_option(
    emulator_files: list[str],
) -> None:
    options = {
        "captureInstance": "dbo_orders",
        "backend": "emulator",
        "emulatorPath": emulator_files[0],
        "connectionString": "Server=x;PWD={a;b}",
        "maxCommitsPerBatch": "3",
        "numPartitions": "2",
        "metricsPath": "/m",
        "columns": "id INT",
        "snapshotLsn": "0x1",
        "snapshotChunks": "[[0, null, null]]",
        "snapshotKeys": '["id"]',
        "lockTimeoutMs": "0",
        "snapshotMode": "when_needed",
        "gapDeletesFrom": "/t/delivered",
    }
    written = set(SourceConfig.from_options(options).to_options())
    # The credential options log in to a server: each login is a config of its own.
    for login in (
        {"user": "u", "password": " p "},
        {"accessToken": "t"},
        {"accessTokenProvider": "m:f"},
    ):
        tsql = {"captureInstance": "dbo_orders", "connectionString": "Server=x", **login}
        written |= set(SourceConfig.from_options(tsql).to_options())
    assert written == set(KNOWN_OPTIONS)


def test_a_snapshot_read_takes_the_source_but_not_the_streams_start_or_folders(
    emulator_files: list[str],
) -> None:
    stream = SourceConfig.from_options(
        {
            "captureInstance": "dbo_orders",
            "backend": "emulator",
            "emulatorPath": emulator_files[1],
            "startingLsn": "latest",
            "maxCommitsPerBatch": "5",
            "metricsPath": "/m/stream",
            "snapshotDurationGuard": "refuse",
            "snapshotKeys": '["id"]',
            "lockTimeoutMs": "100",
        }
    )
    chunks = (SnapshotChunk(3, None, 10), SnapshotChunk(4, 10, None))
    stamp = "0x0000002A000001F00003"
    read = SourceConfig.from_options(
        read_config(stream, stamp, chunks=chunks, metrics_path="/m/b").to_options()
    )
    assert (read.snapshot_lsn, read.snapshot_chunks, read.metrics_path) == (stamp, chunks, "/m/b")
    assert (read.starting_lsn, read.max_commits_per_batch) == ("earliest", None)
    assert read.snapshot_duration_guard == "warn"
    assert (read.snapshot_keys, read.lock_timeout_ms) == (("id",), 100)
    assert (read.emulator_path, read.capture_instance) == (emulator_files[1], "dbo_orders")
    whole = SourceConfig.from_options(read_config(stream, stamp).to_options())
    assert (whole.snapshot_chunks, whole.metrics_path) == (None, None)
