"""Routing commands: route (one protocol on a small-world run) and compare (BeaConvey's tables)."""

from __future__ import annotations

import argparse
import sys

from pyspark.sql import functions as F

from overlay import registry
from overlay import schema as S
from overlay.gossip.gossipsub import DEFAULT_PROFILE, PROFILES
from pipelines import compare, mesh_compare, route
from pipelines.cli.command import Command, add_command, checked
from pipelines.cli.flags import integer, positive_int
from pipelines.console import METRIC_COLUMNS, format_table, metric_rows

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


def _prepare_route(args, _settings) -> route.RouteRequest:
    request = route.RouteRequest(
        args.run_id, args.protocol, args.publications, args.seed, args.feeds, args.model_seed, args.engine
    )
    return checked(request, args.routing_run_id)


def _route(args, request, spark, lakehouse) -> int:
    done = route.run_route(spark, lakehouse, request, args.routing_run_id, progress=not args.quiet)
    metrics = lakehouse.read(S.ROUTING_METRICS).filter(F.col(S.ROUTING_RUN_ID) == done[S.ROUTING_RUN_ID]).first()
    print(f"Routing run {done[S.ROUTING_RUN_ID]} ({done[S.PROTOCOL]} on {done[S.RUN_ID]}): {done[S.STATUS]}")
    print(format_table(metric_rows(metrics.asDict(), ROUTE_COLUMNS), METRIC_COLUMNS))
    if done[S.STATUS] != S.COMPLETE:
        print(f"error: {done[S.MESSAGE]}: {done[S.COUNTER_EXAMPLE]}", file=sys.stderr)
        return 1
    return 0


def _prepare_compare(args, _settings) -> compare.CompareRequest:
    request = compare.CompareRequest(
        args.instance,
        args.publications,
        args.seed,
        args.long_baseline,
        args.paper,
        replace=args.replace,
        overlays=tuple(o.strip() for o in args.overlays.split(",")) if args.overlays else compare.OVERLAY_TYPES,
    )
    request.check()
    return request


def _compare(args, request, spark, lakehouse) -> None:
    rows = compare.run_compare(spark, lakehouse, request, progress=not args.quiet).collect()  # 14 rows at most
    print(f"BeaConvey comparison {request.comparison_id} (ratios against Scribe(-)):")
    print(compare.markdown(rows))


def _prepare_mesh_comparison(args, _settings) -> mesh_compare.MeshComparisonRequest:
    request = mesh_compare.MeshComparisonRequest(
        args.instance, args.seed, args.publications, args.heartbeats, args.profile
    )
    return checked(request, None)


def _mesh_comparison(args, request, spark, lakehouse) -> None:
    rows = mesh_compare.run_mesh_comparison(spark, lakehouse, request, progress=not args.quiet).collect()  # 5 rows
    print(f"gossipsub beside the papers' overlays, {request.comparison_id}:")
    order = {name: i for i, name in enumerate(mesh_compare.SYSTEMS)}
    print(format_table(sorted((r.asDict() for r in rows), key=lambda r: order[r["system"]]), mesh_compare.COLUMNS))


def _engine_help() -> str:
    described = (e for e in registry.ENGINES if e.computation == registry.ROUTING_ENGINE)
    return "; ".join(f"{e.name}{' (default)' if e.default else ''}: {e.summary}" for e in described) + (
        ". Same arrivals"
    )


def add_commands(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    router = add_command(
        commands,
        "route",
        "simulate publications on a small-world overlay run (Po, Pa1, Pie, Scribe, iScribe)",
        common,
        Command(_route, prepare=_prepare_route),
    )
    router.add_argument("--run-id", required=True, help="a complete swico run (it has a ring and fingers)")
    router.add_argument(
        "--protocol",
        required=True,
        choices=registry.protocols(registry.ROUTING),
        help="; ".join(f"{p}: {registry.PROTOCOLS[p].summary}" for p in registry.protocols(registry.ROUTING)),
    )
    router.add_argument(
        "--publications", type=positive_int, required=True, help="how many publications, all routed at once"
    )
    router.add_argument("--seed", type=integer, default=1, help="the workload's seed (default 1)")
    router.add_argument(
        "--feeds",
        metavar="RAPPEL_RUN_ID",
        help="route on a Rappel run's inputs: its feeds' publishers publish (Scribe and iScribe root each tree at "
        "its publisher) and its coordinates give the latencies (ComNet'09 Fig. 10)",
    )
    router.add_argument(
        "--model-seed",
        type=integer,
        default=1,
        help="the latency model's seed for the link latencies (default 1; with --feeds: the Rappel run's)",
    )
    router.add_argument(
        "--routing-run-id",
        help="default: RUN_ID.PROTOCOL.pN.sSEED[.feeds-RAPPEL_RUN_ID]; the same command reuses a complete one",
    )
    router.add_argument(
        "--engine",
        choices=registry.engines(registry.ROUTING_ENGINE),
        default=registry.default_engine(registry.ROUTING_ENGINE),
        help=_engine_help(),
    )
    comparer = add_command(
        commands,
        "compare",
        "BeaConvey Tables 3-5 on one instance: four overlays, 14 systems, ratios against Scribe(-)",
        common,
        Command(_compare, prepare=_prepare_compare),
    )
    comparer.add_argument("--instance", required=True, help="the instance to compare on")
    comparer.add_argument("--publications", type=positive_int, default=2000, help="per system (default 2000)")
    comparer.add_argument("--seed", type=integer, default=1, help="overlays' and workload's seed (default 1)")
    comparer.add_argument(
        "--long-baseline",
        choices=compare.LONG_BASELINES,
        default="chord",
        help="data-oblivious long fingers of the S and - overlays (default chord)",
    )
    comparer.add_argument("--paper", choices=tuple(compare.PAPER), help="the paper's column to show next to ours")
    comparer.add_argument(
        "--overlays",
        metavar="TYPES",
        help="comma-separated overlay types to compare on, among SL, S, L, - (default all four; '-' is "
        "required: the baseline's), and so only the systems on them",
    )
    comparer.add_argument(
        "--replace",
        action="store_true",
        help="redo the four overlays and so every routing run on them (design --replace), for instance after a re-ingest",
    )
    meshes = add_command(
        commands,
        "compare-meshes",
        "gossipsub's meshes beside GPM at the same max degree, MinMaxODA, Feverfew and BeaConvey's SL with Pie",
        common,
        Command(_mesh_comparison, prepare=_prepare_mesh_comparison),
    )
    meshes.add_argument("--instance", required=True, help="the instance to compare on")
    meshes.add_argument("--seed", type=integer, default=1, help="every run's and the workload's seed (default 1)")
    meshes.add_argument(
        "--publications", type=positive_int, default=200, help="per system and failure share (default 200)"
    )
    meshes.add_argument("--heartbeats", type=positive_int, default=120, help="gossipsub's heartbeats (default 120)")
    meshes.add_argument(
        "--profile",
        choices=tuple(PROFILES),
        default=DEFAULT_PROFILE,
        help=f"gossipsub's parameters and rules (default: {DEFAULT_PROFILE})",
    )
