"""Names a package exports but imports on first use, so that importing the package stays light.

A package whose face lists names from heavy modules (Spark, Delta, the emulator's Arrow) maps
each to its module and sets `__getattr__ = lazy_names(__name__, {...})`: Python calls it for a
name the package does not hold yet, and the value it imports is kept in the package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: each name of `modules` imported from its module.

    Raises (from the returned function):
        AttributeError: the name is not one of `modules`.
    """

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
