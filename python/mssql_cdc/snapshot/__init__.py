"""Snapshots: full and chunked, their plans, targets, the open race, the Spark read, the
source probe, and `backfill()` with its waves."""
