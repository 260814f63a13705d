"""The rows one commit of a Delta table added, read again without Spark where the table is a
path this process reads (decision 1423).

The commit file names the files it added; the table as of that version is opened by deltalake
and only those files are read, so a file a later compaction rewrote still reads as the commit
wrote it (until VACUUM removes it). Where deltalake cannot read the table, Spark reads the same
files of that version by their names (`_metadata.file_name`), one aggregate-free query.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mssql_cdc.tables.commit_files import added_files, commit_file
from mssql_cdc.tables.delta_read import _naive_times, path_of
from mssql_cdc.tables.reference import TableOutOfReach, deltalake_errors, open_table
from mssql_cdc.tables.refs import TableRef

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["added_files", "commit_frame", "read_commit_rows"]


def read_commit_rows(ref: TableRef, version: int, *, columns: Sequence[str]) -> pa.Table:
    """The `columns` of the rows commit `version` of the table at `ref`'s path added.

    Timestamps arrive naive, as `read_rows` gives them.

    Raises:
        TableOutOfReach: a catalog name, `/dbfs/...`, a table deltalake cannot read, a commit
            file that is gone, or an added file the table as of `version` does not list.
    """
    if ref.location is None:
        raise TableOutOfReach(f"{ref}: a catalog name is read through Spark")
    import pyarrow.dataset as ds

    table = open_table(ref)
    try:
        wanted = added_files(commit_file(ref.location, version))
        table.load_as_version(version)
        dataset = table.to_pyarrow_dataset()
        fragments = [
            f for f in dataset.get_fragments() if any(_same_file(f.path, name) for name in wanted)
        ]
        if len(fragments) != len(wanted):
            raise TableOutOfReach(
                f"{ref}: version {version} lists {len(fragments)} of the {len(wanted)} files "
                "its commit added"
            )
        missing = [c for c in columns if c not in dataset.schema.names]
        if missing:
            raise TableOutOfReach(f"{ref}: the table has no columns {missing}")
        scoped = ds.FileSystemDataset(fragments, dataset.schema, dataset.format, dataset.filesystem)
        data = scoped.to_table(columns=list(columns), use_threads=False)
    except deltalake_errors() as exc:
        raise TableOutOfReach(f"{ref}: deltalake cannot read version {version}: {exc}") from exc
    return _naive_times(data)


def commit_frame(spark: SparkSession, ref: TableRef, version: int) -> DataFrame:
    """The rows commit `version` added, as a Spark DataFrame of the table as of that version
    (for a table this process cannot read itself).

    Raises:
        TableOutOfReach: neither this process nor Spark's catalog tells where the table is, or
            the commit file is gone.
    """
    from pyspark.sql import functions as F

    located = path_of(spark, ref)
    if located.location is None:
        raise TableOutOfReach(f"{ref}: the table's location is unknown")
    try:
        names = [posixpath.basename(p) for p in added_files(commit_file(located.location, version))]
    except (OSError, ValueError) as exc:
        raise TableOutOfReach(f"{ref}: commit {version} is unreadable: {exc}") from exc
    if ref.location is None:
        data = spark.sql(f"SELECT * FROM {ref.sql} VERSION AS OF {int(version)}")
    else:
        data = spark.read.format("delta").option("versionAsOf", version).load(ref.location)
    return data.where(F.col("_metadata.file_name").isin(names))


def _same_file(fragment_path: str, added: str) -> bool:
    """A dataset fragment's path (absolute, scheme dropped) is the file an `add` names (a
    path relative to the table, or an absolute URI)."""
    if "://" in added:
        added = added.split("://", 1)[1]
    return fragment_path == added or fragment_path.endswith("/" + added.lstrip("/"))
