"""One careful reader for the files a user hands the CLI: job files and `--options` files.

A job file is the user's own, but it may come from anywhere (a template, a generator, a
colleague), so it is read as untrusted input (docs/security.md, 'Job and options files'):

- at most `MAX_BYTES` are read (a larger file, or a device that never ends, is refused);
- the text must be UTF-8 (a byte-order mark is allowed); a bad byte is named by its offset;
- a key given twice in one object is refused, naming the key (JSON and YAML alike: both
  parsers would keep the last value and drop the first without a word);
- nesting deeper than `MAX_DEPTH` is refused, however deep (no RecursionError escapes);
- integers must fit 64 bits and floats must be finite (no `NaN`, `Infinity`, `.inf`, no
  5,000-digit numbers);
- YAML aliases may repeat a value, but the job they expand to must stay within `MAX_BYTES`
  (a few hundred bytes of nested aliases would otherwise expand to gigabytes).

Every refusal is a `ConfigError` naming the file and saying what to change.
"""

from __future__ import annotations

import importlib
import json
import math
from typing import Any

from mssql_cdc.errors import ConfigError

__all__ = ["MAX_BYTES", "MAX_DEPTH", "load_object", "quoted"]

MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
MAX_INT = 2**63 - 1
# More digits than any 64-bit integer has; longer literals are refused before int() reads them.
_MAX_DIGITS = 40
_QUOTE_CHARS = 80


def quoted(value: object) -> str:
    """`repr(value)`, cut to a few dozen characters: an error never echoes a huge value."""
    text = repr(value)
    if len(text) <= _QUOTE_CHARS:
        return text
    return f"{text[: _QUOTE_CHARS - 20]}... ({len(text):,} characters)"


class _Refused(Exception):
    """A defect found while parsing, reported once the file's name is at hand."""


def load_object(path: str, *, what: str, holds: str, yaml: bool) -> dict[str, Any]:
    """The one object a job or options file holds, read under the rules of this module.

    `what` names the file in errors ("job file", "--options file"), `holds` what it must hold
    ("one object with a 'streams' list"); `yaml` reads YAML (which needs PyYAML) instead of
    JSON.

    Raises:
        ConfigError: the file cannot be read, breaks a rule above, or holds no object.
    """
    text = _text(path, what)
    try:
        loaded = _yaml(path, what, text) if yaml else _json(text)
    except _Refused as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except RecursionError:
        raise ConfigError(_too_deep(path)) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not a JSON {what} ({exc})") from None
    _check_tree(path, loaded, expanded_bound=yaml)
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: the {what} must hold {holds}")
    return loaded


def _text(path: str, what: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(
            f"{path}: the {what} is larger than {MAX_BYTES // (1024 * 1024)} MiB; a job or options "
            "file this large is not one a person wrote: check that the path names the right file"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: the {what} is not UTF-8 text (byte {data[exc.start]:#04x} at byte offset "
            f"{exc.start}); save it as UTF-8"
        ) from None


def _too_deep(path: str) -> str:
    return f"{path}: nested deeper than {MAX_DEPTH} levels; a job or its options never need to be"


def _json(text: str) -> object:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in items:
            if key in result:
                raise _Refused(
                    f"the key {quoted(key)} appears twice in one object; keep one (JSON readers "
                    "would silently drop the first)"
                )
            result[key] = value
        return result

    def integer(literal: str) -> int:
        if len(literal.lstrip("-")) > _MAX_DIGITS:
            raise _Refused(_big_number(literal))
        return int(literal)

    def constant(name: str) -> float:
        raise _Refused(f"{name} is not a JSON number; write a finite number or a string")

    return json.loads(text, object_pairs_hook=pairs, parse_int=integer, parse_constant=constant)


def _big_number(literal: str) -> str:
    shown = literal if len(literal) <= 30 else f"{literal[:20]}... ({len(literal):,} characters)"
    return f"the number {shown} is out of range; numbers must lie within ±{MAX_INT}"


def _yaml(path: str, what: str, text: str) -> object:
    try:
        yaml = importlib.import_module("yaml")
    except ImportError:
        raise ConfigError(
            f"{path}: reading a YAML {what} needs PyYAML (pip install pyyaml); or write it as JSON"
        ) from None
    loader = _loader_class(yaml)
    try:
        return yaml.load(text, Loader=loader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not a YAML {what} ({exc})") from None
    except ValueError as exc:  # a scalar the safe constructors refuse (a date like 2026-13-45)
        raise ConfigError(f"{path}: not a YAML {what} ({exc})") from None


def _loader_class(yaml: Any) -> Any:
    base = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader

    class Loader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[object] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # `<<: *base`, then keys of its own: YAML's merge, not a duplicate
                key = self.construct_object(key_node, deep=True)
                try:
                    again = key in seen
                except TypeError:
                    continue  # unhashable: the base constructor refuses it with its position
                if again:
                    raise _Refused(
                        f"the key {quoted(key)} appears twice in one mapping (line "
                        f"{key_node.start_mark.line + 1}); keep one (YAML readers would silently "
                        "drop the first)"
                    )
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_int(self, node: Any) -> Any:
            literal = str(node.value).replace("_", "")
            if len(literal.lstrip("+-")) > _MAX_DIGITS:
                raise _Refused(f"{_big_number(literal)} (line {node.start_mark.line + 1})")
            return super().construct_yaml_int(node)

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    return Loader


def _check_tree(path: str, root: object, *, expanded_bound: bool) -> None:
    """Refuse nesting deeper than MAX_DEPTH, numbers out of range, an alias that holds itself,
    and (`expanded_bound`) aliases that expand the value beyond MAX_BYTES (sizes are counted
    once per shared value, so a billion-fold expansion costs no more to measure than the
    file's own nodes)."""
    sizes: dict[int, int] = {}
    open_now: set[int] = set()

    def size(value: object, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise ConfigError(_too_deep(path))
        if isinstance(value, bool) or value is None:
            return 4
        if isinstance(value, int):
            if not -MAX_INT - 1 <= value <= MAX_INT:
                raise ConfigError(f"{path}: {_big_number(str(value))}")
            return len(str(value))
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ConfigError(
                    f"{path}: the number {value} is not finite; write a finite number or a string"
                )
            return len(repr(value))
        if isinstance(value, (str, bytes)):
            return len(value) + 2
        if not isinstance(value, (dict, list, set)):
            return len(str(value))  # a YAML date or timestamp
        key = id(value)
        if key in sizes:
            return sizes[key]
        if key in open_now:
            raise ConfigError(f"{path}: a YAML alias refers to a value that holds it; remove it")
        open_now.add(key)
        children: list[object] = (
            [item for pair in value.items() for item in pair]
            if isinstance(value, dict)
            else list(value)
        )
        total = 2
        for child in children:
            total += size(child, depth + 1) + 1
            if expanded_bound and total > MAX_BYTES:
                raise ConfigError(
                    f"{path}: its YAML aliases expand it to more than "
                    f"{MAX_BYTES // (1024 * 1024)} MiB; write the values out, or repeat fewer"
                )
        open_now.discard(key)
        sizes[key] = total
        return total

    size(root, 0)
