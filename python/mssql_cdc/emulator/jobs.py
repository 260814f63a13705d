"""JobClock: runs a file's scheduled jobs on the wall clock while a process serves it.

The engine runs due jobs only when it is called, never on a timer of its own, so a file whose
clock follows the wall clock needs a caller once in a while when nothing else writes:
`mssql-cdc emulator serve` starts one of these. A file without jobs is left alone, its clock
unmoved.
"""

from __future__ import annotations

import os
import threading

from mssql_cdc.emulator._engine import Emulator
from mssql_cdc.errors import BusyError

TICK_SECONDS = 1.0
"""How often the clock advances: finer than the shortest polling interval (1 s)."""


def has_jobs(settings: dict[str, object]) -> bool:
    """Whether a file's settings schedule a capture or cleanup job."""
    capture_job = settings["capture"] == "manual" and settings["polling_interval_seconds"]
    return bool(capture_job) or settings["cleanup_job_time"] is not None


class JobClock:
    """A daemon thread advancing the file's clock to now every `tick` seconds; `stop()` ends it."""

    def __init__(self, path: str | os.PathLike[str], *, tick: float = TICK_SECONDS) -> None:
        self._path = path
        self._tick = tick
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="emulator-jobs", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with Emulator.open(self._path) as emu:  # its own connection: one object per thread
            while not self._stopping.wait(self._tick):
                if not has_jobs(emu.settings()):
                    continue
                try:
                    emu.advance()
                except BusyError:
                    continue  # another writer holds the file; the next tick catches up

    def stop(self) -> None:
        """Ends the thread and waits for it."""
        self._stopping.set()
        self._thread.join()
