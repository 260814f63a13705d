"""Resolve Delta's jars from Maven Central into .cache/jars once (make setup).

Jars whose artifact pyspark already ships (scala-library, jackson, parquet, hadoop, ...) are
left out: Spark's own copies win on the classpath anyway, and two versions of one library in
one JVM is a trap. See docs/decisions/0002-delta-jars-from-maven-without-spark-duplicates.md.
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
POM = ROOT / "tools" / "jars-pom.xml"
JARS = ROOT / ".cache" / "jars"
STAMP = JARS / ".resolved"
VERSIONED = re.compile(r"^(?P<artifact>.+?)-\d[\w.\-]*\.jar$")


def artifact_of(jar_name: str) -> str:
    match = VERSIONED.match(jar_name)
    return match.group("artifact") if match else jar_name.removesuffix(".jar")


def main() -> int:
    want = hashlib.sha256(POM.read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text().strip() == want and any(JARS.glob("delta-spark*.jar")):
        return 0
    print("setup: resolving Delta's jars from Maven Central into .cache/jars", flush=True)
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
                str(POM),
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
        print("setup: Maven listed no jars for Delta; see the output above", file=sys.stderr)
        return 1
    if JARS.exists():
        shutil.rmtree(JARS)
    JARS.mkdir(parents=True)
    for path in paths:
        if artifact_of(path.name) not in shipped:
            shutil.copy2(path, JARS / path.name)
    STAMP.write_text(want + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
