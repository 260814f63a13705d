"""A small disk that tests fill and free: a tmpfs of a few MB mounted at a folder of theirs.

Every writer on it meets the real fault, whatever its language: Spark's checkpoint (the JVM's
Hadoop file system), the native state file (C++) and the metrics files (Python) all get
ENOSPC ("No space left on device") from the kernel, not from a wrapper that only Python's
writes would pass through.

    with small_disk(tmp_path / "disk") as disk:
        checkpoint = disk.path / "ckpt"
        ...                # runs write there as on any folder
        disk.fill()        # the next byte written anywhere on it is ENOSPC
        ...                # a run that must fail and say so
        disk.free()        # the space is back; the files written before are untouched
        disk.read_only()   # every write on it is EROFS ("Read-only file system"), root's too
        disk.writable()    # read-write again

Mounting needs root (CAP_SYS_ADMIN): `mountable()` says whether this process may, and
`small_disk` skips the calling test with the reason when it may not. The filler is one file,
`.filler`, at the disk's root; `fill` grows it until the kernel refuses a byte, `free` removes
it. The mount is taken off when the block ends, lazily if a process still holds a file there
(a JVM's open checkpoint log), so the test's `tmp_path` can be removed.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["FILLER", "SmallDisk", "mountable", "small_disk"]

FILLER = ".filler"
"""The name of the file `fill` grows at the disk's root and `free` removes."""
_CHUNK = 1 << 20


def mountable() -> bool:
    """Whether this process may mount a tmpfs (root, and a `mount` command on the PATH)."""
    return os.geteuid() == 0 and shutil.which("mount") is not None


@dataclass(frozen=True)
class SmallDisk:
    """A mounted tmpfs of `size_mb` MB at `path`."""

    path: Path
    size_mb: int

    @property
    def filler(self) -> Path:
        return self.path / FILLER

    def fill(self) -> int:
        """Write the filler until the kernel answers ENOSPC; returns the bytes it took.

        Afterwards no file on the disk can grow by a byte (an empty file or a rename still
        succeeds: they take an inode, not a block).
        """
        written = 0
        block = b"\0" * _CHUNK
        with open(self.filler, "ab", buffering=0) as handle:
            size = len(block)
            while size:
                try:
                    written += handle.write(block[:size])
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    size //= 2  # the last pages: down to one byte
        return written

    def free(self) -> None:
        """Remove the filler: the disk has its space back."""
        self.filler.unlink(missing_ok=True)

    def read_only(self) -> None:
        """Remount the disk read-only: every write on it fails with EROFS, root's too."""
        self._remount("ro")

    def writable(self) -> None:
        """Remount the disk read-write again; its files are as they were."""
        self._remount("rw")

    def _remount(self, mode: str) -> None:
        subprocess.run(
            ["mount", "-o", f"remount,{mode}", str(self.path)], check=True, capture_output=True
        )

    def free_bytes(self) -> int:
        """The bytes still free on the disk (`statvfs`)."""
        stats = os.statvfs(self.path)
        return stats.f_bavail * stats.f_frsize


@contextmanager
def small_disk(path: Path, size_mb: int = 64) -> Iterator[SmallDisk]:
    """Mount a tmpfs of `size_mb` MB at `path` (created if missing) for the block.

    Skips the calling test when this process may not mount (`mountable()`), naming why.
    """
    if not mountable():
        pytest.skip("a full disk needs a tmpfs mount, which needs root and the mount command")
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(path)],
        check=True,
        capture_output=True,
    )
    try:
        yield SmallDisk(path, size_mb)
    finally:
        done = subprocess.run(["umount", str(path)], capture_output=True, check=False)
        if done.returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)
