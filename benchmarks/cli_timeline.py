"""Benchmark (not a test): where one CLI command's seconds go, as a timeline.

Runs `python -m pipelines ...` in this process (`pipelines.cli.main`) with timers around the
steps that cost a small command its fixed time: Spark's start, building an instance, each table
creation and Delta commit of the lakehouse, its bookkeeping reads, a design's run and its
evaluation. Each line is the time since start, the time since the previous line, the step (its own
seconds) and the Spark jobs started so far.

Usage (nothing else running; a fresh lakehouse shows the tables' creation):
  .venv/bin/python benchmarks/cli_timeline.py --lakehouse /tmp/tl -q ingest --instance tiny \\
      --source subscriptions --path benchmarks/data/tiny.csv
  .venv/bin/python benchmarks/cli_timeline.py --lakehouse /tmp/tl -q design --instance tiny \\
      --algorithm gpm --max-degree 2 --skip-diameters
  .venv/bin/python benchmarks/cli_timeline.py --lakehouse LAKEHOUSE -q route --run-id RUN \\
      --protocol pie --publications 10000
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

STARTED = time.monotonic()
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from overlay.design.classes import Subscriptions  # noqa: E402
from overlay.gossip import mesh_batches  # noqa: E402
from pipelines import cli, design, gossipsub, ingest, ledger, overlays, route, simulate, spark  # noqa: E402
from pipelines.lakehouse import Lakehouse  # noqa: E402

marks: list[tuple[float, str]] = []
sessions: list = []


def mark(what: str) -> None:
    jobs = f" jobs={spark.jobs_started(sessions[0])}" if sessions else ""
    marks.append((time.monotonic() - STARTED, what + jobs))


def timed(owner, name: str, label=None) -> None:
    """Wrap `owner.name` so that each call adds a line: `label(args)` or the name, its seconds."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        clock = time.monotonic()
        result = original(*args, **kwargs)
        mark(f"{label(*args) if label else name} ({time.monotonic() - clock:.2f}s)")
        return result

    setattr(owner, name, wrapper)


def main() -> int:
    mark("imports")
    get_spark = cli.get_spark

    def started(settings):
        session = get_spark(settings)
        sessions.append(session)
        mark("spark up")
        return session

    cli.get_spark = started
    timed(Lakehouse, "_commit", lambda self, action, what: f"commit {what}")
    timed(Lakehouse, "_create", lambda self, table: f"create {table.name}")
    for name in ("instance_row", "_record_version", "_apply_retention", "write_run_tables"):
        timed(Lakehouse, name)
    timed(ingest, "build_instance")
    timed(design, "run_design")
    timed(design, "evaluate_run")
    for name in ("_run_greedy", "claim_run"):
        timed(design, name)
    for name in ("complete", "check_owner"):  # every job's, through the module (`ledger.complete`)
        timed(ledger, name)
    for name in ("topic_forest", "degree_summary"):
        timed(overlays, name)
    for name in (
        "complete_run",
        "claim_run",
        "_network_and_workload",
        "build_network",
        "summarise",
        "node_coordinates",
        "_tables_and_workload",
        "route_in_memory",
        "summarise_in_memory",
    ):
        timed(route, name)
    for engine in list(route.SPARK_ENGINES):  # the dict holds the functions: wrap its entries
        original = route.SPARK_ENGINES[engine]

        def simulated(*args, _original=original, _engine=engine, **kwargs):
            clock = time.monotonic()
            result = _original(*args, **kwargs)
            mark(f"simulate ({_engine}, {time.monotonic() - clock:.2f}s)")
            return result

        route.SPARK_ENGINES[engine] = simulated
    timed(Lakehouse, "update_run")
    timed(Lakehouse, "run_row")
    timed(Subscriptions, "collect", lambda *args, **kwargs: "collect the subscriptions")
    timed(mesh_batches, "in_memory", lambda *args, **kwargs: "simulate a batch of topics in memory")
    timed(gossipsub, "heartbeat_rows")
    timed(simulate._Pending, "add", lambda self, cycle, *args: f"cycle {cycle}'s measures")
    timed(simulate._Pending, "commit", lambda *args: "commit the cycles' measures")
    for name in ("snapshot", "_store_views"):
        timed(simulate, name)
    code = cli.main(sys.argv[1:])
    mark("done")
    previous = 0.0
    for at, what in marks:
        print(f"{at:7.2f} +{at - previous:6.2f}  {what}")
        previous = at
    return code


if __name__ == "__main__":
    raise SystemExit(main())
