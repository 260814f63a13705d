"""Two recoveries of one stream racing on its state file (decision 0615): a run whose view of
the state is stale never writes it; it reads the state again and decides again.

The other run is the real pre-flight too, run to completion at the moment the race needs it,
on the same checkpoint and the same facts and target (one World).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mssql_cdc.core.checkpoint import GenerationState, read_state
from mssql_cdc.core.offsets import StreamOffset
from mssql_cdc.errors import NativeStateError
from mssql_cdc.recovery.preflight import StartingSnapshot, recover
from mssql_cdc.testing import clock
from tests.unit.support.recovery_world import L, Source, World, commit_batch, ts

NOW = "2026-10-05T00:00:00+00:00"
GENERATION_ONE = GenerationState(1, StreamOffset(L(400), ts(400)), NOW)


@dataclass
class RacingWorld(World):
    """A World that runs `race` once, when the hooked step is first reached."""

    race_at: str = ""
    race: Callable[[], None] | None = None
    raced: bool = False
    seen_after_race: list[GenerationState | None] = field(default_factory=list)

    def _fire(self, step: str) -> None:
        if self.raced:  # what any reader of the file, a status call say, would see now
            self.seen_after_race.append(read_state(self.checkpoint))
        if step == self.race_at and self.race is not None:
            race, self.race = self.race, None
            race()
            self.raced = True

    def take_full(
        self, generation: int, lost_from_ts: str | None, lost_to_ts: str | None
    ) -> StartingSnapshot:
        self._fire("take_full")
        return super().take_full(generation, lost_from_ts, lost_to_ts)


class RacingSource(Source):
    """The source face; the pre-flight reads max_lsn right after it read the state."""

    def __init__(self, world: RacingWorld) -> None:
        super().__init__(world)
        self.racing = world

    def max_lsn(self) -> str | None:
        self.racing._fire("max_lsn")
        return super().max_lsn()


@pytest.fixture
def world(tmp_path: Path) -> RacingWorld:
    """Generation 0 with batch 0 committed at LSN 100; cleanup moved min_lsn to 300."""
    commit_batch(tmp_path, 0, 100)
    return RacingWorld(checkpoint=tmp_path)


def other_run(world: RacingWorld, *, then_batch_at: int, next_snapshot: int) -> Callable[[], None]:
    """The other job: a whole recovery on the same stream, then a batch that its generation-1
    query commits; a snapshot taken after it would be at `next_snapshot`."""

    def run() -> None:
        state = recover(world.request(), world, world, Source(world))
        assert state == GENERATION_ONE
        commit_batch(world.checkpoint / "_generations" / "1", 0, then_batch_at)
        world.next_snapshot = next_snapshot

    return run


def run(world: RacingWorld) -> GenerationState:
    with clock(NOW):
        return recover(world.request(), world, world, RacingSource(world))


def test_a_run_that_read_the_state_before_another_recovered_continues_that_generation(
    world: RacingWorld,
) -> None:
    world.race_at, world.race = "max_lsn", other_run(world, then_batch_at=600, next_snapshot=450)
    state = run(world)
    assert state == GENERATION_ONE
    assert read_state(world.checkpoint) == GENERATION_ONE
    assert world.seen_after_race  # this run read the source again after the other committed
    assert all(s == GENERATION_ONE for s in world.seen_after_race)  # never generation 0 again
    assert [k for k, _ in world.journal] == ["open_full", "append", "event"]  # the other's only
    assert (world.checkpoint / "_generations" / "1" / "commits" / "0").exists()


def test_a_run_that_recovered_after_another_committed_keeps_the_others_generation(
    world: RacingWorld,
) -> None:
    # This run wrote recovering; the other run reads it, recovers and commits generation 1
    # while this one is still about to read the table.
    world.race_at, world.race = "take_full", other_run(world, then_batch_at=600, next_snapshot=450)
    state = run(world)
    assert state == GENERATION_ONE  # the other's snapshot, as its event row says
    assert read_state(world.checkpoint) == GENERATION_ONE
    assert all(s == GENERATION_ONE for s in world.seen_after_race)
    kinds = [k for k, _ in world.journal]
    assert kinds.count("append") == 2  # this run's snapshot, at 450, is the wasted one
    assert kinds.count("event") == 1
    [(_, event)] = [e for e in world.journal if e[0] == "event"]
    assert world.completions[0].lsn == StreamOffset(L(400), ts(400))
    assert event[0] == 1


def test_a_run_that_loses_every_round_stops_naming_the_other_job(world: RacingWorld) -> None:
    rounds: list[int] = []

    def moves_on() -> None:
        # Another job changes the state each time this run has read it.
        rounds.append(len(rounds))
        lsn = L(100 + len(rounds))
        (world.checkpoint / "_mssql_cdc_generation.json").write_text(
            f'{{"generation": 0, "recovering": {{"lsn": "{lsn}", "commit_ts": ""}}}}\n'
        )
        world.race = moves_on

    world.race_at, world.race = "max_lsn", moves_on
    with pytest.raises(NativeStateError, match="another job is recovering it too"):
        run(world)
    assert len(rounds) == 5
    assert world.journal == []
