"""The day-two experiment command: churn-experiment (docs/concepts/day-two.md)."""

from __future__ import annotations

import argparse

from overlay import registry
from overlay.instance.churn import ATTACHMENTS, ChurnSpec
from pipelines import churn_experiment
from pipelines.cli.command import Command, add_command
from pipelines.cli.designs import engine_choice
from pipelines.cli.flags import non_negative_int, positive_int, ratio, share
from pipelines.console import format_table
from pipelines.design import DesignRequest

COLUMNS = (
    "day",
    "changed_subscriptions",
    "inc_changed",
    "fresh_changed",
    "inc_tco",
    "fresh_tco",
    "inc_links",
    "fresh_links",
    "inc_engine_s",
    "fresh_engine_s",
    "inc_kind",
)


def _prepare(args: argparse.Namespace, settings):
    request = churn_experiment.ExperimentRequest(
        base=args.instance,
        days=args.days,
        churn=ChurnSpec(args.rate, args.seed, args.node_rate, args.attachment),
        design=DesignRequest(
            args.instance,
            args.algorithm,
            max_degree=args.max_degree,
            max_edges=args.max_edges,
            budget_ratio=args.budget_ratio,
        ),
        chain=args.chain,
        rebuild_below=args.rebuild_below,
        rebuild_every=args.rebuild_every,
    )
    request.check()
    return request, engine_choice(settings)


def _experiment(args, prepared, spark, lakehouse) -> None:
    request, engine = prepared
    rows = churn_experiment.run_experiment(spark, lakehouse, request, engine, progress=not args.quiet)
    print(f"Churn experiment {request.chain_name} ({request.design.algorithm}, {request.days} days):")
    print(format_table(rows, COLUMNS))


def add_commands(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = add_command(
        commands,
        "churn-experiment",
        "N days of churn on a copy of an instance, each day's overlay designed incrementally and fresh",
        common,
        Command(_experiment, prepare=_prepare),
    )
    parser.add_argument("--instance", required=True, help="the base instance; day 0 is a copy of its current version")
    parser.add_argument(
        "--chain", help="the chain's instance name (default INSTANCE.churnRATE.sSEED); the runs carry it"
    )
    parser.add_argument("--days", type=positive_int, required=True, help="days of churn after day 0")
    parser.add_argument("--rate", type=share, required=True, help="subscription changes a day, a share in [0, 1]")
    parser.add_argument("--node-rate", type=share, default=0.0, help="nodes leaving a day (as many arrive; default 0)")
    parser.add_argument("--attachment", choices=ATTACHMENTS, help="how new topics are drawn (see ingest)")
    parser.add_argument("--seed", type=non_negative_int, default=1, help="the churn's seed (default 1)")
    parser.add_argument(
        "--algorithm", required=True, choices=registry.algorithms(registry.GREEDY), help="the greedy designed each day"
    )
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--max-degree", type=positive_int, help="d (gpm)")
    budget.add_argument("--max-edges", type=positive_int, help="m (gpa)")
    budget.add_argument("--budget-ratio", type=ratio, help="a share of each day's MinMaxODA overlay (eq. 36)")
    parser.add_argument("--rebuild-below", type=share, metavar="X", help="as design --rebuild-below")
    parser.add_argument("--rebuild-every", type=positive_int, metavar="DAYS", help="as design --rebuild-every")
