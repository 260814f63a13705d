"""The migration lists against the creation code, and the spec's names for them, without a JVM."""

from __future__ import annotations

import pytest

from mssql_cdc.tables import definitions as schemas
from mssql_cdc.tables import refs as tables
from mssql_cdc.tables.migrations import Migration

# The spec's migration names, in order (20-sink-and-tables.md, section 6).
SPEC_NAMES = {
    "bronze": ["snapshot_columns"],
    "facts": [
        "read_metrics",
        "retention_headroom",
        "snapshot_events",
        "lag_metrics",
        "end_offset",
        "source_events",
        "chunked_snapshot_events",
        "snapshot_plans_and_modes",
        "full_snapshot_opens",
        "skipped_changes",
        "possible_skips",
    ],
    "control": ["silver_position", "open_snapshots", "loss_gap_verdict"],
    "silver": [],
}
BASE_COLUMNS = {
    "facts": [
        "app_id", "generation", "batch_id", "rows", "min_lsn", "max_lsn", "min_commit_ts",
        "max_commit_ts", "deletes", "inserts", "updates", "started_at", "duration_ms", "target",
        "written_at",
    ],
    "control": ["table_name", "finalized_until", "end_lsn", "end_commit_ts", "updated_at"],
    "bronze": [
        "_capture_instance", "_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts",
        "_batch_id",
    ],
}  # fmt: skip


@pytest.mark.parametrize("kind", schemas.KINDS)
def test_each_kind_has_the_spec_migrations_in_order(kind: schemas.TableKind) -> None:
    assert [m.name for m in tables.migrations_for(kind)] == SPEC_NAMES[kind]


def test_the_seed_numbers_of_facts_migrations_hold() -> None:
    facts = tables.migrations_for("facts")
    assert {c.name for c in facts[3 - 1].adds} == {"event", "lost_from_ts", "lost_to_ts"}
    assert set(facts[10 - 1].comments or {}) == {
        "event", "lost_from_ts", "lost_to_ts", "detail", "batch_id"
    }  # fmt: skip
    assert facts[10 - 1].table_comment is not None
    assert set(facts[11 - 1].comments or {}) == {"event", "lost_from_ts", "detail"}


def newest_texts(migrations: list[Migration]) -> dict[str, tuple[str | None, str]]:
    """Column -> (type if a migration added it, the text of the newest migration setting it)."""
    found: dict[str, tuple[str | None, str]] = {}
    for migration in migrations:
        for column in migration.adds:
            found[column.name] = (column.type, column.comment)
        for name, text in (migration.comments or {}).items():
            found[name] = (found.get(name, (None, ""))[0], text)
    return found


@pytest.mark.parametrize("kind", ["facts", "control", "bronze"])
def test_creation_comments_equal_the_newest_migration_text(kind: schemas.TableKind) -> None:
    created = {c.name: c for c in schemas.library_columns(kind)}
    for name, (added_type, text) in newest_texts(tables.migrations_for(kind)).items():
        assert created[name].comment == text, name
        if added_type is not None:
            assert created[name].type == added_type, name


@pytest.mark.parametrize("kind", ["facts", "control", "bronze"])
def test_base_columns_plus_added_ones_are_the_created_columns(kind: schemas.TableKind) -> None:
    added = [c.name for m in tables.migrations_for(kind) for c in m.adds]
    created = [c.name for c in schemas.library_columns(kind)]
    assert sorted(BASE_COLUMNS[kind] + added) == sorted(created)


def test_the_facts_table_comment_is_migration_10s() -> None:
    assert tables.migrations_for("facts")[9].table_comment == schemas.FACTS_COMMENT


def test_every_library_column_has_a_comment_and_times_are_timestamp_ntz() -> None:
    for kind in schemas.KINDS:
        for column in schemas.library_columns(kind):
            assert column.comment.strip(), (kind, column.name)
            if column.name.endswith(("_ts", "_at")) or column.name == "finalized_until":
                assert column.type == "TIMESTAMP_NTZ", column.name
