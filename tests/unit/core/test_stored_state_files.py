"""The stored states of tests/compat/ can fail their resume: a planted incompatibility in a
stored state file is refused by the library, naming the file and what to do.

tests/spark/compat/test_stored_states.py resumes each stored story with today's code, and its
first read of a stream's recovery state is the state file. These tests show, without Spark,
that the file each stored story holds reads as the generation its `story.json` records, and
that a version which renamed one of the file's fields (here `snapshot_lsn`) would not resume
that story silently at generation 0 but stop with `StateFileError`, so the compat test would
fail. The oracle is each story's `story.json`, written beside the state when it was stored.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mssql_cdc.core import STATE_FILE_NAME, read_state
from mssql_cdc.errors import StateFileError
from tests.compat.placing import FIXTURES

STORED_STATES = sorted(FIXTURES.glob(f"*/*/ckpt/{STATE_FILE_NAME}"))


def test_every_stored_story_past_generation_0_holds_a_state_file() -> None:
    stories = [json.loads(p.read_text()) for p in FIXTURES.glob("*/*/story.json")]
    past_zero = {(s["version"], s["story"]) for s in stories if s["generation"] > 0}
    assert past_zero, "no stored story ends past generation 0"
    assert {(p.parents[2].name, p.parents[1].name) for p in STORED_STATES} >= past_zero


@pytest.mark.parametrize(
    "state_file", STORED_STATES, ids=lambda p: f"{p.parents[2].name}-{p.parents[1].name}"
)
def test_a_stored_state_file_reads_as_the_generation_its_story_records(state_file: Path) -> None:
    story = json.loads((state_file.parents[1] / "story.json").read_text())

    state = read_state(state_file.parent)

    assert state is not None
    assert state.generation == story["generation"]
    assert state.snapshot is not None
    assert state.snapshot.lsn == json.loads(state_file.read_text())["snapshot_lsn"]


@pytest.mark.parametrize(
    "state_file", STORED_STATES, ids=lambda p: f"{p.parents[2].name}-{p.parents[1].name}"
)
def test_a_stored_state_file_with_a_renamed_field_stops_the_resume_naming_the_file(
    state_file: Path, tmp_path: Path
) -> None:
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    planted = json.loads(state_file.read_text())
    planted["snapshotLsn"] = planted.pop("snapshot_lsn")  # a version that renamed the field
    (checkpoint / STATE_FILE_NAME).write_text(json.dumps(planted))

    with pytest.raises(StateFileError) as refused:
        read_state(checkpoint)

    message = str(refused.value)
    assert message.startswith(f"{checkpoint / STATE_FILE_NAME}: ")
    assert '"snapshot_lsn"' in message
    assert "restore the file or correct it by hand" in message
