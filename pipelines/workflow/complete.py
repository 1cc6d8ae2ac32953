"""When is a step's output complete? One check per command, read from the lakehouse.

A check answers with the reason the step can be skipped, or None when it must run. Each check
asks the same question the job itself would: is the row that marks the job's commit point there,
made from the inputs this step names, on the instance version stored now?
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict
from pathlib import Path

from pyspark.sql import Row
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from pipelines import design, mesh_compare, report
from pipelines.ingest import DATASETS
from pipelines.lakehouse import Lakehouse, UnknownInstanceError, UnknownRunError
from pipelines.overlays import complete_run, is_current


def _row(lakehouse: Lakehouse, table: S.TableSpec, key: str, value: str) -> Row | None:
    if not lakehouse.exists(table):
        return None
    return lakehouse.read(table).filter(F.col(key) == value).first()


def _current_run(lakehouse: Lakehouse, run_id: str) -> Row | None:
    """The run row when the run can be read (`overlays.complete_run`), else None."""
    try:
        return complete_run(lakehouse, run_id)
    except (InputError, UnknownRunError, UnknownInstanceError):
        return None


def _same_source(params: dict) -> dict:
    """Source settings with the input path made absolute (an instance stored from a relative path
    is the same instance), a graph shipped with the lab named by its file (the same graph from
    another checkout or install), and unset settings left out (an instance stored before a setting
    was added is the same instance)."""
    params = {k: v for k, v in params.items() if v is not None}
    if params.get("path"):
        path = Path(os.path.realpath(params["path"]))
        shipped = path.name in {file for file, *_ in DATASETS.values()} and path.parent.parts[-2:] == (
            "pipelines",
            "datasets",
        )
        return {**params, "path": f"shipped:{path.name}" if shipped else str(path)}
    return params


def _ingest(lakehouse: Lakehouse, args: argparse.Namespace, request) -> str | None:
    stored = _row(lakehouse, S.INSTANCES, S.INSTANCE, args.instance)
    if stored is None:
        return None
    if _same_source(json.loads(stored[S.PARAMS])) == _same_source(asdict(request.spec)):
        return f"instance {args.instance} is stored from these settings"
    origin = json.loads(stored[S.PARAMS]).get("origin") if stored[S.SOURCE] == "churn" else None
    if origin and _same_source(origin["params"]) == _same_source(asdict(request.spec)):
        # a simulation's churn days stand for the source's new files: today's version is there
        return f"instance {args.instance} is a churned day of an ingest from these settings"
    return None


def _design(lakehouse: Lakehouse, args: argparse.Namespace, plan: design.DesignPlan) -> str | None:
    run_ids = [args.run_id for _ in plan.requests] if args.run_id else []
    if not run_ids:  # the default ids (several: a sweep over k); an incremental one names the version
        instance = _row(lakehouse, S.INSTANCES, S.INSTANCE, plan.requests[0].instance)
        if instance is None:
            return None
        run_ids = [design.design_run_id(r, instance[S.INGEST_ID], plan.incremental) for r in plan.requests]
    runs = [_current_run(lakehouse, run_id) for run_id in run_ids]
    if any(run is None or not is_current(lakehouse, run) for run in runs):
        return None  # a run on an earlier instance version is redone (with --replace) or refused
    return f"run {', '.join(run_ids)} {'is' if len(run_ids) == 1 else 'are'} complete"


def _simulate(lakehouse: Lakehouse, args: argparse.Namespace, request) -> str | None:
    return _design(lakehouse, args, design.DesignPlan([request], None))


def _evaluate(lakehouse: Lakehouse, args: argparse.Namespace, _request) -> str | None:
    run = _current_run(lakehouse, args.run_id)
    metrics = _row(lakehouse, S.OVERLAY_METRICS, S.RUN_ID, args.run_id) if run is not None else None
    if metrics is None or metrics[S.DIAMETER_METHOD] == "skipped" or metrics[S.COMPUTED_AT] < run[S.STARTED_AT]:
        return None
    if args.k is not None:
        checked = (
            lakehouse.read(S.OVERLAY_KTCO).filter((F.col(S.RUN_ID) == args.run_id) & (F.col(S.K) == args.k)).first()
            if lakehouse.exists(S.OVERLAY_KTCO)
            else None
        )
        if checked is None or checked[S.COMPUTED_AT] < run[S.STARTED_AT]:
            return None
    return f"run {args.run_id} has its metrics with diameters ({metrics[S.DIAMETER_METHOD]})" + (
        f" and its k = {args.k} check" if args.k is not None else ""
    )


def _route(lakehouse: Lakehouse, args: argparse.Namespace, request) -> str | None:
    routing_run_id = args.routing_run_id or request.default_routing_run_id()
    routed = _row(lakehouse, S.ROUTING_RUNS, S.ROUTING_RUN_ID, routing_run_id)
    if routed is None or routed[S.STATUS] != S.COMPLETE or _current_run(lakehouse, request.run_id) is None:
        return None
    return f"routing run {routing_run_id} is complete"


def _resilience(lakehouse: Lakehouse, args: argparse.Namespace, request) -> str | None:
    run = _current_run(lakehouse, request.run_id)
    if run is None or not lakehouse.exists(S.RESILIENCE):
        return None
    stored = lakehouse.read(S.RESILIENCE).filter(
        (F.col(S.RUN_ID) == request.run_id)
        & (F.col(S.SEED) == request.seed)
        & (F.col(S.COMPUTED_AT) >= run[S.STARTED_AT])
    )
    for plan in request.plans():
        found = stored.filter((F.col(S.MODEL) == plan.model) & F.col(S.SHARE).isin(*plan.shares))
        if found.count() != len(plan.shares) * plan.trials:
            return None
    return f"run {request.run_id} has its failure trials (seed {request.seed})"


def _compare(lakehouse: Lakehouse, _args: argparse.Namespace, request) -> str | None:
    if not lakehouse.exists(S.ROUTING_COMPARISON):
        return None
    rows = lakehouse.read(S.ROUTING_COMPARISON).filter(F.col(S.COMPARISON_ID) == request.comparison_id)
    if rows.filter(F.col(S.PAPER_COLUMN).eqNullSafe(request.paper)).count() < len(request.systems):
        return None
    return f"comparison {request.comparison_id} is stored"


def _compare_meshes(lakehouse: Lakehouse, _args: argparse.Namespace, request) -> str | None:
    if not lakehouse.exists(S.MESH_COMPARISON):
        return None
    rows = lakehouse.read(S.MESH_COMPARISON).filter(F.col(S.COMPARISON_ID) == request.comparison_id)
    if rows.count() < len(mesh_compare.SYSTEMS):
        return None
    return f"comparison {request.comparison_id} is stored"


def _friend_bound(lakehouse: Lakehouse, _args: argparse.Namespace, request) -> str | None:
    if not lakehouse.exists(S.FRIEND_BOUND):
        return None
    try:
        ingest_id = lakehouse.instance_row(request.instance)[S.INGEST_ID]
    except UnknownInstanceError:
        return None
    stored = lakehouse.read(S.FRIEND_BOUND).filter(
        (F.col(S.INSTANCE) == request.instance)
        & (F.col(S.INGEST_ID) == ingest_id)
        & (F.col(S.K) == request.k)
        & (F.col(S.MIN_FEEDS) == request.min_feeds)
        & (F.col(S.SAMPLE) == request.sample)
        & (F.col(S.SEED) == request.seed)
    )
    return None if stored.isEmpty() else f"the friend bound of {request.instance} is stored for these settings"


def _report(lakehouse: Lakehouse, args: argparse.Namespace, _request) -> str | None:
    if report.is_current(lakehouse, Path(args.out)):
        return f"the report in {args.out} is up to date with the tables"
    return None


def _imported(lakehouse: Lakehouse, args: argparse.Namespace, _request) -> str | None:
    return f"run {args.run_id} is imported" if _current_run(lakehouse, args.run_id) is not None else None


def _churn_experiment(lakehouse: Lakehouse, _args: argparse.Namespace, prepared) -> str | None:
    request, _engine = prepared
    last = [request.run_id(kind, request.days) for kind in ("inc", "fresh")]
    if any(_current_run(lakehouse, run_id) is None for run_id in last):
        return None
    return f"the chain {request.chain_name} has its {request.days} days"


CHECKS = {
    "ingest": _ingest,
    "design": _design,
    "simulate": _simulate,
    "evaluate": _evaluate,
    "route": _route,
    "disseminate": _route,
    "resilience": _resilience,
    "compare": _compare,
    "compare-meshes": _compare_meshes,
    "friend-bound": _friend_bound,
    "report": _report,
    "import-overlay": _imported,
    "churn-experiment": _churn_experiment,
}


def outputs_complete(lakehouse: Lakehouse, args: argparse.Namespace, request) -> str | None:
    """Why this command's outputs are complete already; None when it must run (or always runs:
    `export`, `instances` and `register` are cheap and write outside the tables; a local session's
    catalog, which `register` writes, lasts as long as the process)."""
    check = CHECKS.get(args.command)
    return None if check is None else check(lakehouse, args, request)
