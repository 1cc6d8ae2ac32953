"""The report job: read the Delta tables, write PNG figures and a markdown summary to a folder.

The folder gets `report.md`, one PNG per figure that has data, and `report.json`, the manifest
written last: the Delta version of every table the report read. A report is current while those
versions are the tables' versions now (`is_current`), which is how a workflow rerun skips it.

Only current runs are reported: complete, and built on the instance version stored now.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.smallworld.gswico import overlay_type
from overlay.summaries import (
    BUDGET,
    BUDGET_RATIO,
    DEGREE,
    LONG,
    NODES_AT_LEAST,
    RUN_LABEL,
    SHORT,
    current_runs,
    degree_distribution,
    run_quality,
)
from pipelines.compare import PROTOCOL_NAMES, SYSTEMS, system_name
from pipelines.lakehouse import Lakehouse
from pipelines.report import (
    beaconvey,
    beaconvey_figures,
    day_two,
    figures,
    gossip,
    gossip_figures,
    icdcs16,
    icdcs16_figures,
    ktco,
    meshes,
    rappel,
    rappel_figures,
)
from pipelines.report.markdown import design_rows, render, routing_rows
from routing.summaries import MASS_SHARE, load_percentiles, routing_summary

log = logging.getLogger(__name__)

TABLES = (
    S.INSTANCES,
    S.OVERLAY_RUNS,
    S.OVERLAY_METRICS,
    S.OVERLAY_EDGES,
    S.ROUTING_RUNS,
    S.ROUTING_METRICS,
    S.ROUTING_LOAD,
    S.ROUTING_COMPARISON,
    S.RESILIENCE,
    S.GOSSIP_COVERAGE,
    S.GOSSIP_DIFFUSIONS,
    S.TOPIC_STRUCTURE,
    S.DISSEMINATION_COMPLETION,
    S.RAPPEL_ROUNDS,
    S.RAPPEL_NODES,
    S.RAPPEL_TRAFFIC,
    S.FEED_TREES,
    S.FRIEND_BOUND,
    S.OVERLAY_CHANGES,
    S.INSTANCE_VERSIONS,
    S.MESH_COMPARISON,
)
MANIFEST = "report.json"
SUMMARY = "report.md"
DEGREE_RUNS_PER_INSTANCE = 8


@dataclass
class ReportData:
    """What the report shows, as small pandas frames (sized by runs, not by instances)."""

    instances: pd.DataFrame
    quality: pd.DataFrame
    degrees: pd.DataFrame
    routing: pd.DataFrame
    load: pd.DataFrame
    comparisons: pd.DataFrame
    sweeps: pd.DataFrame  # kTCO sweep points (`ktco.sweep_points`)
    resilience: pd.DataFrame  # failure trials summarised (`ktco.resilience_summary`)
    gossip: gossip.GossipData  # Feverfew's figures and tables (`gossip.gather`)
    rappel: rappel.RappelData  # Rappel's figures and checks (`rappel.gather`)
    icdcs16: icdcs16.Icdcs16Data  # ICDCS'16 Table I and Figs. 4-9 over seeds (`icdcs16.gather`)
    beaconvey: beaconvey.BeaConveyData  # BeaConvey Tables 3-5 and Figs. 4-7 over seeds (`beaconvey.gather`)
    day_two: pd.DataFrame  # overlay_changes rows with their series and day (`day_two.gather`)
    meshes: pd.DataFrame  # mesh_comparison rows of current runs (`meshes.gather`)
    files: dict[str, str] = field(default_factory=dict)  # figure file -> caption


def table_versions(lakehouse: Lakehouse) -> dict[str, int | None]:
    return {table.name: lakehouse.version(table) for table in TABLES}


def is_current(lakehouse: Lakehouse, out: Path) -> bool:
    manifest = out / MANIFEST
    if not manifest.is_file() or not (out / SUMMARY).is_file():
        return False
    try:
        stored = json.loads(manifest.read_text())["tables"]
    except (ValueError, KeyError):
        return False
    return stored == table_versions(lakehouse)


def read_back(out: Path) -> dict:
    """The manifest of a written report: table versions, files, and the design and routing rows."""
    return json.loads((Path(out) / MANIFEST).read_text())


def design_label(algorithm: str, budget: str, short: str | None, long: str | None) -> str:
    """How a run is named in figures: the algorithm and its budget, or the overlay type of a
    small-world run (BeaConvey Table 2: SL, S, L, -)."""
    name = figures.ALGORITHM_NAMES.get(algorithm, algorithm)
    if algorithm == "swico":
        return f"{name} {overlay_type(short, long)} ({short} ring, {long} fingers)"
    return name if budget == "none" else f"{name} ({budget})"


def _degree_runs(quality: pd.DataFrame, target_ratio: float) -> pd.DataFrame:
    """Per instance and algorithm: the run whose budget ratio is nearest `target_ratio`, and every
    unbudgeted run; at most DEGREE_RUNS_PER_INSTANCE per instance."""
    if quality.empty:
        return quality
    distance = (quality[BUDGET_RATIO] - target_ratio).abs().fillna(-1.0)
    ranked = quality.assign(_distance=distance).sort_values([S.INSTANCE, S.ALGORITHM, "_distance", S.RUN_ID])
    budgeted = ranked[ranked[BUDGET_RATIO].notna()].groupby([S.INSTANCE, S.ALGORITHM]).head(1)
    chosen = pd.concat([budgeted, ranked[ranked[BUDGET_RATIO].isna()]])
    chosen = chosen.sort_values(
        [S.INSTANCE, S.ALGORITHM], key=lambda c: c.map(figures.algorithm_key) if c.name == S.ALGORITHM else c
    )
    return chosen.groupby(S.INSTANCE).head(DEGREE_RUNS_PER_INSTANCE).drop(columns="_distance")


def gather(spark: SparkSession, lakehouse: Lakehouse, degree_ratio: float = 0.2) -> ReportData:
    """Read the tables and compute every summary the report shows."""
    instances = lakehouse.read(S.INSTANCES)
    runs = current_runs(lakehouse.read(S.OVERLAY_RUNS), instances).cache()
    quality = run_quality(runs, lakehouse.read(S.OVERLAY_METRICS)).toPandas()  # one row per run
    quality[RUN_LABEL] = [
        design_label(a, b, s, l_)
        for a, b, s, l_ in zip(quality[S.ALGORITHM], quality[BUDGET], quality[SHORT], quality[LONG])
    ]
    chosen = _degree_runs(quality, degree_ratio)
    if chosen.empty:
        degrees = pd.DataFrame(columns=[S.RUN_ID, DEGREE, NODES_AT_LEAST, S.INSTANCE, RUN_LABEL])
    else:
        ids = chosen[S.RUN_ID].tolist()  # at most DEGREE_RUNS_PER_INSTANCE per instance
        edges = lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID).isin(ids)).select(S.RUN_ID, S.U, S.V)
        nodes = spark.createDataFrame(chosen[[S.RUN_ID, S.NODES]])
        degrees = (
            degree_distribution(edges, nodes).toPandas().merge(chosen[[S.RUN_ID, S.INSTANCE, RUN_LABEL]], on=S.RUN_ID)
        )
    routing = routing_summary(
        lakehouse.read(S.ROUTING_RUNS), lakehouse.read(S.ROUTING_METRICS), runs
    ).toPandas()  # one row per routing run
    routing[RUN_LABEL] = [
        f"{PROTOCOL_NAMES.get(p, p)} on {o}{'' if pd.isna(m) else f', {m:.0%} down'} ({r})"
        for p, o, m, r in zip(routing[S.PROTOCOL], routing[S.OVERLAY_TYPE], routing[MASS_SHARE], routing[S.RUN_ID])
    ]
    ids = routing[S.ROUTING_RUN_ID].tolist()
    load = load_percentiles(lakehouse.read(S.ROUTING_LOAD).filter(F.col(S.ROUTING_RUN_ID).isin(ids))).toPandas()
    load = load.merge(routing[[S.ROUTING_RUN_ID, RUN_LABEL]], on=S.ROUTING_RUN_ID)
    comparisons = (
        lakehouse.read(S.ROUTING_COMPARISON).filter(F.col(S.ROUTING_RUN_ID).isin(ids)).toPandas()
        if ids
        else pd.DataFrame(columns=S.ROUTING_COMPARISON.columns)
    )  # 14 rows per comparison
    listed = (
        instances.select(S.INSTANCE, S.SOURCE, S.NODES, S.TOPICS, S.SUBSCRIPTIONS, S.CREATED_AT, S.PARAMS)
        .orderBy(S.INSTANCE)
        .toPandas()
    )  # one row per instance
    failures = (
        lakehouse.read(S.RESILIENCE).join(runs.select(S.RUN_ID), S.RUN_ID).toPandas()  # runs x shares x trials
        if lakehouse.exists(S.RESILIENCE)
        else pd.DataFrame(columns=S.RESILIENCE.columns)
    )
    gossiped = gossip.gather(lakehouse, runs, quality, listed)
    rappelled = rappel.gather(lakehouse, runs, instances)
    compared = meshes.gather(lakehouse, set(quality[S.RUN_ID]))
    runs.unpersist()
    return ReportData(
        listed,
        quality,
        degrees,
        routing,
        load,
        comparisons,
        ktco.sweep_points(quality, listed),
        ktco.resilience_summary(failures, quality),
        gossiped,
        rappelled,
        icdcs16.gather(quality, listed),
        beaconvey.gather(comparisons, listed),
        day_two.gather(lakehouse),
        compared,
    )


def _save(figure, path: Path) -> None:
    figure.savefig(path, dpi=110)


def run_report(spark: SparkSession, lakehouse: Lakehouse, out: str | Path, degree_ratio: float = 0.2) -> ReportData:
    """Write the report of everything current in the lakehouse to the folder `out`."""
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; give a folder")
    out.mkdir(parents=True, exist_ok=True)
    versions = table_versions(lakehouse)  # read first: a later commit makes the report stale
    data = gather(spark, lakehouse, degree_ratio)
    drawn = {
        "quality_vs_budget.png": (  # per instance; the ICDCS'16 sweeps draw theirs over seeds
            figures.quality_vs_budget(data.quality[~data.quality[S.INSTANCE].isin(data.icdcs16.swept_instances())]),
            "TcoSuppR against budget ratio",
        ),
        "degree_distribution.png": (
            figures.degree_distribution(data.degrees, dict(zip(data.quality[S.RUN_ID], data.quality[S.NODES]))),
            f"Degree distributions (per algorithm, the budget ratio nearest {degree_ratio:g})",
        ),
        "routing_ratios.png": (
            figures.routing_ratios(data.routing),
            "Routing overhead and path length against Scribe(-)",
        ),
        "routing_load.png": (figures.load_profile(data.load), "Per-node load"),
        "ktco_degree.png": (figures.ktco_degrees(data.sweeps), "Average degree of 2TCOs against |V| (PODC'13 Fig. 1)"),
        "ktco_diameter.png": (figures.ktco_diameters(data.sweeps), "Topic diameters, GM against GM2 (PODC'13 Fig. 2)"),
        "resilience.png": (
            figures.resilience(data.resilience, dict(zip(data.quality[S.RUN_ID], data.quality[RUN_LABEL]))),
            "Topics still connected after failures",
        ),
    }
    labels = dict(zip(data.quality[S.RUN_ID], data.quality[RUN_LABEL]))
    drawn["feverfew_coverage.png"] = (
        gossip_figures.coverage(data.gossip.coverage, labels),
        "ln-covered subscriptions by topic size (Feverfew Fig. 5)",
    )
    drawn["feverfew_degree.png"] = (
        gossip_figures.degrees(data.gossip.degrees),
        "Average degree against |V| (Feverfew Fig. 8)",
    )
    drawn["feverfew_completion.png"] = (
        gossip_figures.completion(data.gossip.completion, gossip.MODES["push-pull"]),
        "Push-pull completion under failures on the stored overlays (Feverfew Fig. 9)",
    )
    drawn["feverfew_healing.png"] = (
        gossip_figures.completion(data.gossip.completion, gossip.MODES["push-pull-live"]),
        "Push-pull completion under failures, Feverfew's gossip going on (Feverfew Fig. 9)",
    )
    drawn["rappel_friend_bound.png"] = (
        rappel_figures.friend_bound(data.rappel.bound),
        "Coverage by the greedy best friends (ComNet'09 Fig. 1)",
    )
    drawn["rappel_coverage.png"] = (
        rappel_figures.coverage(data.rappel.coverage),
        "Friend coverage by subscriptions (ComNet'09 Fig. 9a)",
    )
    drawn["rappel_latency.png"] = (
        rappel_figures.latency(data.rappel.rounds),
        "Rappel's update latency over time (ComNet'09 Fig. 7)",
    )
    drawn["rappel_traffic.png"] = (
        rappel_figures.traffic(data.rappel.traffic),
        "Data traffic against subscriptions, Rappel and Scribe (ComNet'09 Fig. 10b)",
    )
    drawn["rappel_rejoins.png"] = (
        rappel_figures.rejoins(data.rappel.rejoins),
        "Rejoin load by depth (ComNet'09 Fig. 11a)",
    )
    for spec in icdcs16.SWEEPS:
        drawn[icdcs16.FIGURE_FILES[spec.figure]] = (
            icdcs16_figures.sweep(data.icdcs16.sweeps[spec.figure], spec, icdcs16.paper_marks(spec)),
            f"ICDCS'16 {spec.figure}: {spec.title}",
        )
    for name in beaconvey.FIGURES:
        drawn[f"beaconvey_{name.lower().replace('. ', '')}.png"] = (
            beaconvey_figures.ratios(beaconvey.figure_points(data.beaconvey.sweeps, name), name),
            f"BeaConvey {name}: {beaconvey_figures.caption(name)}",
        )
    drawn["day_two.png"] = (
        day_two.figure(data.day_two),
        "Day two: link changes and TcoSuppR over days, incremental against fresh",
    )
    drawn["meshes.png"] = (meshes.figure(data.meshes), "gossipsub beside the papers' overlays")
    order = {system_name(*system): i for i, system in enumerate(SYSTEMS)}  # Tables 3-5's order
    for comparison_id, rows in data.comparisons.groupby(S.COMPARISON_ID):
        name = f"comparison_{comparison_id}.png".replace("/", "_")
        rows = rows.sort_values(S.SYSTEM, key=lambda names: names.map(order)).reset_index(drop=True)
        drawn[name] = (figures.comparison(rows), f"BeaConvey comparison {comparison_id}")
    for stale in out.glob("*.png"):
        stale.unlink()
    for name, (figure, caption) in drawn.items():
        if figure is not None:
            _save(figure, out / name)
            data.files[name] = caption
    (out / SUMMARY).write_text(render(data, lakehouse.root))
    manifest = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "lakehouse": lakehouse.root,
        "tables": versions,
        "files": sorted([SUMMARY, *data.files]),
        "designs": design_rows(data),
        "routing": routing_rows(data),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n")
    log.info("report: %d figures and %s in %s", len(data.files), SUMMARY, out)
    return data
