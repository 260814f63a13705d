"""The source options file the verbs that run a stream's work take (`--options`)."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["read_options"]


def read_options(path: str) -> dict[str, object]:
    """The source options of a job's JSON file, as `stream()` takes them.

    Raises:
        ValueError: the file cannot be read or holds no JSON object.
    """
    try:
        loaded = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"--options {path}: cannot read a JSON object ({exc})") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"--options {path}: the file must hold one JSON object of options")
    return loaded
