"""The Spark session: reuse the active one (Databricks), else build a local one for this machine.

The local session loads Delta (and GraphFrames, when its jar was fetched) from the project-local
jar folder that `./lab setup` fills, so starting Spark needs no network and no `HOME` state.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from pyspark.sql import SparkSession

from overlay.design.memory import parse_bytes
from overlay.gossip.cycles import CycleRegime
from overlay.graph import jvm_class_available, resolve_backend
from overlay.lineage import LOCAL, RELIABLE, Lineage
from overlay.quality import DEGREES_DEFAULT, DIAMETERS_DEFAULT
from pipelines import jars, jvm_archive
from pipelines.config import LabSettings

log = logging.getLogger(__name__)

LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")


JVM_LEVEL_PROPERTY = "overlay.lab.jvm.level"  # log4j2.properties reads it: the level until setLogLevel
# What the JVM prints at start outside log4j, dropped from the console unless -v: the module
# system's note on the vector module Spark 4 adds, and Spark's note that a shell (PySpark's
# gateway counts as one) logs at WARN while the lab's root level is ERROR.
JVM_NOTES = (
    "WARNING: Using incubator modules",
    'Setting default log level to "WARN"',
    "To adjust logging level use sc.setLogLevel",
)


def _forward_stderr(stream) -> None:
    for line in iter(stream.readline, b""):
        text = line.decode(errors="replace")
        if not text.startswith(JVM_NOTES):
            sys.stderr.write(text)
            sys.stderr.flush()


def _launch_filtered_jvm(master: str, app_name: str, conf: dict[str, str]) -> None:
    """Start the driver JVM as PySpark would, with its stderr read by a thread that drops the
    JVM's own start-up notes (`JVM_NOTES`) and passes everything else on; the session built next
    uses this JVM. Only when no JVM runs yet in this process."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    spark_conf = SparkConf(loadDefaults=False).setMaster(master).setAppName(app_name).setAll(list(conf.items()))
    gateway = launch_gateway(spark_conf, popen_kwargs={"stderr": subprocess.PIPE})
    SparkContext._gateway, SparkContext._jvm = gateway, gateway.jvm
    threading.Thread(target=_forward_stderr, args=(gateway.proc.stderr,), name="jvm-stderr", daemon=True).start()


def _require_jars() -> list[Path]:
    delta = next(j for j in jars.jar_sets() if j.name == "delta")
    if not delta.is_fetched():
        raise SystemExit(
            f"The Delta jars ({delta.coordinate}) are not in {delta.lib_dir}. "
            "Run `./lab setup` (or `python -m pipelines.jars fetch`) first."
        )
    return jars.classpath()


LOOPBACK = "127.0.0.1"
JAVA_OPTIONS_VARIABLE = "OVERLAY_LAB_JAVA_OPTIONS"  # added to `spark.java_options` (the tests' JIT setting)


def loopback_master(master: str) -> bool:
    """A master on this machine: `local[...]`, `local-cluster[...]`, or a standalone master at
    127.0.0.1 / localhost (`./lab cluster`). Its driver need not be reachable from elsewhere."""
    if master.startswith("local"):
        return True
    host = re.sub(r"^[a-z]+://", "", master).split(":")[0]
    return host in (LOOPBACK, "localhost")


def build_local_session(settings: LabSettings, java_options: str | None = None) -> SparkSession:
    """A local session with the lab's jars and settings. `java_options`: extra driver JVM
    options; by default the class-data archive's when setup recorded one (`pipelines.jvm_archive`)."""
    spark_settings = settings.spark
    checkpoint_dir = settings.checkpoint_path()
    checkpoint_dir.mkdir(parents=True, exist_ok=True)
    # PySpark's workers must run the same interpreter as the driver (the project's .venv).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    extra = jvm_archive.java_options() if java_options is None else java_options
    tuning = " ".join(filter(None, [spark_settings.java_options, os.environ.get(JAVA_OPTIONS_VARIABLE, "")])).strip()
    extra = f"{extra} {tuning}".strip()
    java_options = (
        f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()} -D{JVM_LEVEL_PROPERTY}={spark_settings.log_level.lower()} {extra}"
    ).strip()
    conf = {
        "spark.jars": ",".join(str(p) for p in _require_jars()),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.driver.memory": spark_settings.driver_memory,
        "spark.driver.extraJavaOptions": java_options,
        **({"spark.executor.extraJavaOptions": tuning} if tuning else {}),
        "spark.sql.shuffle.partitions": str(spark_settings.shuffle_partitions),
        "spark.default.parallelism": str(spark_settings.shuffle_partitions),
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": str(spark_settings.ui_enabled).lower(),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.warehouse.dir": str(settings.lakehouse_path() / "_warehouse"),
        "spark.databricks.delta.snapshotPartitions": "2",
        # Listing a table's files (VACUUM's, a partitioned read's) in this many tasks, not Spark's
        # 10,000: a VACUUM of one small table took 242 s with the default, 22-29 s with 8 (one core).
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": str(spark_settings.shuffle_partitions),
        "spark.databricks.delta.stats.collect": "true",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Reliable checkpoints (`lineage_for`) are deleted once their frames are gone.
        "spark.cleaner.referenceTracking.cleanCheckpoints": "true",
        **spark_settings.conf,
    }
    if loopback_master(spark_settings.master):  # this machine's cluster: the driver on loopback alone
        conf = {"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK, **conf}
    builder = SparkSession.builder.master(spark_settings.master).appName(spark_settings.app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    if spark_settings.log_level == "ERROR":
        _launch_filtered_jvm(spark_settings.master, spark_settings.app_name, conf)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(spark_settings.log_level)
    spark.sparkContext.setCheckpointDir(str(checkpoint_dir))
    log.debug("started local Spark %s with %d jars", spark.version, len(conf["spark.jars"].split(",")))
    return spark


def in_process(master: str) -> bool:
    """Executors in the driver's process (`local`, `local[N]`, `local[*]`): nothing is gained by
    reliable checkpoints there. `local-cluster[...]` has executor JVMs of its own."""
    return master == "local" or master.startswith("local[")


def lineage_for(spark: SparkSession, settings: LabSettings) -> Lineage:
    """How this session's jobs cut lineage (`spark.checkpoints`): local checkpoints on an
    in-process master, reliable ones (in the checkpoint folder beside the lakehouse, which the
    session is pointed at here when it has none, as a reused Databricks session may) elsewhere."""
    mode = settings.spark.checkpoints
    if mode == "local" or (mode == "auto" and in_process(spark.sparkContext.master)):
        return LOCAL
    if spark.sparkContext.getCheckpointDir() is None:
        spark.sparkContext.setCheckpointDir(settings.checkpoint_location())
    return RELIABLE


def cycle_regime_for(spark: SparkSession, settings: LabSettings) -> CycleRegime:
    """Where this session's simulations run their cycles (`simulate.regime`): auto picks the
    driver's memory on an in-process master for instances within `simulate.memory_subscriptions`."""
    return CycleRegime(
        settings.simulate.regime,
        settings.simulate.memory_subscriptions,
        in_process(spark.sparkContext.master),
        parse_bytes(settings.simulate.memory_budget),
    )


def get_spark(settings: LabSettings) -> SparkSession:
    """The active session if there is one (a Databricks job or notebook), else a local one."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    return build_local_session(settings)


def shuffle_partitions(spark: SparkSession) -> int:
    """The session's shuffle partition count as a number, for library calls that take one.

    A Databricks job cluster may say `auto` (AQE picks per shuffle; open-source Spark refuses the
    value): then the cluster's default parallelism (its total cores), or Spark's default 200
    where there is no SparkContext (Spark Connect)."""
    value = spark.conf.get("spark.sql.shuffle.partitions", "200")
    if value.strip().isdigit() and int(value) > 0:
        return int(value)
    try:
        return max(1, spark.sparkContext.defaultParallelism)
    except Exception:
        return 200


def task_slots(spark: SparkSession) -> int:
    """How many tasks run at once: the threads of a local master (`local[4]`, `local[*]`: the
    machine's cores), else the cluster's default parallelism (its executors' cores unless set).
    The lab sets `spark.default.parallelism` to its shuffle partitions, so on a local master
    that setting says nothing about cores."""
    master = spark.sparkContext.master
    local = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master)
    if local:
        threads = local.group(1)
        return (os.cpu_count() or 1) if threads == "*" else int(threads or 1)
    return max(1, spark.sparkContext.defaultParallelism)


def stack_report(spark: SparkSession, settings_repositories: list[str] | tuple[str, ...] = ()) -> dict[str, str]:
    """Versions and availability of the pieces the lab runs on."""
    from importlib.metadata import version

    report = {
        "pyspark": version("pyspark"),
        "spark (JVM)": spark.version,
        "delta-spark": version("delta-spark"),
        "graphframes-py": version("graphframes-py"),
    }
    for jar_set in jars.jar_sets():
        loaded = jvm_class_available(spark, jar_set.probe_class)
        report[jar_set.name + " jar"] = f"{jar_set.coordinate}: {'loaded' if loaded else 'NOT loaded'}"
    if resolve_backend(spark, "auto") == "graphframes":
        chosen = {
            "connected components": "graphframes",
            "topic diameters": DIAMETERS_DEFAULT,
            "degrees": DEGREES_DEFAULT,
        }
        report["graph backend (auto)"] = "; ".join(f"{operation}: {how}" for operation, how in chosen.items())
    else:
        report["graph backend (auto)"] = (
            "dataframe fallback everywhere: GraphFrames is not loaded (README, GraphFrames)"
        )
    report["maven repositories"] = ", ".join(jars.maven_repositories(settings_repositories))
    return report


def jobs_started(spark: SparkSession) -> int:
    """Spark jobs this context has started so far (job ids are consecutive from 0): a run counts
    its own as the difference. Read from the DAG scheduler; where that is not reachable (Spark
    Connect), from the jobs the status tracker still holds."""
    context = spark.sparkContext
    try:
        started = context._jsc.sc().dagScheduler().nextJobId()
        return int(started.get() if hasattr(started, "get") else started)
    except Exception:
        known = context.statusTracker().getJobIdsForGroup()
        return max(known, default=-1) + 1
