"""`python -m pipelines [global flags] COMMAND ...` (also the `overlay-lab` console script).

Global flags (before or after the command): --lakehouse PATH, --config FILE, --master,
--shuffle-partitions, --driver-memory, --spark-conf KEY=VALUE, -v / -q.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.memory import parse_bytes
from overlay.errors import InputError
from pipelines import (
    catalog,
    compare,
    design,
    disseminate,
    failures,
    friend_bound,
    ingest,
    logs,
    overlays,
    rappel,
    report,
    resources,
    route,
    runs,
    simulate,
    structure,
)
from pipelines.config import ConfigError, LabSettings, apply_overrides, load_settings
from pipelines.console import METRIC_COLUMNS, format_table, metric_rows
from pipelines.lakehouse import (
    Lakehouse,
    UnknownInstanceError,
    UnknownRunError,
    UnknownTableError,
    UnknownVersionError,
)
from pipelines.spark import get_spark, stack_report
from pipelines.workflow import bundle
from pipelines.workflow.complete import outputs_complete
from pipelines.workflow.runner import StepActions, WorkflowFailed, run_workflow
from pipelines.workflow.spec import Step, Workflow, bundle_grid, load_workflow

log = logging.getLogger(__name__)

IMPORT_COLUMNS = (S.RUN_ID, S.INSTANCE, S.ALGORITHM, S.STATUS, S.ROWS_READ, S.EDGES, S.REJECTED, S.DUPLICATES)
DESIGN_COLUMNS = (S.RUN_ID, S.INSTANCE, S.ALGORITHM, S.STATUS, S.EDGES, S.TCO_SUPPORT, S.SECONDS)
HISTORY_COLUMNS = (
    S.INGEST_ID,
    "version",
    S.SOURCE,
    S.NODES,
    S.TOPICS,
    S.SUBSCRIPTIONS,
    S.CREATED_AT,
    S.SUPERSEDED_AT,
)
ROUTE_COLUMNS = (
    S.ROUTING_OVERHEAD,
    S.AVG_PATH_LENGTH,
    S.MAX_PATH_LENGTH,
    S.LATENCY_MEDIAN,
    S.LATENCY_P95,
    S.STRETCH_MEDIAN,
    S.DELIVERY_RATIO,
    S.DUPLICATE_DELIVERIES,
    S.MISSING_DELIVERIES,
    S.DELIVERIES,
    S.MESSAGES,
    S.SUPERSTEPS,
)


def _ratio(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got '{text}'") from None


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got '{text}'") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got '{text}'") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text}")
    return value


def _size(text: str) -> int:
    """A memory size in Spark's grammar ('512m', '4g'), in bytes."""
    try:
        return parse_bytes(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got '{text}'") from None


def _comma_separated(cast, kind: str):
    """A parser of X or X,X,...: distinct values in the order given (their ranges are the
    request's to check)."""

    def parse(text: str) -> tuple:
        try:
            values = tuple(cast(part) for part in text.split(","))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be {kind} or a comma-separated list of them, got '{text}'"
            ) from None
        if len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"repeats a value: '{text}'")
        return values

    return parse


_shares = _comma_separated(float, "a number")
_k_values = _comma_separated(int, "an integer")


DEFAULT_WORKFLOW = resources.WORKFLOWS_DIR / "overlay_refresh.yaml"


def _spark_conf_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got '{text}'")
    return key.strip(), value


SETTINGS_FLAGS = ("--lakehouse", "--config", "--master", "--shuffle-partitions", "--driver-memory", "--spark-conf")


def _global_flags(suppress: bool) -> argparse.ArgumentParser:
    """Flags accepted both before and after the command (after wins)."""
    default = argparse.SUPPRESS if suppress else None
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument(
        "--lakehouse", metavar="PATH", default=default, help="root folder of the Delta tables (default ./lakehouse)"
    )
    flags.add_argument("--config", metavar="FILE", default=default, help="settings YAML (default conf/lab.yaml)")
    flags.add_argument("--master", default=default, help="Spark master for a local session (default local[*])")
    flags.add_argument("--shuffle-partitions", type=ingest.positive_int, default=default)
    flags.add_argument("--driver-memory", default=default, help="e.g. 6g")
    flags.add_argument(
        "--spark-conf",
        type=_spark_conf_pair,
        action="append",
        metavar="KEY=VALUE",
        default=default,
        help="extra Spark setting (repeatable)",
    )
    flags.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS if suppress else 0)
    flags.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS if suppress else False)
    return flags


class StepArgumentError(InputError):
    """A workflow step's arguments do not parse as a CLI command."""


class _StepParser(argparse.ArgumentParser):
    """Parses a workflow step: errors raise instead of printing usage and exiting, and flags are
    spelled out (no abbreviations: a step file is read for years)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})

    def error(self, message: str):
        raise StepArgumentError(message)


def build_parser(parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser = parser_class(
        prog="python -m pipelines",
        description="Overlay lab: pub/sub instances, overlays and routing on Spark + Delta.",
        parents=[_global_flags(suppress=False)],
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    after = _global_flags(suppress=True)
    ingest_parser = commands.add_parser(
        "ingest",
        parents=[after],
        help="create or replace an instance from a synthetic, social or subscriptions source",
    )
    ingest.add_arguments(ingest_parser)
    instances = commands.add_parser("instances", parents=[after], help="list the stored instances and their counts")
    instances.add_argument(
        "--history",
        metavar="NAME",
        help="list the stored versions of one instance (runs on kept versions stay readable)",
    )
    lister = commands.add_parser(
        "runs",
        parents=[after],
        help="list runs (overlay and routing), or show or delete one: runs [show|delete ID]",
    )
    runs.add_arguments(lister, after)
    importer = commands.add_parser(
        "import-overlay",
        parents=[after],
        help="store an existing overlay (CSV/Parquet with u,v in node keys) as a run",
    )
    importer.add_argument("--instance", required=True)
    importer.add_argument("--run-id", required=True)
    importer.add_argument("--path", required=True)
    importer.add_argument("--replace", action="store_true", help="delete a stored run of this id first (runs delete)")
    evaluate = commands.add_parser("evaluate", parents=[after], help="compute and store the quality metrics of a run")
    evaluate.add_argument("--run-id", required=True)
    evaluate.add_argument(
        "--backend",
        choices=("auto", "graphframes", "dataframe"),
        default="auto",
        help="connected components: GraphFrames when loaded (auto), or the DataFrame implementation",
    )
    evaluate.add_argument(
        "--diameter-exact-limit",
        type=ingest.positive_int,
        default=overlays.DIAMETER_EXACT_LIMIT,
        help="topics with at most this many subscribers get an exact diameter (default 64)",
    )
    evaluate.add_argument(
        "--diameter-samples",
        type=ingest.positive_int,
        default=overlays.DIAMETER_SAMPLES,
        help="BFS sources per larger topic; their diameter is a lower bound (default 8)",
    )
    evaluate.add_argument(
        "--k",
        type=ingest.positive_int,
        default=None,
        help="also check kTCO validity for this k: topic_connectivity and overlay_ktco (PODC'13)",
    )
    failing = commands.add_parser(
        "resilience",
        parents=[after],
        help="remove shares of nodes or links from a run's overlay (seeded trials) and store what stays connected",
    )
    failing.add_argument("--run-id", required=True, help="a complete run of any kind")
    failing.add_argument(
        "--fail-nodes",
        type=_shares,
        default=(),
        metavar="S[,S...]",
        help="shares of the nodes to remove, for example 0.01,0.05,0.1 (random, or with --targeted by degree)",
    )
    failing.add_argument(
        "--targeted",
        action="store_true",
        help="remove the highest-degree nodes of the intact overlay first (ties by node id): one trial",
    )
    failing.add_argument(
        "--fail-links", type=_shares, default=(), metavar="S[,S...]", help="shares of the links to remove"
    )
    failing.add_argument("--trials", type=ingest.positive_int, default=5, help="seeded trials per share (default 5)")
    failing.add_argument("--seed", type=_int, default=1, help="the failures' seed (default 1)")
    export = commands.add_parser("export", parents=[after], help="write a run's links as u,v,added_order in node keys")
    export.add_argument("--run-id", required=True)
    export.add_argument("--out", required=True, help="a .csv or .parquet file")
    designer = commands.add_parser(
        "design",
        parents=[after],
        help="build an overlay with a greedy algorithm (exact, batched) or a baseline",
    )
    designer.add_argument("--instance", required=True)
    designer.add_argument("--algorithm", required=True, help=f"one of {', '.join(design.ALGORITHMS)}")
    budget = designer.add_mutually_exclusive_group()
    budget.add_argument(
        "--max-degree", type=_int, help="d: the maximum node degree (gpm, random-m, spidercast-m; gpa: m = d|V|/2)"
    )
    budget.add_argument("--max-edges", type=_int, help="m: the number of edges (gpa, random-a)")
    budget.add_argument(
        "--budget-ratio",
        type=_ratio,
        help="beta in (0, 1]: m and d as that share of MinMaxODA's overlay (ICDCS'16 eq. 36), computed or reused",
    )
    designer.add_argument(
        "--ratio-edges",
        choices=design.RATIO_EDGES,
        default="links",
        help="gpa, random-a with --budget-ratio: m = ratio x MinMaxODA's links (links, eq. 36, default) or "
        "m = d|V|/2 with d = floor(ratio x its max degree) (degree: GPM's d, as ICDCS'16 Figs. 6-8 set m)",
    )
    designer.add_argument(
        "--short",
        help="swico: the ring, gswico (GSwicoS, default) or random (RandomS)",
    )
    designer.add_argument(
        "--long",
        help="swico: the long fingers, gswico (GSwicoL, default), chord or random (RandomL)",
    )
    designer.add_argument(
        "--mode",
        choices=("exact", "relaxed"),
        default="exact",
        help="greedy: exact (default; the canonical greedy sequence) or relaxed (each round adds links within a "
        "factor 1 + epsilon of the best: fewer rounds)",
    )
    designer.add_argument(
        "--epsilon",
        type=_positive_float,
        default=None,
        help=f"relaxed mode: the slack factor (default {design.DEFAULT_EPSILON:g})",
    )
    designer.add_argument(
        "--k",
        type=_k_values,
        default=None,
        metavar="K[,K...]",
        help="kTCO designs: the connectivity (harary-pt: required, a list runs one design per k; gm2, cycle-pt: 2)",
    )
    designer.add_argument(
        "--node-order",
        choices=("ids", "random"),
        default=None,
        help="harary-pt: the one global node order, node ids (default) or random from --seed",
    )
    designer.add_argument(
        "--seed",
        type=_int,
        default=1,
        help="random baselines, SpiderCastM, CyclePT, a random HararyPT order (default 1)",
    )
    designer.add_argument("--run-id", help="default: INSTANCE.ALGORITHM.BUDGET.sSEED; the same command resumes it")
    designer.add_argument(
        "--replace",
        action="store_true",
        help="redo the run id: delete the stored run (and the routing runs on it) first, then design it anew",
    )
    designer.add_argument(
        "--batch-size",
        type=ingest.positive_int,
        default=None,
        help="greedy: best candidates sampled per partition and round (speed only; an exact overlay is the same)",
    )
    designer.add_argument(
        "--per-node",
        type=ingest.positive_int,
        default=None,
        help="greedy: best candidates of every node sampled per partition and round (speed only)",
    )
    designer.add_argument(
        "--commit-every",
        type=_seconds,
        default=design.COMMIT_SECONDS,
        metavar="SECONDS",
        help=f"commit completed greedy rounds at most this often (default {design.COMMIT_SECONDS:g}; 0: every "
        "round); a crash loses at most that much work",
    )
    designer.add_argument(
        "--regime",
        choices=("auto", "memory", "rounds"),
        default=None,
        help="greedy: where it runs; auto (the settings' default): compiled in memory when the candidate state "
        "fits design.memory_budget, else batched Spark rounds (the same overlay either way)",
    )
    designer.add_argument(
        "--memory-budget",
        type=_size,
        default=None,
        metavar="SIZE",
        help="greedy: the candidate state the memory regime may hold, e.g. 512m (default: the settings' "
        "design.memory_budget); past it, auto runs the batched Spark rounds",
    )
    designer.add_argument(
        "--cross-check",
        action="store_true",
        help="greedy: check the engine's topic components with a connected-components run (GraphFrames when "
        "loaded) instead of a BFS forest of its links on the driver",
    )
    designer.add_argument("--backend", choices=("auto", "graphframes", "dataframe"), default="auto")
    designer.add_argument(
        "--skip-diameters",
        action="store_true",
        help="store the run's metrics without topic diameters (evaluate can add them later)",
    )
    simulator = commands.add_parser(
        "simulate",
        parents=[after],
        help="build an overlay by gossip (Feverfew: one synchronous cycle per Spark job; Rappel: its friendship "
        "overlay and feed trees in 30 s rounds); a run like a design",
    )
    simulator.add_argument("--instance", required=True)
    simulator.add_argument(
        "--protocol",
        required=True,
        help=f"one of {', '.join((*simulate.PROTOCOLS, rappel.PROTOCOL))}",
    )
    simulator.add_argument("--cycles", type=ingest.positive_int, default=40, help="gossip cycles (default 40)")
    simulator.add_argument("--seed", type=_int, default=1, help="every random choice's seed (default 1)")
    simulator.add_argument(
        "--bubble-start",
        type=ingest.positive_int,
        default=30,
        help="the cycle BubbleSample starts at (default 30, the paper's)",
    )
    simulator.add_argument(
        "--pss",
        choices=simulate.PSS_KINDS,
        default="cyclon",
        help="the random peer sampler: Cyclon shuffles (default) or fresh uniform samples each cycle (Thm 1-2's model)",
    )
    simulator.add_argument(
        "--delta",
        type=ingest.positive_int,
        default=1,
        help="rebuild the ln-covered view every DELTA cycles (default 1)",
    )
    simulator.add_argument(
        "--clear-similar",
        action="store_true",
        help="empty the similar view after each rebuild (the literal Alg. 1)",
    )
    simulator.add_argument(
        "--snapshot-every",
        type=ingest.positive_int,
        metavar="CYCLES",
        help=f"store every node's state (and commit the cycles' measures) this often (default {simulate.SNAPSHOT_EVERY}; "
        f"Rappel: the rounds' measures, every node's friendship state and every feed's tree, every {rappel.SNAPSHOT_EVERY} "
        "rounds); a crash loses at most that many cycles: the same command resumes from the last snapshot",
    )
    rappel_options = simulator.add_argument_group("rappel")
    rappel_options.add_argument(
        "--hours", type=float, default=1.0, help="simulated hours (default 1; 120 rounds of 30 s each)"
    )
    rappel_options.add_argument("--alpha", type=ingest.positive_int, default=6, help="friends per node (default 6)")
    rappel_options.add_argument(
        "--beta", type=ingest.positive_int, default=5, help="children per node and feed (default 5)"
    )
    rappel_options.add_argument(
        "--mode",
        choices=("bloom", "exact"),
        default="bloom",
        help="what a node learns of another's feeds: a 1024-bit Bloom filter (default) or the set",
    )
    rappel_options.add_argument(
        "--utility",
        choices=("interest-distance", "interest"),
        default="interest-distance",
        help="the audit's utility: interest over distance (default) or interest only (Fig. 9's ablation)",
    )
    rappel_options.add_argument(
        "--failure",
        metavar="SHARE@FROM-TO",
        help="a share of the nodes fails at hour FROM and returns at TO (e.g. 0.5@2-3; no -TO: for good)",
    )
    rappel_options.add_argument(
        "--churn",
        metavar="sessions:ON/OFF",
        help="nodes go on and off with exponential sessions of these mean minutes (e.g. sessions:240/30)",
    )
    rappel_options.add_argument(
        "--proper-leaves",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="that share of churn's session ends are proper leaves (§4.4: the children are handed "
        "over first); the rest, and every mass failure, are failures (default 0)",
    )
    rappel_options.add_argument(
        "--arrivals",
        type=float,
        default=0.0,
        metavar="MINUTES",
        help="spread the nodes' first arrival over these minutes (default 0: all at once)",
    )
    rappel_options.add_argument("--model-seed", type=_int, default=1, help="the latency model's seed (default 1)")
    simulator.add_argument("--run-id", help="default: INSTANCE.PROTOCOL.cCYCLES.sSEED; the same command resumes it")
    simulator.add_argument(
        "--replace",
        action="store_true",
        help="redo the run id: delete the stored run first, then simulate it anew",
    )
    simulator.add_argument(
        "--skip-diameters",
        action="store_true",
        help="store the run's metrics without topic diameters (evaluate can add them later)",
    )
    spreader = commands.add_parser(
        "disseminate",
        parents=[after],
        help="push-pull gossip of publications on any overlay run's topic subgraphs, under churn or mass failure",
    )
    spreader.add_argument("--run-id", required=True, help="a complete overlay run (designed, simulated or imported)")
    spreader.add_argument(
        "--publications", type=ingest.positive_int, required=True, help="how many, on distinct topics"
    )
    spreader.add_argument(
        "--topic-sizes",
        type=_comma_separated(int, "a topic size"),
        default=(),
        help="publish on the topics nearest these sizes, one each (for instance 50,503,1304)",
    )
    spreader.add_argument("--cycles", type=ingest.positive_int, default=40, help="gossip cycles (default 40)")
    spreader.add_argument(
        "--churn", help="substitution:RATE: that share of nodes fails each cycle and returns the next"
    )
    spreader.add_argument("--mass-failure", help="SHARE@CYCLE: that share of all nodes fails at that cycle, for good")
    spreader.add_argument("--seed", type=_int, default=1, help="publications', failures' and choices' seed (default 1)")
    spreader.add_argument(
        "--live",
        action="store_true",
        help="a Feverfew run only: its gossip goes on during the dissemination, and the overlay heals "
        "(dead entries leave the views, returning nodes rejoin); protocol push-pull-live",
    )
    spreader.add_argument("--routing-run-id", help="default: RUN_ID.PROTOCOL.pN.cC[.subR][.failSatC].sSEED")
    bounder = commands.add_parser(
        "friend-bound",
        parents=[after],
        help="ComNet'09 Fig. 1: for sampled nodes, how many feeds their k greedy best friends cover",
    )
    bounder.add_argument("--instance", required=True)
    bounder.add_argument("--k", type=ingest.positive_int, default=6, help="friends per node (default 6)")
    bounder.add_argument(
        "--min-feeds", type=ingest.positive_int, default=5, help="sample nodes of at least this many feeds (default 5)"
    )
    bounder.add_argument("--sample", type=ingest.positive_int, default=1000, help="how many nodes (default 1000)")
    bounder.add_argument("--seed", type=_int, default=1, help="the sample's seed (default 1)")
    shaper = commands.add_parser(
        "topic-structure",
        parents=[after],
        help="diameter and clustering of the topic subgraphs nearest some sizes, on any overlay run (Feverfew Table 3)",
    )
    shaper.add_argument("--run-id", required=True)
    shaper.add_argument(
        "--sizes",
        type=_comma_separated(int, "a topic size"),
        default=structure.TABLE3_SIZES,
        help=f"topic sizes to sample, one topic each (default the paper's {','.join(map(str, structure.TABLE3_SIZES))})",
    )
    router = commands.add_parser(
        "route",
        parents=[after],
        help="simulate publications on a small-world overlay run (Po, Pa1, Pie, Scribe, iScribe)",
    )
    router.add_argument("--run-id", required=True, help="a complete swico run (it has a ring and fingers)")
    router.add_argument("--protocol", required=True, help=f"one of {', '.join(route.PROTOCOLS)}")
    router.add_argument(
        "--publications", type=ingest.positive_int, required=True, help="how many publications, all routed at once"
    )
    router.add_argument("--seed", type=_int, default=1, help="the workload's seed (default 1)")
    router.add_argument(
        "--feeds",
        metavar="RAPPEL_RUN_ID",
        help="route on a Rappel run's inputs: its feeds' publishers publish (Scribe and iScribe root each tree at "
        "its publisher) and its coordinates give the latencies (ComNet'09 Fig. 10)",
    )
    router.add_argument(
        "--model-seed",
        type=_int,
        default=1,
        help="the latency model's seed for the link latencies (default 1; with --feeds: the Rappel run's)",
    )
    router.add_argument(
        "--routing-run-id",
        help="default: RUN_ID.PROTOCOL.pN.sSEED[.feeds-RAPPEL_RUN_ID]; the same command reuses a complete one",
    )
    router.add_argument(
        "--engine",
        default="compiled",
        help=f"one of {', '.join(route.ENGINES)}. compiled (default): each Spark task routes its publications to the end, the routing tables broadcast "
        "from the driver; supersteps: one DataFrame step a hop for all publications, nothing on the driver. "
        "Same arrivals",
    )
    comparer = commands.add_parser(
        "compare",
        parents=[after],
        help="BeaConvey Tables 3-5 on one instance: four overlays, 14 systems, ratios against Scribe(-)",
    )
    comparer.add_argument("--instance", required=True)
    comparer.add_argument("--publications", type=ingest.positive_int, default=2000, help="per system (default 2000)")
    comparer.add_argument("--seed", type=_int, default=1, help="overlays' and workload's seed (default 1)")
    comparer.add_argument(
        "--long-baseline",
        choices=compare.LONG_BASELINES,
        default="chord",
        help="data-oblivious long fingers of the S and - overlays (default chord)",
    )
    comparer.add_argument("--paper", choices=tuple(compare.PAPER), help="the paper's column to show next to ours")
    comparer.add_argument(
        "--replace",
        action="store_true",
        help="redo the four overlays and so every routing run on them (design --replace), for instance after a re-ingest",
    )
    reporter = commands.add_parser(
        "report",
        parents=[after],
        help="write PNG figures and a markdown summary of the lakehouse's current runs",
    )
    reporter.add_argument("--out", required=True, help="folder for report.md, the figures and report.json")
    reporter.add_argument(
        "--degree-ratio",
        type=_ratio,
        default=0.2,
        help="degree distributions show, per algorithm, the run with the budget ratio nearest this (default 0.2)",
    )
    registrar = commands.add_parser(
        "register",
        parents=[after],
        help="register the lakehouse's Delta tables in a catalog schema, for SQL clients (the dashboard)",
    )
    registrar.add_argument("--schema", required=True, help="the schema to register them in (created if missing)")
    registrar.add_argument("--catalog", default="", help="default: the session's current catalog")
    registrar.add_argument(
        "--create-missing",
        action="store_true",
        help="first create the declared tables no job has written yet, empty, so every query over the schema resolves",
    )
    registrar.add_argument(
        "--repoint",
        action="store_true",
        help="re-point an external table of the same name registered on another location (a moved lakehouse)",
    )
    for name, helptext in (
        ("workflow", "run a workflow file (conf/workflows/*.yaml) here: steps in order, complete ones skipped"),
        ("main", f"the main job: the workflow {resources.source_name(DEFAULT_WORKFLOW)}, then its summary"),
    ):
        runner = commands.add_parser(name, parents=[after], help=helptext)
        if name == "workflow":
            runner.add_argument(
                "file",
                help=f"the workflow YAML, or a shipped one's name ({', '.join(resources.shipped_workflows())})",
            )
        runner.add_argument(
            "--param",
            type=_spark_conf_pair,
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="override a workflow parameter (repeatable)",
        )
        runner.add_argument("--force", action="store_true", help="run every step, complete or not")
        if name == "workflow":
            runner.add_argument(
                "--grid",
                help="the set of sweep values to run, of those the file's `grids` names (default: its first)",
            )
    bundler = commands.add_parser(
        "bundle",
        parents=[after],
        help="render the Databricks bundle's job from its workflow file (or --check it)",
    )
    bundler.add_argument(
        "--workflow",
        default=str(DEFAULT_WORKFLOW),
        help="a workflow file or a shipped one's name (default: the main workflow)",
    )
    bundler.add_argument(
        "--out",
        help="default: resources/<workflow name>.job.yml in the checkout (installed from a wheel: in the current folder)",
    )
    bundler.add_argument("--check", action="store_true", help="exit 1 when the file differs from the rendering")
    commands.add_parser("info", parents=[after], help="show the Spark / Delta / GraphFrames stack in use")
    return parser


def settings_from(args: argparse.Namespace) -> LabSettings:
    settings = load_settings(None if args.config is None else Path(args.config))
    overrides: dict[str, Any] = {
        "lakehouse": args.lakehouse,
        "spark.master": args.master,
        "spark.shuffle_partitions": args.shuffle_partitions,
        "spark.driver_memory": args.driver_memory,
        "spark.conf": dict(args.spark_conf) if args.spark_conf else None,
        # -v shows the JVM's warnings (and -vv its info lines) on the console; errors always.
        "spark.log_level": {0: None, 1: "WARN"}.get(args.verbose, "INFO"),
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


def print_history(lakehouse: Lakehouse, instance: str) -> None:
    rows = [r.asDict() for r in lakehouse.instance_history(instance).collect()]  # the kept versions
    latest = lakehouse.instance_row(instance)
    current = latest[S.INGEST_ID]
    if not any(r[S.INGEST_ID] == current for r in rows):  # stored before versions were kept
        rows.insert(0, latest.asDict())
    for row in rows:
        row["version"] = "current" if row[S.INGEST_ID] == current else "earlier"
    print(f"Versions of instance {instance} (newest first; `history` in the settings says how many are kept):")
    print(format_table(rows, HISTORY_COLUMNS))


def _design_requests(args: argparse.Namespace) -> list[design.DesignRequest]:
    """The design requests (one per k of a kTCO sweep, else one), checked before Spark starts
    (bad input costs no JVM)."""
    requests = [
        design.DesignRequest(
            instance=args.instance,
            algorithm=args.algorithm,
            max_degree=args.max_degree,
            max_edges=args.max_edges,
            budget_ratio=args.budget_ratio,
            seed=args.seed,
            short=args.short,
            ratio_edges=args.ratio_edges,
            long=args.long,
            mode=args.mode,
            epsilon=args.epsilon,
            k=k,
            node_order=args.node_order,
        )
        for k in (args.k or [None])
    ]
    for request in requests:
        request.check()
    if args.run_id is not None:
        if len(requests) > 1:
            raise InputError("--run-id names one run: a sweep over --k uses the default run ids (one per k)")
        overlays.check_run_id(args.run_id)
    return requests


def _engine_choice(args: argparse.Namespace, settings: LabSettings) -> design.EngineChoice:
    """Where the greedy runs: the command's --regime, else the settings' (`design` in conf/lab.yaml)."""
    if args.regime == "memory" and args.mode == "relaxed":
        raise InputError(
            "--mode relaxed settles sampled rounds: it runs in the rounds regime (--regime rounds or auto)"
        )
    return design.EngineChoice(
        regime=args.regime or settings.design.regime,
        memory_budget=args.memory_budget or parse_bytes(settings.design.memory_budget),
        cross_check=args.cross_check,
        keep_round_rows=settings.design.keep_round_rows,
    )


def prepare(args: argparse.Namespace, settings: LabSettings) -> object:
    """Every check that needs no Spark, for one command: its validated request (or None)."""
    if args.command == "ingest":
        return ingest.ingest_request(args, settings)
    if args.command == "design":
        return _design_requests(args), _engine_choice(args, settings)
    if args.command == "simulate" and args.protocol == rappel.PROTOCOL:
        request = rappel.RappelRequest(
            args.instance,
            args.hours,
            args.seed,
            args.alpha,
            args.beta,
            args.mode,
            args.utility,
            rappel.parse_failure(args.failure) if args.failure else None,
            rappel.parse_churn(args.churn) if args.churn else None,
            args.arrivals,
            args.model_seed,
            args.proper_leaves,
        )
        request.check()
        if args.run_id is not None:
            overlays.check_run_id(args.run_id)
        return request
    if args.command == "simulate":
        request = simulate.SimulateRequest(
            args.instance,
            args.protocol,
            args.cycles,
            args.seed,
            args.bubble_start,
            args.pss,
            args.delta,
            args.clear_similar,
        )
        request.check()
        if args.run_id is not None:
            overlays.check_run_id(args.run_id)
        return request
    if args.command == "disseminate":
        share, cycle = disseminate.parse_mass_failure(args.mass_failure) if args.mass_failure else (0.0, 1)
        request = disseminate.DisseminateRequest(
            args.run_id,
            args.publications,
            args.cycles,
            args.seed,
            disseminate.parse_churn(args.churn) if args.churn else 0.0,
            share,
            cycle,
            tuple(args.topic_sizes),
            args.live,
        )
        request.check()
        if args.routing_run_id is not None:
            overlays.check_run_id(args.routing_run_id)
        return request
    if args.command == "friend-bound":
        request = friend_bound.FriendBoundRequest(args.instance, args.k, args.min_feeds, args.sample, args.seed)
        request.check()
        return request
    if args.command == "topic-structure":
        structure.check_sizes(args.sizes)
        overlays.check_run_id(args.run_id)
        return None
    if args.command == "import-overlay":
        overlays.check_run_id(args.run_id)
        ingest.check_input_path(args.path)
        return None
    if args.command == "compare":
        request = compare.CompareRequest(
            args.instance,
            args.publications,
            args.seed,
            args.long_baseline,
            args.paper,
            replace=args.replace,
        )
        request.check()
        return request
    if args.command == "resilience":
        request = failures.ResilienceRequest(
            args.run_id,
            args.fail_nodes,
            args.fail_links,
            args.targeted,
            args.trials,
            args.seed,
        )
        request.check()
        return request
    if args.command == "route":
        request = route.RouteRequest(
            args.run_id,
            args.protocol,
            args.publications,
            args.seed,
            args.feeds,
            args.model_seed,
            args.engine,
        )
        request.check()
        if args.routing_run_id is not None:
            overlays.check_run_id(args.routing_run_id)
        return request
    if args.command in ("workflow", "main"):
        path = resources.find_workflow(args.file) if args.command == "workflow" else DEFAULT_WORKFLOW
        grid = args.grid if args.command == "workflow" else None
        return plan_workflow(load_workflow(path, grid).with_parameters(dict(args.param)), settings)
    if args.command == "info":
        return settings.jars.maven_repositories
    if args.command == "register":
        catalog.check_name(args.schema, "schema")
        if args.catalog:
            catalog.check_name(args.catalog, "catalog")
    return None


def execute(args: argparse.Namespace, request: object, spark, lakehouse: Lakehouse) -> int:
    """Run one prepared command on a session and lakehouse; its exit code."""
    if args.command == "ingest":
        row = ingest.run(spark, lakehouse, args.instance, request.spec, request.kept, progress=not args.quiet)
        print_instances(lakehouse, [row[S.INSTANCE]])
    elif args.command == "instances":
        if args.history is not None:
            print_history(lakehouse, args.history)
        else:
            print_instances(lakehouse)
    elif args.command == "runs":
        return runs.execute(args, lakehouse)
    elif args.command == "import-overlay":
        run = overlays.run_import(spark, lakehouse, args.instance, args.run_id, args.path, replace=args.replace)
        print(format_table([run.asDict()], IMPORT_COLUMNS))
    elif args.command == "evaluate":
        metrics = overlays.run_evaluate(
            spark,
            lakehouse,
            args.run_id,
            args.backend,
            diameter_exact_limit=args.diameter_exact_limit,
            diameter_samples=args.diameter_samples,
            progress=not args.quiet,
        )
        print(f"Quality of run {args.run_id} (instance {metrics[S.INSTANCE]}):")
        print(format_table(metric_rows(metrics, overlays.METRIC_COLUMNS), METRIC_COLUMNS))
        if args.k is not None:
            ktco = overlays.run_ktco(spark, lakehouse, args.run_id, args.k, progress=not args.quiet)
            verdict = "a" if ktco.is_ktco else "not a"
            print(
                f"k = {ktco.k}: {ktco.k_connected_topics:,} of {ktco.topics:,} topics are fine "
                f"({ktco.share:.2%}); the overlay is {verdict} {ktco.k}TCO"
            )
    elif args.command == "design":
        requests, engine = request
        designed = [
            design.run_design(
                spark,
                lakehouse,
                one,
                args.run_id,
                args.batch_size,
                args.backend,
                progress=not args.quiet,
                per_node=args.per_node,
                diameters=not args.skip_diameters,
                commit_seconds=args.commit_every,
                replace=args.replace,
                engine=engine,
            ).asDict()
            for one in requests
        ]
        print(format_table(designed, DESIGN_COLUMNS))
    elif args.command == "simulate" and isinstance(request, rappel.RappelRequest):
        run = rappel.run_rappel(
            spark,
            lakehouse,
            request,
            args.run_id,
            snapshot_every=args.snapshot_every or rappel.SNAPSHOT_EVERY,
            progress=not args.quiet,
            diameters=not args.skip_diameters,
            replace=args.replace,
        )
        print(format_table([run], DESIGN_COLUMNS))
        print(format_table(rappel.round_rows(lakehouse, run[S.RUN_ID]), rappel.ROUND_COLUMNS))
    elif args.command == "simulate":
        run = simulate.run_simulation(
            spark,
            lakehouse,
            request,
            args.run_id,
            snapshot_every=args.snapshot_every or simulate.SNAPSHOT_EVERY,
            progress=not args.quiet,
            diameters=not args.skip_diameters,
            replace=args.replace,
        )
        print(format_table([run], DESIGN_COLUMNS))
        print(format_table(simulate.cycle_rows(lakehouse, run[S.RUN_ID]), simulate.CYCLE_COLUMNS))
    elif args.command == "disseminate":
        done = disseminate.run_dissemination(spark, lakehouse, request, args.routing_run_id, progress=not args.quiet)
        print(
            f"Dissemination {done[S.ROUTING_RUN_ID]} ({request.protocol} on {done[S.RUN_ID]}, {request.cycles} cycles):"
        )
        print(format_table(disseminate.summary_rows(lakehouse, done[S.ROUTING_RUN_ID]), disseminate.SUMMARY_COLUMNS))
    elif args.command == "friend-bound":
        rows = friend_bound.run_friend_bound(spark, lakehouse, request)
        print(
            f"Greedy best friends on {request.instance} ({request.sample} nodes of at least {request.min_feeds} feeds, "
            f"seed {request.seed}): nodes whose friends cover all their feeds"
        )
        print(format_table(rows, friend_bound.COLUMNS))
    elif args.command == "topic-structure":
        rows = structure.run_structure(spark, lakehouse, args.run_id, args.sizes)
        print(f"Topic subgraphs of run {args.run_id} (the topic nearest each size):")
        print(format_table(rows, structure.COLUMNS))
    elif args.command == "resilience":
        rows = failures.run_resilience(spark, lakehouse, request)
        print(f"Failures on run {args.run_id} (means over trials; seed {args.seed}):")
        print(format_table(rows, failures.SUMMARY_COLUMNS))
    elif args.command == "route":
        done = route.run_route(spark, lakehouse, request, args.routing_run_id, progress=not args.quiet)
        metrics = lakehouse.read(S.ROUTING_METRICS).filter(F.col(S.ROUTING_RUN_ID) == done[S.ROUTING_RUN_ID]).first()
        print(f"Routing run {done[S.ROUTING_RUN_ID]} ({done[S.PROTOCOL]} on {done[S.RUN_ID]}): {done[S.STATUS]}")
        print(format_table(metric_rows(metrics.asDict(), ROUTE_COLUMNS), METRIC_COLUMNS))
        if done[S.STATUS] != S.COMPLETE:
            print(f"error: {done[S.MESSAGE]}: {done[S.COUNTER_EXAMPLE]}", file=sys.stderr)
            return 1
    elif args.command == "compare":
        rows = compare.run_compare(spark, lakehouse, request, progress=not args.quiet).collect()  # 14 rows
        print(f"BeaConvey comparison {request.comparison_id} (ratios against Scribe(-)):")
        print(compare.markdown(rows))
    elif args.command == "report":
        data = report.run_report(spark, lakehouse, args.out, args.degree_ratio)
        print(f"Report: {Path(args.out) / report.SUMMARY} ({len(data.files)} figures)")
    elif args.command == "register":
        registered = catalog.register_tables(
            spark,
            lakehouse,
            args.schema,
            args.catalog or None,
            create_missing=args.create_missing,
            repoint=args.repoint,
        )
        print(f"Tables of {lakehouse.root} in schema {'.'.join(filter(None, (args.catalog, args.schema)))}:")
        print(format_table([r.as_row() for r in registered], catalog.COLUMNS))
    elif args.command == "export":
        links = overlays.run_export(spark, lakehouse, args.run_id, args.out)
        print(f"wrote {links:,} links of run {args.run_id} to {args.out}")
    elif args.command == "info":
        info = stack_report(spark, request)  # request: the settings' extra Maven repositories
        info["lakehouse"] = lakehouse.root
        print(format_table([{"piece": k, "version / state": v} for k, v in info.items()], ["piece", "version / state"]))
    elif args.command in ("workflow", "main"):
        return execute_workflow(request, spark, lakehouse, force=args.force)
    return 0


# Workflows --------------------------------------------------------------------------------


def parse_step(step: Step, workflow: Workflow) -> argparse.Namespace:
    """A step's arguments parsed as a CLI command; settings flags belong to the workflow."""
    argv = list(step.resolved(workflow.parameters))
    flags = [a for a in argv if a.split("=", 1)[0] in SETTINGS_FLAGS]
    if flags:
        raise StepArgumentError(
            f"step '{step.name}' sets {flags[0]}: steps share the workflow's lakehouse and Spark; "
            "give settings flags to the workflow command instead"
        )
    try:
        return build_parser(_StepParser).parse_args(argv)
    except StepArgumentError as error:
        raise StepArgumentError(f"{workflow.source}: step '{step.name}' ({shlex.join(argv)}): {error}") from None


@dataclass(frozen=True)
class PlannedStep:
    args: argparse.Namespace
    request: object


@dataclass(frozen=True)
class WorkflowPlan:
    workflow: Workflow
    steps: dict[str, PlannedStep]


def plan_workflow(workflow: Workflow, settings: LabSettings) -> WorkflowPlan:
    """Parse and check every step before anything runs: a typo fails in a second, not an hour in."""
    planned = {}
    for step in workflow.steps:
        args = parse_step(step, workflow)
        try:
            planned[step.name] = PlannedStep(args, prepare(args, settings))
        except InputError as error:
            raise InputError(f"{workflow.source}: step '{step.name}': {error}") from None
    return WorkflowPlan(workflow, planned)


def execute_workflow(plan: WorkflowPlan, spark, lakehouse: Lakehouse, force: bool = False) -> int:
    """Run a planned workflow in this process (one Spark session); print what each step did and,
    when it wrote a report, the results and where the report is."""

    def run(step: Step) -> int:
        planned = plan.steps[step.name]
        return execute(planned.args, planned.request, spark, lakehouse)

    def complete(step: Step) -> str | None:
        planned = plan.steps[step.name]
        return outputs_complete(lakehouse, planned.args, planned.request)

    try:
        outcomes = run_workflow(plan.workflow, StepActions(complete=complete, run=run), force=force)
        code = 0
    except WorkflowFailed as failure:
        outcomes, code = failure.outcomes, 1
        print(f"error: {failure}", file=sys.stderr)
    rows = [{"step": o.step, "status": o.status, "seconds": round(o.seconds, 1), "detail": o.detail} for o in outcomes]
    print(f"\nWorkflow {plan.workflow.name}:")
    print(format_table(rows, ["step", "status", "seconds", "detail"]))
    if code == 0:
        print_summary(plan)
    return code


def print_summary(plan: WorkflowPlan) -> None:
    """The results of a workflow that ends in a report: designs and routing runs, and where the
    report is."""
    reports = [p.args.out for p in plan.steps.values() if p.args.command == "report"]
    if not reports:
        return
    out = Path(reports[-1])
    data = report.read_back(out)
    print("\nOverlay designs:")
    print(format_table(data["designs"], report.markdown.CONSOLE_DESIGN_COLUMNS))
    if data["routing"]:
        print("\nRouting (ratios against Scribe(-) on the same workload):")
        print(format_table(data["routing"], report.markdown.ROUTING_COLUMNS))
    print(f"\nReport: {(out / report.SUMMARY).resolve()} (figures next to it)")


def run_bundle(args: argparse.Namespace) -> int:
    """Write (or --check) the Databricks job resource rendered from a workflow file."""
    path = resources.find_workflow(args.workflow).resolve()
    workflow = load_workflow(path, bundle_grid(path))
    out = Path(args.out) if args.out else resources.bundle_root() / "resources" / f"{workflow.name}.job.yml"
    source = resources.source_name(path)
    text = bundle.render(workflow, source)
    if args.check:
        if not out.is_file() or out.read_text() != text:
            print(f"error: {out} is not the rendering of {source}; run `python -m pipelines bundle`", file=sys.stderr)
            return 1
        print(f"{out} matches {source}")
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"wrote {out} from {source} ({len(workflow.steps)} tasks)")
    return 0


USER_ERRORS = (
    InputError,
    ConfigError,
    UnknownInstanceError,
    UnknownRunError,
    UnknownTableError,
    UnknownVersionError,
    design.RunTakenOver,
)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.configure(-1 if args.quiet else args.verbose)
    try:
        settings = settings_from(args)
        if args.command == "bundle":
            return run_bundle(args)
        request = prepare(args, settings)
        spark = get_spark(settings)
        lakehouse = Lakehouse(spark, settings.lakehouse_location())
        return execute(args, request, spark, lakehouse)
    except USER_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
