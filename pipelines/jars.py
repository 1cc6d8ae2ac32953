"""The JVM side of the stack: which jars Spark needs, and fetching them into `.jars/`.

The jars are resolved once, during setup, with the Ivy that PySpark ships (`pyspark/jars/ivy-*.jar`,
run by `java`): a newcomer needs Python and Java, no system Maven. They land in a project-local
folder (`.jars/<set>/`, Ivy's cache in `.jars/ivy-cache/`), and Spark loads them with `spark.jars`,
so starting Spark never touches the network and an empty `HOME` works. Coordinates are derived
from the installed Python packages, so the Python and JVM halves cannot drift apart:

* Delta: `io.delta:delta-spark_<spark major.minor>_2.13:<delta-spark version>` (required);
* GraphFrames: `io.graphframes:graphframes-spark4_2.13:<graphframes-py version>` (optional: the
  lab falls back to its DataFrame implementations without it; see README "GraphFrames").

Repositories: Maven Central first, then the extra repositories of `maven_repositories()` (a
corporate mirror, an air-gapped cluster's file share, a `file://` folder in Maven layout).

Jars PySpark already ships (Hadoop, Jackson, Parquet, ...) are not copied: a second copy on the
classpath only invites version clashes.

Run as `python -m pipelines.jars fetch` (the `lab setup` step does) or `... status`.

`.jars/` is next to the package folder: the checkout's root, or for an installed wheel its
site-packages (`<site-packages>/.jars/`). `OVERLAY_LAB_JARS` names another folder (a checkout's
`.jars/`, or a writable one when site-packages is not).
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
from xml.sax.saxutils import quoteattr

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
JARS_DIR = Path(os.environ.get("OVERLAY_LAB_JARS", PROJECT_ROOT / ".jars"))
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
REPOS_VARIABLE = "OVERLAY_LAB_MAVEN_REPOS"
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


def delta_coordinate() -> str:
    return f"io.delta:delta-spark_{spark_binary_version()}_2.13:{version('delta-spark')}"


def graphframes_coordinate() -> str:
    """The GraphFrames JVM artifact matching the installed `graphframes-py` (the bundle uses it too)."""
    return f"io.graphframes:graphframes-spark4_2.13:{version('graphframes-py')}"


def jar_sets() -> list[JarSet]:
    return [
        JarSet("delta", delta_coordinate(), required=True, probe_class="io.delta.sql.DeltaSparkSessionExtension"),
        JarSet("graphframes", graphframes_coordinate(), required=False, probe_class="org.graphframes.GraphFrame"),
    ]


def classpath() -> list[Path]:
    """Every fetched jar, in a stable order, for `spark.jars`."""
    return [jar for jar_set in jar_sets() for jar in jar_set.jars()]


def _as_url(repository: str) -> str:
    """A repository as Ivy wants it: a URL ending in `/`; a bare local path becomes `file://`."""
    if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", repository):
        repository = Path(repository).expanduser().resolve().as_uri()
    return repository.rstrip("/") + "/"


def maven_repositories(configured: tuple[str, ...] | list[str] = ()) -> list[str]:
    """Where jars are looked up, in order: Maven Central, then the repositories of the
    `OVERLAY_LAB_MAVEN_REPOS` environment variable (comma-separated), then `configured` (the
    settings file's `jars.maven_repositories`), without repeats."""
    from_environment = [r.strip() for r in os.environ.get(REPOS_VARIABLE, "").split(",") if r.strip()]
    ordered = [MAVEN_CENTRAL, *(_as_url(r) for r in (*from_environment, *configured))]
    return list(dict.fromkeys(ordered))


def _artifact_name(jar_file: str) -> str:
    """`zstd-jni-1.5.7-3.jar` -> `zstd-jni`; `spark-core_2.13-4.1.4.jar` -> `spark-core_2.13`."""
    match = re.match(r"^(.+?)-\d", jar_file)
    return match.group(1) if match else jar_file.removesuffix(".jar")


def _pyspark_jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _pyspark_artifacts() -> set[str]:
    return {_artifact_name(p.name) for p in _pyspark_jars_dir().glob("*.jar")}


def _ivy_jar() -> Path:
    found = sorted(_pyspark_jars_dir().glob("ivy-*.jar"))
    if not found:
        raise SystemExit(f"jars: PySpark ships no Ivy jar in {_pyspark_jars_dir()}; reinstall pyspark")
    return found[-1]


def _ivy_settings(repositories: list[str], cache: Path) -> str:
    resolvers = "\n".join(
        f'      <ibiblio name="repo-{i}" m2compatible="true" root={quoteattr(url)}/>'
        for i, url in enumerate(repositories)
    )
    return f"""<ivysettings>
  <settings defaultResolver="chain"/>
  <caches defaultCacheDir={quoteattr(str(cache))} useOrigin="true"/>
  <resolvers>
    <chain name="chain" returnFirst="true">
{resolvers}
    </chain>
  </resolvers>
</ivysettings>
"""


def _ivy_module(coordinate: str) -> str:
    group, artifact, ver = coordinate.split(":")
    excludes = "".join(f'\n    <exclude org="{g}"/>' for g in EXCLUDED_GROUPS)
    return f"""<ivy-module version="2.0">
  <info organisation="overlay-lab" module="jar-fetch"/>
  <configurations><conf name="default"/></configurations>
  <dependencies>
    <dependency org="{group}" name="{artifact}" rev="{ver}" conf="default->default(runtime)"/>{excludes}
  </dependencies>
</ivy-module>
"""


def _marker_text(jar_set: JarSet, repositories: list[str]) -> str:
    return "\n".join([jar_set.coordinate, *repositories]) + "\n"


def fetch_one(jar_set: JarSet, repositories: list[str]) -> bool:
    """Resolve one jar set with Ivy. True when its jars are in place."""
    if jar_set.is_fetched():
        return True
    marker = jar_set.missing_marker
    if not jar_set.required and marker.exists() and marker.read_text() == _marker_text(jar_set, repositories):
        return False  # asked these repositories before, not served: do not pay for the lookup again
    java = shutil.which("java")
    if java is None:
        raise SystemExit("jars: Java (java) is not on PATH; install Java 17")
    JARS_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=JARS_DIR) as work:
        work_dir = Path(work)
        (work_dir / "ivysettings.xml").write_text(_ivy_settings(repositories, JARS_DIR / "ivy-cache"))
        (work_dir / "ivy.xml").write_text(_ivy_module(jar_set.coordinate))
        out_dir = work_dir / "lib"
        command = [
            java,
            f"-Duser.home={work_dir}",
            "-cp",
            str(_ivy_jar()),
            "org.apache.ivy.Main",
            "-settings",
            "ivysettings.xml",
            "-ivy",
            "ivy.xml",
            "-confs",
            "default",
            "-types",
            "jar",
            "bundle",
            "-retrieve",
            "lib/[artifact]-[revision](-[classifier]).[ext]",
        ]
        print(f"jars: resolving {jar_set.coordinate} from {', '.join(repositories)}", file=sys.stderr)
        result = subprocess.run(command, cwd=work_dir, capture_output=True, text=True)
        if result.returncode != 0 or not any(out_dir.glob("*.jar")):
            lines = (result.stdout + result.stderr).splitlines()
            detail = "\n".join(line for line in lines if "::" in line or "ERROR" in line or "Exception" in line)[-2000:]
            if jar_set.required:
                raise SystemExit(f"jars: could not resolve {jar_set.coordinate}:\n{detail}")
            print(
                f"jars: optional {jar_set.coordinate} is not served by {', '.join(repositories)}; "
                f"continuing without it (add a repository that serves it with {REPOS_VARIABLE} or "
                "jars.maven_repositories in conf/lab.yaml; see README, GraphFrames)",
                file=sys.stderr,
            )
            marker.write_text(_marker_text(jar_set, repositories))
            return False
        shipped = _pyspark_artifacts()
        for jar in list(out_dir.glob("*.jar")):
            if _artifact_name(jar.name) in shipped:
                jar.unlink()
        if jar_set.lib_dir.exists():
            shutil.rmtree(jar_set.lib_dir)
        out_dir.rename(jar_set.lib_dir)
        jar_set.stamp.write_text(jar_set.coordinate + "\n")
    marker.unlink(missing_ok=True)
    return True


def fetch(configured: tuple[str, ...] | list[str] = ()) -> None:
    repositories = maven_repositories(configured)
    for jar_set in jar_sets():
        fetch_one(jar_set, repositories)


def status_lines() -> list[str]:
    lines = []
    for jar_set in jar_sets():
        if jar_set.is_fetched():
            state = f"{len(jar_set.jars())} jars in {jar_set.lib_dir}"
        elif jar_set.missing_marker.exists():
            tried = jar_set.missing_marker.read_text().split()[1:]
            state = f"not served by {', '.join(tried)}"
        else:
            state = "not fetched (run ./lab setup)"
        lines.append(f"{jar_set.coordinate}: {state}")
    return lines


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "status"
    if command not in ("fetch", "status"):
        print("usage: python -m pipelines.jars [fetch|status]", file=sys.stderr)
        return 2
    if command == "fetch":
        from pipelines.config import ConfigError, load_settings

        try:
            configured = load_settings().jars.maven_repositories
        except ConfigError as error:
            print(f"jars: {error}", file=sys.stderr)
            return 2
        fetch(configured)
    print("\n".join(status_lines()), file=sys.stderr if command == "fetch" else sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
