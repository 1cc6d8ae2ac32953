"""Commands that make and measure overlays: design, evaluate, resilience, topic-structure."""

from __future__ import annotations

import argparse

from overlay import registry
from overlay import schema as S
from overlay.design.memory import parse_bytes
from overlay.errors import InputError
from pipelines import design, failures, overlays, structure
from pipelines.cli.command import Command, add_command
from pipelines.cli.flags import (
    integer,
    non_negative_int,
    positive_float,
    positive_int,
    positive_ints,
    ratio,
    seconds,
    share,
    shares,
    size,
)
from pipelines.console import METRIC_COLUMNS, format_table, metric_rows
from pipelines.incremental import LATEST, IncrementalChoice, check_start

DESIGN_COLUMNS = (S.RUN_ID, S.INSTANCE, S.ALGORITHM, S.STATUS, S.EDGES, S.TCO_SUPPORT, S.SECONDS)
COMPONENTS = registry.engines(registry.COMPONENTS)


def _components_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=COMPONENTS,
        default=registry.default_engine(registry.COMPONENTS),
        help="connected components: GraphFrames when its jar is loaded (auto), or one of them by name",
    )


def _algorithm_help() -> str:
    families = {}
    for a in registry.ALGORITHMS.values():
        families.setdefault(a.family, []).append(a.name)
    return "; ".join(f"{family}: {', '.join(names)}" for family, names in families.items())


def _design_arguments(designer: argparse.ArgumentParser) -> None:
    designer.add_argument("--instance", required=True, help="the instance to design for")
    designer.add_argument(
        "--algorithm", required=True, choices=tuple(registry.ALGORITHMS), metavar="ALGORITHM", help=_algorithm_help()
    )
    budget = designer.add_mutually_exclusive_group()
    budget.add_argument(
        "--max-degree",
        type=positive_int,
        help=f"d: the maximum node degree ({', '.join(design.DEGREE_BUDGETED)}; gpa: m = d|V|/2)",
    )
    budget.add_argument(
        "--max-edges", type=positive_int, help=f"m: the number of edges ({', '.join(design.EDGE_BUDGETED)})"
    )
    budget.add_argument(
        "--budget-ratio",
        type=ratio,
        help="beta in (0, 1]: m and d as that share of MinMaxODA's overlay (ICDCS'16 eq. 36), computed or reused",
    )
    designer.add_argument(
        "--ratio-edges",
        choices=design.RATIO_EDGES,
        default="links",
        help="gpa, random-a with --budget-ratio: m = ratio x MinMaxODA's links (links, eq. 36, default) or "
        "m = d|V|/2 with d = floor(ratio x its max degree) (degree: GPM's d, as ICDCS'16 Figs. 6-8 set m)",
    )
    designer.add_argument("--short", help="swico: the ring, gswico (GSwicoS, default) or random (RandomS)")
    designer.add_argument(
        "--long", help="swico: the long fingers, gswico (GSwicoL, default), chord or random (RandomL)"
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
        type=positive_float,
        default=None,
        help=f"relaxed mode: the slack factor (default {design.DEFAULT_EPSILON:g})",
    )
    designer.add_argument(
        "--k",
        type=positive_ints,
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
        "--seed", type=integer, default=1, help="random baselines, SpiderCastM, CyclePT, a random HararyPT order"
    )
    designer.add_argument("--run-id", help="default: INSTANCE.ALGORITHM.BUDGET.sSEED; the same command resumes it")
    designer.add_argument(
        "--replace",
        action="store_true",
        help="redo the run id: delete the stored run (and the routing runs on it) first, then design it anew",
    )
    day_two = designer.add_argument_group(
        "day two: designing from yesterday's overlay (greedy algorithms; docs/concepts/day-two.md)"
    )
    day_two.add_argument(
        "--incremental-from",
        metavar="RUN|latest",
        help="start from the links of RUN, a complete design of the same instance, algorithm and budget rule on an "
        "earlier version (latest: the newest such run, else a fresh design); default run id "
        "INSTANCE.ALGORITHM.BUDGET.sSEED.INGEST_ID",
    )
    day_two.add_argument(
        "--max-changes",
        type=non_negative_int,
        metavar="N",
        help="incremental: at most N link changes (links removed by choice plus links added)",
    )
    day_two.add_argument(
        "--rebuild-below",
        type=share,
        metavar="X",
        help="incremental: design fresh instead when TcoSuppR ends more than X below the last fresh design's",
    )
    day_two.add_argument(
        "--rebuild-every",
        type=positive_int,
        metavar="DAYS",
        help="incremental: design fresh when the last fresh design is DAYS versions back (a weekly rebuild: 7)",
    )
    day_two.add_argument(
        "--changes-from",
        metavar="RUN",
        help="a fresh design: record its link changes against RUN, an earlier run of the instance (overlay_changes)",
    )
    greedy = designer.add_argument_group("greedy algorithms: speed only (an exact overlay is the same)")
    greedy.add_argument(
        "--batch-size", type=positive_int, default=None, help="best candidates sampled per partition and round"
    )
    greedy.add_argument(
        "--per-node",
        type=positive_int,
        default=None,
        help="best candidates of every node sampled per partition and round",
    )
    greedy.add_argument(
        "--commit-every",
        type=seconds,
        default=design.COMMIT_SECONDS,
        metavar="SECONDS",
        help=f"commit completed rounds at most this often (default {design.COMMIT_SECONDS:g}; 0: every round); "
        "a crash loses at most that much work",
    )
    greedy.add_argument(
        "--regime",
        choices=registry.engines(registry.GREEDY_REGIME),
        default=None,
        help="where it runs; auto (the settings' default): compiled in memory when the candidate state fits "
        "design.memory_budget, else batched Spark rounds (the same overlay either way)",
    )
    greedy.add_argument(
        "--memory-budget",
        type=size,
        default=None,
        metavar="SIZE",
        help="the candidate state the memory regime may hold, e.g. 512m (default: the settings' "
        "design.memory_budget); past it, auto runs the batched Spark rounds",
    )
    greedy.add_argument(
        "--cross-check",
        action="store_true",
        help="check the engine's topic components with a connected-components run (GraphFrames when loaded) "
        "instead of a BFS forest of its links on the driver",
    )
    _components_flag(designer)
    designer.add_argument(
        "--skip-diameters",
        action="store_true",
        help="store the run's metrics without topic diameters (evaluate can add them later)",
    )


def _design_requests(args: argparse.Namespace) -> list[design.DesignRequest]:
    """The design requests (one per k of a kTCO sweep, else one), checked before Spark starts."""
    design.check_greedy_options(
        args.algorithm,
        batch_size=args.batch_size,
        per_node=args.per_node,
        regime=args.regime,
        memory_budget=args.memory_budget,
        cross_check=args.cross_check,
        incremental_from=args.incremental_from,
    )
    if args.incremental_from is None:
        given = [f for f in ("max_changes", "rebuild_below", "rebuild_every") if getattr(args, f) is not None]
        if given:
            raise InputError(f"--{given[0].replace('_', '-')} shapes an incremental design: give --incremental-from")
    elif args.k is not None and len(args.k) > 1:
        raise InputError("--incremental-from continues one design: give one --k")
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


def engine_choice(settings, regime: str | None = None, memory_budget: int | None = None, cross_check=False):
    """Where the greedy runs: the command's choice, else the settings' (`design` in conf/lab.yaml)."""
    return design.EngineChoice(
        regime=regime or settings.design.regime,
        memory_budget=memory_budget or parse_bytes(settings.design.memory_budget),
        cross_check=cross_check,
        keep_round_rows=settings.design.keep_round_rows,
    )


def _engine_choice(args: argparse.Namespace, settings) -> design.EngineChoice:
    if args.regime == "memory" and args.mode == "relaxed":
        raise InputError(
            "--mode relaxed settles sampled rounds: it runs in the rounds regime (--regime rounds or auto)"
        )
    return engine_choice(settings, args.regime, args.memory_budget, args.cross_check)


def _incremental_choice(args: argparse.Namespace) -> IncrementalChoice | None:
    if args.incremental_from is None:
        return None
    choice = IncrementalChoice(args.incremental_from, args.max_changes, args.rebuild_below, args.rebuild_every)
    check_start(choice, args.changes_from)
    if args.incremental_from != LATEST:
        overlays.check_run_id(args.incremental_from)
    return choice


def _prepare_design(args, settings) -> design.DesignPlan:
    return design.DesignPlan(_design_requests(args), _engine_choice(args, settings), _incremental_choice(args))


def _design(args, plan: design.DesignPlan, spark, lakehouse) -> None:
    requests, engine, incremental = plan.requests, plan.engine, plan.incremental
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
            incremental=incremental,
            changes_from=args.changes_from,
        ).asDict()
        for one in requests
    ]
    print(format_table(designed, DESIGN_COLUMNS))


def _evaluate(args, _request, spark, lakehouse) -> None:
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


def _prepare_resilience(args, _settings) -> failures.ResilienceRequest:
    request = failures.ResilienceRequest(
        args.run_id, args.fail_nodes, args.fail_links, args.targeted, args.trials, args.seed
    )
    request.check()
    return request


def _resilience(args, request, spark, lakehouse) -> None:
    rows = failures.run_resilience(spark, lakehouse, request)
    print(f"Failures on run {args.run_id} (means over trials; seed {args.seed}):")
    print(format_table(rows, failures.SUMMARY_COLUMNS))


def _prepare_structure(args, _settings) -> None:
    structure.check_sizes(args.topic_sizes)
    overlays.check_run_id(args.run_id)


def _structure(args, _request, spark, lakehouse) -> None:
    rows = structure.run_structure(spark, lakehouse, args.run_id, args.topic_sizes)
    print(f"Topic subgraphs of run {args.run_id} (the topic nearest each size):")
    print(format_table(rows, structure.COLUMNS))


def add_commands(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    _design_arguments(
        add_command(
            commands,
            "design",
            "build an overlay with a greedy algorithm (exact, batched), a kTCO construction or a baseline",
            common,
            Command(_design, prepare=_prepare_design),
        )
    )
    evaluate = add_command(
        commands, "evaluate", "compute and store the quality metrics of a run", common, Command(_evaluate)
    )
    evaluate.add_argument("--run-id", required=True, help="a complete run of any kind")
    _components_flag(evaluate)
    evaluate.add_argument(
        "--diameter-exact-limit",
        type=positive_int,
        default=overlays.DIAMETER_EXACT_LIMIT,
        help=f"topics with at most this many subscribers get an exact diameter (default {overlays.DIAMETER_EXACT_LIMIT})",
    )
    evaluate.add_argument(
        "--diameter-samples",
        type=positive_int,
        default=overlays.DIAMETER_SAMPLES,
        help=f"BFS sources per larger topic; their diameter is a lower bound (default {overlays.DIAMETER_SAMPLES})",
    )
    evaluate.add_argument(
        "--k",
        type=positive_int,
        default=None,
        help="also check kTCO validity for this connectivity k: topic_connectivity and overlay_ktco (PODC'13)",
    )
    failing = add_command(
        commands,
        "resilience",
        "remove shares of nodes or links from a run's overlay (seeded trials) and store what stays connected",
        common,
        Command(_resilience, prepare=_prepare_resilience),
    )
    failing.add_argument("--run-id", required=True, help="a complete run of any kind")
    failing.add_argument(
        "--fail-nodes",
        type=shares,
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
        "--fail-links", type=shares, default=(), metavar="S[,S...]", help="shares of the links to remove"
    )
    failing.add_argument("--trials", type=positive_int, default=5, help="seeded trials per share (default 5)")
    failing.add_argument("--seed", type=integer, default=1, help="the failures' seed (default 1)")
    shaper = add_command(
        commands,
        "topic-structure",
        "diameter and clustering of the topic subgraphs nearest some sizes, on any overlay run (Feverfew Table 3)",
        common,
        Command(_structure, prepare=_prepare_structure),
    )
    shaper.add_argument("--run-id", required=True, help="a complete run of any kind")
    shaper.add_argument(
        "--topic-sizes",
        type=positive_ints,
        default=structure.TABLE3_SIZES,
        metavar="N[,N...]",
        help=f"topic sizes to sample, one topic each (default the paper's {','.join(map(str, structure.TABLE3_SIZES))})",
    )
