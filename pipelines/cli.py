"""`python -m pipelines [global flags] COMMAND ...` (also the `overlay-lab` console script).

Global flags (before or after the command): --lakehouse PATH, --config FILE, --master,
--shuffle-partitions, --driver-memory, --spark-conf KEY=VALUE, -v / -q.
"""

from __future__ import annotations

import argparse
import logging
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from pipelines import compare, design, ingest, logs, overlays, route
from pipelines.config import ConfigError, LabSettings, apply_overrides, load_settings
from pipelines.console import format_table
from pipelines.lakehouse import Lakehouse, UnknownInstanceError, UnknownRunError
from pipelines.spark import get_spark, stack_report

log = logging.getLogger(__name__)

IMPORT_COLUMNS = (S.RUN_ID, S.INSTANCE, S.ALGORITHM, S.STATUS, S.ROWS_READ, S.EDGES, S.REJECTED, S.DUPLICATES)
DESIGN_COLUMNS = (S.RUN_ID, S.INSTANCE, S.ALGORITHM, S.STATUS, S.EDGES, S.TCO_SUPPORT, S.SECONDS)
ROUTE_COLUMNS = (
    S.ROUTING_OVERHEAD, S.AVG_PATH_LENGTH, S.MAX_PATH_LENGTH, S.DELIVERY_RATIO, S.DUPLICATE_DELIVERIES,
    S.MISSING_DELIVERIES, S.DELIVERIES, S.MESSAGES, S.SUPERSTEPS,
)


def _ratio(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got '{text}'") from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got '{text}'") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got '{text}'") from None
FACEBOOK_GRAPH = files("pipelines") / "datasets" / "facebook_combined.txt.gz"


def _spark_conf_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got '{text}'")
    return key.strip(), value


def _global_flags(suppress: bool) -> argparse.ArgumentParser:
    """Flags accepted both before and after the command (after wins)."""
    default = argparse.SUPPRESS if suppress else None
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument("--lakehouse", metavar="PATH", default=default, help="root folder of the Delta tables (default ./lakehouse)")
    flags.add_argument("--config", metavar="FILE", default=default, help="settings YAML (default conf/lab.yaml)")
    flags.add_argument("--master", default=default, help="Spark master for a local session (default local[*])")
    flags.add_argument("--shuffle-partitions", type=ingest.positive_int, default=default)
    flags.add_argument("--driver-memory", default=default, help="e.g. 6g")
    flags.add_argument(
        "--spark-conf", type=_spark_conf_pair, action="append", metavar="KEY=VALUE",
        default=default, help="extra Spark setting (repeatable)",
    )
    flags.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS if suppress else 0)
    flags.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS if suppress else False)
    return flags


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pipelines",
        description="Overlay lab: pub/sub instances, overlays and routing on Spark + Delta.",
        parents=[_global_flags(suppress=False)],
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    after = _global_flags(suppress=True)
    ingest_parser = commands.add_parser(
        "ingest", parents=[after], help="create or replace an instance from a synthetic, social or subscriptions source",
    )
    ingest.add_arguments(ingest_parser)
    commands.add_parser("instances", parents=[after], help="list the stored instances and their counts")
    importer = commands.add_parser(
        "import-overlay", parents=[after], help="store an existing overlay (CSV/Parquet with u,v in node keys) as a run",
    )
    importer.add_argument("--instance", required=True)
    importer.add_argument("--run-id", required=True)
    importer.add_argument("--path", required=True)
    evaluate = commands.add_parser("evaluate", parents=[after], help="compute and store the quality metrics of a run")
    evaluate.add_argument("--run-id", required=True)
    evaluate.add_argument(
        "--backend", choices=("auto", "graphframes", "dataframe"), default="auto",
        help="connected components: GraphFrames when loaded (auto), or the DataFrame implementation",
    )
    evaluate.add_argument(
        "--diameter-exact-limit", type=ingest.positive_int, default=overlays.DIAMETER_EXACT_LIMIT,
        help="topics with at most this many subscribers get an exact diameter (default 64)",
    )
    evaluate.add_argument(
        "--diameter-samples", type=ingest.positive_int, default=overlays.DIAMETER_SAMPLES,
        help="BFS sources per larger topic; their diameter is a lower bound (default 8)",
    )
    export = commands.add_parser("export", parents=[after], help="write a run's links as u,v,added_order in node keys")
    export.add_argument("--run-id", required=True)
    export.add_argument("--out", required=True, help="a .csv or .parquet file")
    designer = commands.add_parser(
        "design", parents=[after], help="build an overlay with a greedy algorithm (exact, batched) or a baseline",
    )
    designer.add_argument("--instance", required=True)
    designer.add_argument("--algorithm", required=True, help=f"one of {', '.join(design.ALGORITHMS)}")
    budget = designer.add_mutually_exclusive_group()
    budget.add_argument("--max-degree", type=_int, help="d: the maximum node degree (gpm, random-m, spidercast-m; gpa: m = d|V|/2)")
    budget.add_argument("--max-edges", type=_int, help="m: the number of edges (gpa, random-a)")
    budget.add_argument(
        "--budget-ratio", type=_ratio,
        help="beta in (0, 1]: m and d as that share of MinMaxODA's overlay (ICDCS'16 eq. 36), computed or reused",
    )
    designer.add_argument(
        "--short", help="swico: the ring, gswico (GSwicoS, default) or random (RandomS)",
    )
    designer.add_argument(
        "--long", help="swico: the long fingers, gswico (GSwicoL, default), chord or random (RandomL)",
    )
    designer.add_argument("--seed", type=_int, default=1, help="random baselines and SpiderCastM (default 1)")
    designer.add_argument("--run-id", help="default: INSTANCE.ALGORITHM.BUDGET.sSEED; the same command resumes it")
    designer.add_argument(
        "--batch-size", type=ingest.positive_int, default=None,
        help="greedy candidates settled per round on the driver (speed only; the overlay is the same)",
    )
    designer.add_argument(
        "--commit-every", type=_seconds, default=design.COMMIT_SECONDS, metavar="SECONDS",
        help=f"commit completed greedy rounds at most this often (default {design.COMMIT_SECONDS:g}; 0: every "
        "round); a crash loses at most that much work",
    )
    designer.add_argument("--backend", choices=("auto", "graphframes", "dataframe"), default="auto")
    designer.add_argument(
        "--skip-diameters", action="store_true",
        help="store the run's metrics without topic diameters (evaluate can add them later)",
    )
    router = commands.add_parser(
        "route", parents=[after], help="simulate publications on a small-world overlay run (Po, Pa1, Pie, Scribe, iScribe)",
    )
    router.add_argument("--run-id", required=True, help="a complete swico run (it has a ring and fingers)")
    router.add_argument("--protocol", required=True, help=f"one of {', '.join(route.PROTOCOLS)}")
    router.add_argument("--publications", type=ingest.positive_int, required=True, help="how many publications, all routed at once")
    router.add_argument("--seed", type=_int, default=1, help="the workload's seed (default 1)")
    router.add_argument("--routing-run-id", help="default: RUN_ID.PROTOCOL.pN.sSEED; the same command reuses a complete one")
    comparer = commands.add_parser(
        "compare", parents=[after],
        help="BeaConvey Tables 3-5 on one instance: four overlays, 14 systems, ratios against Scribe(-)",
    )
    comparer.add_argument("--instance", required=True)
    comparer.add_argument("--publications", type=ingest.positive_int, default=2000, help="per system (default 2000)")
    comparer.add_argument("--seed", type=_int, default=1, help="overlays' and workload's seed (default 1)")
    comparer.add_argument(
        "--long-baseline", choices=compare.LONG_BASELINES, default="chord",
        help="data-oblivious long fingers of the S and - overlays (default chord)",
    )
    comparer.add_argument("--paper", choices=tuple(compare.PAPER), help="the paper's column to show next to ours")
    commands.add_parser("info", parents=[after], help="show the Spark / Delta / GraphFrames stack in use")
    commands.add_parser(
        "main", parents=[after],
        help="the main job: ingest a Zipf instance and a Facebook BFS sample, print the instances",
    )
    return parser


def settings_from(args: argparse.Namespace) -> LabSettings:
    settings = load_settings(None if args.config is None else Path(args.config))
    overrides: dict[str, Any] = {
        "lakehouse": args.lakehouse,
        "spark.master": args.master,
        "spark.shuffle_partitions": args.shuffle_partitions,
        "spark.driver_memory": args.driver_memory,
        "spark.conf": dict(args.spark_conf) if args.spark_conf else None,
    }
    return apply_overrides(settings, overrides)


def print_instances(lakehouse: Lakehouse, names: list[str] | None = None) -> None:
    frame = lakehouse.read(S.INSTANCES)
    if names is not None:
        frame = frame.filter(frame[S.INSTANCE].isin(names))
    rows = [r.asDict() for r in frame.orderBy(S.INSTANCE).collect()]  # one row per instance
    if not rows:
        print("no instances yet: create one with `python -m pipelines ingest ...`")
        return
    print(format_table(rows, ingest.SUMMARY_COLUMNS))


def run_main_job(spark, lakehouse: Lakehouse, settings: LabSettings) -> None:
    """The embedded-default demo: a paper-sized Zipf instance and FB 1K."""
    parser = build_parser()
    jobs = [
        ["ingest", "--instance", "zipf-1k", "--source", "synthetic", "--dist", "zipf", "--nodes", "1000",
         "--topics", "1000", "--min-subs", "20", "--max-subs", "600", "--seed", "1"],
        ["ingest", "--instance", "fb-1k", "--source", "social", "--path", str(FACEBOOK_GRAPH),
         "--sample-bfs", "1000", "--seed", "1"],
    ]
    for argv in jobs:
        args = parser.parse_args(argv)
        ingest.run(spark, lakehouse, args.instance, ingest.source_spec(args, settings))
    print(f"\nInstances in {lakehouse.root}:")
    print_instances(lakehouse)


def _design_request(args: argparse.Namespace) -> design.DesignRequest:
    """The design request, checked before Spark starts (bad input costs no JVM)."""
    request = design.DesignRequest(
        instance=args.instance, algorithm=args.algorithm, max_degree=args.max_degree,
        max_edges=args.max_edges, budget_ratio=args.budget_ratio, seed=args.seed, short=args.short, long=args.long,
    )
    request.check()
    if args.run_id is not None:
        overlays.check_run_id(args.run_id)
    return request


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.configure(-1 if args.quiet else args.verbose)
    try:
        settings = settings_from(args)
        spec = ingest.source_spec(args, settings) if args.command == "ingest" else None
        request = _design_request(args) if args.command == "design" else None
        if args.command == "compare":
            request = compare.CompareRequest(args.instance, args.publications, args.seed, args.long_baseline, args.paper)
            request.check()
        if args.command == "route":
            request = route.RouteRequest(args.run_id, args.protocol, args.publications, args.seed)
            request.check()
            if args.routing_run_id is not None:
                overlays.check_run_id(args.routing_run_id)
        spark = get_spark(settings)
        lakehouse = Lakehouse(spark, settings.lakehouse_path())
        if args.command == "ingest":
            row = ingest.run(spark, lakehouse, args.instance, spec)
            print_instances(lakehouse, [row[S.INSTANCE]])
        elif args.command == "instances":
            print_instances(lakehouse)
        elif args.command == "import-overlay":
            run = overlays.run_import(spark, lakehouse, args.instance, args.run_id, args.path)
            print(format_table([run.asDict()], IMPORT_COLUMNS))
        elif args.command == "evaluate":
            metrics = overlays.run_evaluate(
                spark, lakehouse, args.run_id, args.backend,
                diameter_exact_limit=args.diameter_exact_limit, diameter_samples=args.diameter_samples,
            )
            print(f"Quality of run {args.run_id} (instance {metrics[S.INSTANCE]}):")
            print(format_table([{"metric": c, "value": metrics[c]} for c in overlays.METRIC_COLUMNS], ["metric", "value"]))
        elif args.command == "design":
            run = design.run_design(
                spark, lakehouse, request, args.run_id, args.batch_size, args.backend, progress=not args.quiet,
                diameters=not args.skip_diameters, commit_seconds=args.commit_every,
            )
            print(format_table([run.asDict()], DESIGN_COLUMNS))
        elif args.command == "route":
            done = route.run_route(spark, lakehouse, request, args.routing_run_id)
            metrics = lakehouse.read(S.ROUTING_METRICS).filter(F.col(S.ROUTING_RUN_ID) == done[S.ROUTING_RUN_ID]).first()
            print(f"Routing run {done[S.ROUTING_RUN_ID]} ({done[S.PROTOCOL]} on {done[S.RUN_ID]}): {done[S.STATUS]}")
            print(format_table([{"metric": c, "value": metrics[c]} for c in ROUTE_COLUMNS], ["metric", "value"]))
            if done[S.STATUS] != S.COMPLETE:
                print(f"error: {done[S.MESSAGE]}: {done[S.COUNTER_EXAMPLE]}", file=sys.stderr)
                return 1
        elif args.command == "compare":
            rows = compare.run_compare(spark, lakehouse, request).collect()  # 14 rows
            print(f"BeaConvey comparison {request.comparison_id} (ratios against Scribe(-)):")
            print(compare.markdown(rows))
        elif args.command == "export":
            links = overlays.run_export(spark, lakehouse, args.run_id, args.out)
            print(f"wrote {links:,} links of run {args.run_id} to {args.out}")
        elif args.command == "info":
            report = stack_report(spark)
            report["lakehouse"] = lakehouse.root
            print(format_table([{"piece": k, "version / state": v} for k, v in report.items()], ["piece", "version / state"]))
        elif args.command == "main":
            run_main_job(spark, lakehouse, settings)
    except (InputError, ConfigError, UnknownInstanceError, UnknownRunError, design.RunTakenOver) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
