"""Resolve Delta's jars, Microsoft's JDBC driver and Spark's S3A connector from Maven Central
into .cache/jars once (make setup); the S3A connector goes to its own .cache/jars/s3a, which
local sessions put on the driver's class path rather than in `spark.jars` (decision 1353).

Jars whose artifact pyspark already ships (scala-library, jackson, parquet, hadoop, ...) are
left out: Spark's own copies win on the classpath anyway, and two versions of one library in
one JVM is a trap. See docs/decisions/0002-delta-jars-from-maven-without-spark-duplicates.md.
Each POM has its own stamp, so a warm cache starts no Maven at all; resolving Delta anew empties
the folder, which drops the JDBC stamp too, so the driver is copied back after it (decision 0730).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parent.parent
JARS = ROOT / ".cache" / "jars"
S3A = JARS / "s3a"
# (what, POM, stamp, the jar that must be there, whether resolving it empties the folder first,
# the folder)
GROUPS = (
    ("Delta's jars", ROOT / "tools" / "jars-pom.xml", JARS / ".resolved", "delta-spark", True,
     JARS),
    ("Microsoft's JDBC driver", ROOT / "tools" / "jdbc-pom.xml", JARS / ".resolved-jdbc",
     "mssql-jdbc", False, JARS),
    ("Spark's S3A connector", ROOT / "tools" / "s3a-pom.xml", S3A / ".resolved", "hadoop-aws",
     False, S3A),
)  # fmt: skip
VERSIONED = re.compile(r"^(?P<artifact>.+?)-\d[\w.\-]*\.jar$")


def artifact_of(jar_name: str) -> str:
    match = VERSIONED.match(jar_name)
    return match.group("artifact") if match else jar_name.removesuffix(".jar")


def resolve(
    what: str, pom: Path, stamp: Path, marker: str, *, empty_first: bool, folder: Path = JARS
) -> int:
    """Copy `pom`'s runtime closure, less what pyspark ships, into `folder` unless `stamp` says
    it is there already."""
    want = hashlib.sha256(pom.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text().strip() == want and any(folder.glob(f"{marker}*.jar")):
        return 0
    print(f"setup: resolving {what} from Maven Central into {folder.relative_to(ROOT)}", flush=True)
    spark_jars = Path(pyspark.__file__).parent / "jars"
    shipped = {artifact_of(p.name) for p in spark_jars.glob("*.jar")}
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "deps.txt"
        subprocess.run(
            [
                "mvn",
                "-q",
                "-B",
                "-f",
                str(pom),
                f"-Dmaven.repo.local={ROOT / '.cache' / 'm2'}",
                "dependency:list",
                "-DincludeScope=runtime",
                "-DoutputAbsoluteArtifactFilename=true",
                f"-DoutputFile={listing}",
            ],
            check=True,
        )
        paths = [Path(m.group(1)) for m in re.finditer(r":(/\S+\.jar)", listing.read_text())]
    if not paths:
        print(f"setup: Maven listed no jars for {what}; see the output above", file=sys.stderr)
        return 1
    if empty_first and JARS.exists():
        shutil.rmtree(JARS)
    folder.mkdir(parents=True, exist_ok=True)
    for path in paths:
        if artifact_of(path.name) not in shipped:
            shutil.copy2(path, folder / path.name)
    stamp.write_text(want + "\n")
    return 0


def main() -> int:
    for what, pom, stamp, marker, empty_first, folder in GROUPS:
        failed = resolve(what, pom, stamp, marker, empty_first=empty_first, folder=folder)
        if failed:
            return failed
    return 0


if __name__ == "__main__":
    sys.exit(main())
