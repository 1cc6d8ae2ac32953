"""The JVM side of the stack: which jars Spark needs, and fetching them into `.jars/`.

The jars are resolved once with Maven into a project-local folder (`.jars/lib`), so starting
Spark never touches the network and an empty `HOME` works. Coordinates are derived from the
installed Python packages, so the Python and JVM halves cannot drift apart:

* Delta: `io.delta:delta-spark_<spark major.minor>_2.13:<delta-spark version>` (required);
* GraphFrames: `io.graphframes:graphframes-spark4_2.13:<graphframes-py version>` (optional:
  used when the registry serves it; see README "GraphFrames").

Jars PySpark already ships (Hadoop, Jackson, Parquet, ...) are not copied: a second copy on the
classpath only invites version clashes.

Run as `python -m pipelines.jars fetch` (the `lab setup` step does) or `... status`.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
JARS_DIR = Path(os.environ.get("OVERLAY_LAB_JARS", PROJECT_ROOT / ".jars"))
EXCLUDED_GROUPS = ("org.apache.spark", "org.scala-lang")


@dataclass(frozen=True)
class JarSet:
    """One Maven artifact and its runtime dependencies, copied into `lib_dir`."""

    name: str
    coordinate: str
    required: bool
    probe_class: str

    @property
    def lib_dir(self) -> Path:
        return JARS_DIR / self.name

    @property
    def stamp(self) -> Path:
        return self.lib_dir / ".complete"

    @property
    def missing_marker(self) -> Path:
        return JARS_DIR / f"{self.name}.unavailable"

    def jars(self) -> list[Path]:
        return sorted(self.lib_dir.glob("*.jar")) if self.is_fetched() else []

    def is_fetched(self) -> bool:
        return self.stamp.exists() and self.stamp.read_text().strip() == self.coordinate


def spark_binary_version() -> str:
    major, minor = version("pyspark").split(".")[:2]
    return f"{major}.{minor}"


def jar_sets() -> list[JarSet]:
    return [
        JarSet(
            name="delta",
            coordinate=f"io.delta:delta-spark_{spark_binary_version()}_2.13:{version('delta-spark')}",
            required=True,
            probe_class="io.delta.sql.DeltaSparkSessionExtension",
        ),
        JarSet(
            name="graphframes",
            coordinate=f"io.graphframes:graphframes-spark4_2.13:{version('graphframes-py')}",
            required=False,
            probe_class="org.graphframes.GraphFrame",
        ),
    ]


def classpath() -> list[Path]:
    """Every fetched jar, in a stable order, for `spark.jars`."""
    return [jar for jar_set in jar_sets() for jar in jar_set.jars()]


def _artifact_name(jar_file: str) -> str:
    """`zstd-jni-1.5.7-3.jar` -> `zstd-jni`; `spark-core_2.13-4.1.4.jar` -> `spark-core_2.13`."""
    match = re.match(r"^(.+?)-\d", jar_file)
    return match.group(1) if match else jar_file.removesuffix(".jar")


def _pyspark_artifacts() -> set[str]:
    import pyspark

    return {_artifact_name(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}


def _pom(coordinate: str) -> str:
    group, artifact, ver = coordinate.split(":")
    exclusions = "".join(
        f"<exclusion><groupId>{g}</groupId><artifactId>*</artifactId></exclusion>"
        for g in EXCLUDED_GROUPS
    )
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>overlay-lab</groupId><artifactId>jar-fetch</artifactId><version>1</version>
  <dependencies><dependency>
    <groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{ver}</version>
    <exclusions>{exclusions}</exclusions>
  </dependency></dependencies>
</project>
"""


def fetch_one(jar_set: JarSet) -> bool:
    """Resolve one jar set with Maven. True when its jars are in place."""
    if jar_set.is_fetched():
        return True
    if not jar_set.required and jar_set.missing_marker.exists():
        if jar_set.missing_marker.read_text().strip() == jar_set.coordinate:
            return False  # asked before, not served: do not pay for the lookup on every run
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SystemExit("jars: Maven (mvn) is not on PATH; install it (apt-get install maven)")
    JARS_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=JARS_DIR) as work:
        work_dir = Path(work)
        (work_dir / "pom.xml").write_text(_pom(jar_set.coordinate))
        out_dir = work_dir / "lib"
        command = [
            mvn, "-B", "-q", f"-Dmaven.repo.local={JARS_DIR / 'm2'}",
            "dependency:copy-dependencies", f"-DoutputDirectory={out_dir}", "-DincludeScope=runtime",
        ]
        print(f"jars: resolving {jar_set.coordinate} from Maven Central", file=sys.stderr)
        result = subprocess.run(command, cwd=work_dir, capture_output=True, text=True)
        if result.returncode != 0:
            detail = "\n".join(l for l in result.stdout.splitlines() if "ERROR" in l)[:2000]
            if jar_set.required:
                raise SystemExit(f"jars: could not resolve {jar_set.coordinate}:\n{detail}")
            print(
                f"jars: optional {jar_set.coordinate} is not served by the registry; "
                "continuing without it (see README, GraphFrames)",
                file=sys.stderr,
            )
            jar_set.missing_marker.write_text(jar_set.coordinate + "\n")
            return False
        shipped = _pyspark_artifacts()
        for jar in list(out_dir.glob("*.jar")):
            if _artifact_name(jar.name) in shipped:
                jar.unlink()
        if jar_set.lib_dir.exists():
            shutil.rmtree(jar_set.lib_dir)
        out_dir.rename(jar_set.lib_dir)
        jar_set.stamp.write_text(jar_set.coordinate + "\n")
    jar_set.missing_marker.unlink(missing_ok=True)
    return True


def fetch() -> None:
    for jar_set in jar_sets():
        fetch_one(jar_set)


def status_lines() -> list[str]:
    lines = []
    for jar_set in jar_sets():
        if jar_set.is_fetched():
            state = f"{len(jar_set.jars())} jars in {jar_set.lib_dir}"
        elif jar_set.missing_marker.exists():
            state = "not served by the registry"
        else:
            state = "not fetched (run ./lab setup)"
        lines.append(f"{jar_set.coordinate}: {state}")
    return lines


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "status"
    if command == "fetch":
        fetch()
    elif command != "status":
        print("usage: python -m pipelines.jars [fetch|status]", file=sys.stderr)
        return 2
    print("\n".join(status_lines()), file=sys.stderr if command == "fetch" else sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
