"""A class-data-sharing archive of the driver JVM: every CLI process starts Spark faster.

Each `python -m pipelines ...` process starts a JVM that loads and verifies some 20,000 classes
(Spark, Delta, Scala) before its first query; on this 2-core machine that is seconds of every
command. Java's dynamic class-data sharing (JDK 13+) records the classes a run loaded into an
archive (`-XX:ArchiveClassesAtExit`) that later JVMs map instead of loading them again
(`-XX:SharedArchiveFile`). Setup records one (`python -m pipelines.jvm_archive`, a short Spark
and Delta workload in a temporary folder) into `.jars/`, keyed by the classpath and the Java
and PySpark versions; `build_local_session` uses it only while the key matches. The JVM checks
the archive itself too and, with `-Xshare:auto`, runs without it when it does not fit. Nothing
here changes what a job computes, only how fast its JVM starts.
"""

from __future__ import annotations

import hashlib
import logging
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

from pipelines import jars

log = logging.getLogger(__name__)

ARCHIVE = jars.JARS_DIR / "driver-classes.jsa"
KEY_FILE = jars.JARS_DIR / "driver-classes.key"
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # the JVM's notes on skipped classes, at exit


def _java_token() -> str:
    """A short fingerprint of `java -version` (the JVM Spark will start)."""
    done = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    return hashlib.sha256((done.stderr + done.stdout).encode()).hexdigest()[:16]


def archive_key(java_token: str) -> str:
    """What the archive depends on: the jars Spark loads, PySpark's version, the JVM."""
    parts = [version("pyspark"), java_token, *(f"{p.name}:{p.stat().st_size}" for p in sorted(jars.classpath()))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _stored() -> list[str]:
    return KEY_FILE.read_text().split() if KEY_FILE.is_file() and ARCHIVE.is_file() else []


def java_options() -> str:
    """The driver's JVM options for the archive ('' when there is none, or its key is stale).
    The key is checked against the Java fingerprint stored with it (no `java` process per
    session); a JVM of another version refuses the archive by itself."""
    stored = _stored()
    if " " in str(ARCHIVE) or len(stored) != 2:
        return ""
    try:
        current = archive_key(stored[0])
    except OSError:  # a jar removed since
        return ""
    return f"-XX:SharedArchiveFile={ARCHIVE} -Xshare:auto {QUIET}" if stored[1] == current else ""


def _record(folder: Path, archive: Path) -> None:
    """The classes a lab command loads: a session, Delta writes and reads, a merge, a delete,
    Arrow frames, a checkpoint. The JVM writes the archive when this process exits."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    from pipelines.config import LabSettings, apply_overrides
    from pipelines.spark import build_local_session

    settings = apply_overrides(LabSettings(), {"lakehouse": str(folder / "lakehouse")})
    spark = build_local_session(settings, java_options=f"-XX:ArchiveClassesAtExit={archive} {QUIET}")
    path = str(folder / "lakehouse" / "t")
    frame = spark.range(1000).select(F.col("id"), (F.col("id") % 7).alias("k"))
    frame.write.format("delta").save(path)
    frame.filter("k = 1").write.format("delta").mode("overwrite").option("replaceWhere", "k = 1").save(path)
    spark.read.format("delta").load(path).filter(F.col("k") == 3).collect()
    spark.read.format("delta").load(path).groupBy("k").count().collect()
    DeltaTable.forPath(spark, path).alias("t").merge(frame.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    DeltaTable.forPath(spark, path).delete(F.col("k") == 2)
    spark.createDataFrame(frame.toArrow()).localCheckpoint(eager=True).count()
    spark.stop()


def build(force: bool = False) -> bool:
    """Record the archive unless a current one exists (about 40 s here); True when one is in place.
    A failure leaves none (the lab runs without it) and says why."""
    token = _java_token()
    key = archive_key(token)
    if not force and _stored() == [token, key]:
        return True
    ARCHIVE.parent.mkdir(parents=True, exist_ok=True)
    partial = ARCHIVE.with_name(ARCHIVE.name + ".partial")
    partial.unlink(missing_ok=True)
    KEY_FILE.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="lab-archive-") as folder:
        done = subprocess.run(
            [sys.executable, "-m", "pipelines.jvm_archive", "--record", folder, str(partial)],
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0 or not partial.is_file():
        log.warning("no JVM class archive (the lab runs without it): %s", done.stderr.strip()[-800:])
        partial.unlink(missing_ok=True)
        return False
    partial.replace(ARCHIVE)
    KEY_FILE.write_text(f"{token} {key}\n")
    return True


def main(argv: list[str]) -> int:
    if argv[:1] == ["--record"] and len(argv) == 3:
        _record(Path(argv[1]), Path(argv[2]))
        return 0
    if argv not in ([], ["--force"]):
        print("usage: python -m pipelines.jvm_archive [--force]", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    clock = time.monotonic()
    if build(force=bool(argv)):
        print(
            f"JVM class archive: {ARCHIVE} ({ARCHIVE.stat().st_size / 2**20:.0f} MB, {time.monotonic() - clock:.0f} s)",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
