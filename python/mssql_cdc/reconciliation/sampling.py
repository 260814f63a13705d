"""A sampled reconcile: the same keys on both sides, chosen by a hash of the key, and what a
sample of n keys with d differences says about the whole table (decision 1376).

A key is in the sample when its key digest, `core.row_digest` over the key columns alone (the
row digest's definition, so SQL Server, the emulator and Spark compute it alike), read as an
unsigned 64-bit integer, is below `threshold(fraction)` = floor(fraction * 2**64). A key's hash
does not depend on its row, so the sample holds a key on both sides or on neither.

The confidence is the one-sided Clopper-Pearson upper bound of a binomial share: the largest
share p of differing keys under which finding at most d differences in n keys still has a
probability of at least 1 - level. With d = 0 it is 1 - (1 - level)**(1/n), close to the rule
of three's 3/n at level 0.95.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

from mssql_cdc.errors import ConfigError

__all__ = ["LEVEL", "check_sampled", "fraction_of", "share_below", "threshold"]

LEVEL = 0.95
"""The confidence level a sampled result states its bound at."""

_SPACE = 2**64


def check_sampled(sampled: object) -> None:
    """Refuse a `sampled` that is neither None, a fraction in (0, 1] nor a row count of 1 or
    more, before anything is read.

    Raises:
        ConfigError: naming `sampled` and the value given.
    """
    if sampled is None:
        return
    fix = (
        "pass a fraction of the keys above 0 and at most 1 (0.01 checks about 1%), a whole "
        "number of rows of 1 or more, or None to check every row"
    )
    if isinstance(sampled, bool) or not isinstance(sampled, Real):
        raise ConfigError(f"reconcile: sampled must be a number (got {sampled!r}); {fix}")
    if isinstance(sampled, Integral):
        if sampled < 1:
            raise ConfigError(f"reconcile: sampled={sampled} is no row count; {fix}")
        return
    value = float(sampled)
    if not math.isfinite(value) or not 0 < value <= 1:
        raise ConfigError(f"reconcile: sampled={sampled!r} is no fraction; {fix}")


def fraction_of(sampled: float | int, rows: int | None) -> float:
    """The share of the key space checked: `sampled` itself when a fraction, else a row count
    over the table's `rows` (at most 1; 1 when the count is unknown)."""
    if isinstance(sampled, Integral):
        count = int(sampled)
        return 1.0 if rows is None or rows <= count else count / rows
    return float(sampled)


def threshold(fraction: float) -> int | None:
    """The key digest bound of a sample of `fraction`; None when every key is in it."""
    if fraction >= 1:
        return None
    return max(1, math.floor(fraction * _SPACE))


def _at_most(d: int, n: int, p: float) -> float:
    """P(X <= d) for X ~ Binomial(n, p), summed in logs so large n stays finite."""
    if p <= 0:
        return 1.0
    if p >= 1:
        return 1.0 if d >= n else 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    total = 0.0
    for i in range(d + 1):
        total += math.exp(
            math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
            + i * log_p + (n - i) * log_q
        )  # fmt: skip
    return min(total, 1.0)


def share_below(n: int, d: int, level: float = LEVEL) -> float:
    """The upper bound, at `level`, of the share of differing keys when `d` of `n` sampled keys
    differed (module docstring); 1.0 when nothing was sampled or every key differed."""
    if n <= 0 or d >= n:
        return 1.0
    alpha = 1 - level
    if d == 0:
        return float(1 - alpha ** (1 / n))
    lo, hi = d / n, 1.0
    for _ in range(200):  # bisection: P(X <= d) falls as p grows
        middle = (lo + hi) / 2
        if _at_most(d, n, middle) > alpha:
            lo = middle
        else:
            hi = middle
        if hi - lo < 1e-12:
            break
    return hi
