"""The report's figures, drawn with matplotlib's object API (no pyplot state, no display needed):
each function takes a small pandas frame and returns a `Figure`, or None when there is nothing
to draw. Notebooks show the same figures (`display(fig)` on Databricks)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from overlay import registry
from overlay import schema as S
from overlay.summaries import BUDGET_RATIO, DEGREE, NODES_AT_LEAST, RUN_LABEL
from routing.summaries import PERCENTILE

ALGORITHM_ORDER = (
    "gpa",
    "gpm",
    "spidercast-m",
    "random-m",
    "random-a",
    "gm",
    "minmaxoda",
    "gm2",
    "harary-pt",
    "cycle-pt",
    "swico",
    "imported",
)
# The figures' legend order (an algorithm not listed comes last); names from the registry.
ALGORITHM_NAMES = {name: registry.algorithm_label(name) for name in (*registry.ALGORITHMS, registry.IMPORTED)}
MARKERS = "osD^vP*X"
LINESTYLES = ("-", "--", ":", "-.")


def _grid(panels: int, width: float = 5.0, height: float = 3.8) -> tuple[Figure, list]:
    columns = min(panels, 3)
    rows = math.ceil(panels / columns)
    figure = Figure(figsize=(width * columns, height * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel().tolist()
    for unused in axes[panels:]:
        unused.set_visible(False)
    return figure, axes[:panels]


def algorithm_key(name: str) -> int:
    return ALGORITHM_ORDER.index(name) if name in ALGORITHM_ORDER else len(ALGORITHM_ORDER)


def quality_vs_budget(quality: pd.DataFrame) -> Figure | None:
    """TcoSuppR against budget ratio, one line per algorithm, one panel per instance (the shape
    of ICDCS'16 Fig. 4 and Fig. 9). `quality`: rows of `overlay.summaries.run_quality`."""
    swept = quality[quality[BUDGET_RATIO].notna()]
    if swept.empty:
        return None
    instances = sorted(swept[S.INSTANCE].unique())
    figure, axes = _grid(len(instances))
    for ax, instance in zip(axes, instances):
        rows = swept[swept[S.INSTANCE] == instance]
        for i, algorithm in enumerate(sorted(rows[S.ALGORITHM].unique(), key=algorithm_key)):
            line = rows[rows[S.ALGORITHM] == algorithm].sort_values(BUDGET_RATIO)
            ax.plot(
                line[BUDGET_RATIO],
                line[S.TCO_SUPPORT],
                marker=MARKERS[i % len(MARKERS)],
                label=ALGORITHM_NAMES.get(algorithm, algorithm),
            )
        ax.set_title(instance)
        ax.set_xlim(0, max(0.55, float(rows[BUDGET_RATIO].max()) * 1.1))
        ax.set_xlabel("budget ratio (share of MinMaxODA's links and max degree)")
        ax.set_ylabel("TcoSuppR")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize="small")
    figure.suptitle("Topic-connectivity support against the degree budget")
    return figure


def degree_distribution(distribution: pd.DataFrame, nodes: dict[str, int]) -> Figure | None:
    """Share of nodes with degree at least k, one line per run, one panel per instance.
    `distribution`: instance, run_label and the rows of `overlay.summaries.degree_distribution`;
    `nodes`: the node count of each run."""
    if distribution.empty:
        return None
    instances = sorted(distribution[S.INSTANCE].unique())
    figure, axes = _grid(len(instances), width=8.5)
    for ax, instance in zip(axes, instances):
        rows = distribution[(distribution[S.INSTANCE] == instance) & (distribution[DEGREE] > 0)]
        for i, label in enumerate(sorted(rows[RUN_LABEL].unique())):
            run = rows[rows[RUN_LABEL] == label].sort_values(DEGREE)
            total = nodes[run[S.RUN_ID].iloc[0]]
            # Share of nodes with degree >= k at every integer k (the count of the smallest stored
            # degree >= k), drawn flat from k to k + 1.
            degrees, at_least = run[DEGREE].to_numpy(), run[NODES_AT_LEAST].to_numpy()
            k = np.arange(1, degrees.max() + 2)
            index = np.searchsorted(degrees, k)
            share = np.where(index < len(degrees), at_least[np.minimum(index, len(degrees) - 1)], 0) / total
            # Line styles cycle so that overlays with the same distribution stay visible.
            ax.step(k, share, where="post", label=label, linestyle=LINESTYLES[i % len(LINESTYLES)], linewidth=1.6)
        ax.set_xscale("log")
        ax.set_title(instance)
        ax.set_xlabel("degree k")
        ax.set_ylabel("share of nodes with degree >= k")
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.suptitle("Degree distributions of the overlays")
    return figure


def routing_ratios(summary: pd.DataFrame) -> Figure | None:
    """Routing overhead and average path length of every routing run, as ratios against Scribe(-)
    on the same workload. `summary`: rows of `routing.summaries.routing_summary` with a label."""
    rows = summary[summary[S.OVERHEAD_RATIO].notna()].sort_values([S.INSTANCE, RUN_LABEL])
    if rows.empty:
        return None
    labels = list(rows[RUN_LABEL])
    figure = Figure(figsize=(11, 1.2 + 0.38 * len(rows)), layout="constrained")
    axes = figure.subplots(1, 2, sharey=True)
    for ax, column, title in (
        (axes[0], S.OVERHEAD_RATIO, "routing overhead / Scribe(-)'s"),
        (axes[1], S.PATH_RATIO, "average path length / Scribe(-)'s"),
    ):
        ax.barh(range(len(rows)), rows[column], color="tab:blue")
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel(title)
        ax.grid(axis="x", alpha=0.3)
        for y, value in enumerate(rows[column]):
            ax.annotate(f"{value:.2f}", (value, y), xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
    axes[0].set_yticks(range(len(rows)), labels)
    axes[0].invert_yaxis()
    figure.suptitle("Routing cost against Scribe on a data-oblivious overlay (lower is better)")
    return figure


def comparison(rows: pd.DataFrame) -> Figure | None:
    """One BeaConvey comparison (Tables 3-5): our ratios as bars, the paper's as diamonds."""
    if rows.empty:
        return None
    figure = Figure(figsize=(11, 1.2 + 0.38 * len(rows)), layout="constrained")
    axes = figure.subplots(1, 2, sharey=True)
    for ax, ours, theirs, title in (
        (axes[0], S.OVERHEAD_RATIO, S.PAPER_OVERHEAD_RATIO, "routing overhead / Scribe(-)'s"),
        (axes[1], S.PATH_RATIO, S.PAPER_PATH_RATIO, "average path length / Scribe(-)'s"),
    ):
        ax.barh(range(len(rows)), rows[ours], color="tab:blue", label="this lab")
        if rows[theirs].notna().any():
            ax.scatter(rows[theirs], range(len(rows)), marker="D", color="black", zorder=3, label="paper")
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel(title)
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize="small", loc="lower right")
    axes[0].set_yticks(range(len(rows)), rows[S.SYSTEM])
    axes[0].invert_yaxis()
    paper = rows[S.PAPER_COLUMN].dropna()
    name = rows[S.COMPARISON_ID].iloc[0]
    figure.suptitle(f"BeaConvey comparison {name}" + (f" against the paper's {paper.iloc[0]}" if len(paper) else ""))
    return figure


def load_profile(percentiles: pd.DataFrame) -> Figure | None:
    """Messages received per node, nodes ranked from least to most loaded, one line per routing
    run. `percentiles`: rows of `routing.summaries.load_percentiles` with a label."""
    if percentiles.empty:
        return None
    figure = Figure(figsize=(8, 4.5), layout="constrained")
    ax = figure.subplots()
    for label in sorted(percentiles[RUN_LABEL].unique()):
        run = percentiles[percentiles[RUN_LABEL] == label].sort_values(PERCENTILE)
        ax.plot(run[PERCENTILE] * 100, run[S.RECEIVED], label=label)
    ax.set_yscale("symlog", linthresh=1)
    ax.set_xlabel("nodes, least to most loaded (percentile)")
    ax.set_ylabel("messages received")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small")
    ax.set_title("Per-node load of each routing run")
    return figure


def _against_nodes(points: pd.DataFrame, lines, ylabel: str, title: str, log: bool = False) -> Figure | None:
    """Columns of kTCO sweep points against |V|, one panel per sweep; `lines`: (column, name,
    line style); a line is drawn where its column has values."""
    points = points.dropna(subset=[column for column, _, _ in lines], how="all")
    if points.empty:
        return None
    families = sorted(points["family"].unique())
    figure, axes = _grid(len(families), width=6.0)
    for ax, family in zip(axes, families):
        rows = points[points["family"] == family].sort_values(S.NODES)
        for i, (column, name, style) in enumerate(lines):
            line = rows.dropna(subset=[column])
            if len(line):
                ax.plot(line[S.NODES], line[column], marker=MARKERS[i % len(MARKERS)], linestyle=style, label=name)
        ax.set_title(family, fontsize="small")
        ax.set_xlabel("|V| (nodes)")
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize="small")
    figure.suptitle(title)
    return figure


def ktco_degrees(points: pd.DataFrame) -> Figure | None:
    """Average degree against |V| for GM, GM2, CyclePT and HararyPT (k = 2), one panel per sweep
    (the shape of PODC'13 Fig. 1). `points`: rows of `pipelines.report.ktco.sweep_points`."""
    lines = (
        ("gm_degree", "GM", "-"),
        ("gm2_degree", "GM2", "-"),
        ("cycle_pt_degree", "CyclePT", "-"),
        ("harary_pt_2_degree", "HararyPT k = 2", "-"),
    )
    return _against_nodes(
        points[points["gm2_degree"].notna() | points["cycle_pt_degree"].notna() | points["harary_pt_2_degree"].notna()],
        lines,
        "average degree 2|E| / |V|",
        "Average degree of 2TCOs against |V| (PODC'13 Fig. 1)",
        log=True,
    )


def ktco_diameters(points: pd.DataFrame) -> Figure | None:
    """Largest and mean topic diameter against |V|, GM against GM2 (PODC'13 Fig. 2)."""
    lines = (
        ("gm_diameter_max", "GM, max", "-"),
        ("gm2_diameter_max", "GM2, max", "-"),
        ("gm_diameter_avg", "GM, mean", "--"),
        ("gm2_diameter_avg", "GM2, mean", "--"),
    )
    compared = points.dropna(subset=["gm_diameter_max", "gm2_diameter_max"])
    return _against_nodes(compared, lines, "topic diameter (hops)", "Topic diameters, GM against GM2 (PODC'13 Fig. 2)")


def resilience(summary: pd.DataFrame, labels: dict[str, str]) -> Figure | None:
    """Share of topics still connected against the share of nodes or links removed, one line per
    run (mean over trials, bars from the worst to the best trial), one panel per instance and
    failure model. `summary`: rows of `pipelines.report.ktco.resilience_summary`."""
    if summary.empty:
        return None
    panels = sorted({(i, m) for i, m in zip(summary[S.INSTANCE], summary[S.MODEL])})
    figure, axes = _grid(len(panels), width=6.5)
    for ax, (instance, model) in zip(axes, panels):
        rows = summary[(summary[S.INSTANCE] == instance) & (summary[S.MODEL] == model)]
        algorithm_of = dict(zip(rows[S.RUN_ID], rows[S.ALGORITHM]))
        for i, run_id in enumerate(sorted(algorithm_of, key=lambda r: (algorithm_key(algorithm_of[r]), r))):
            line = rows[rows[S.RUN_ID] == run_id].sort_values(S.SHARE)
            mean = line[S.CONNECTED_TOPIC_SHARE].to_numpy(dtype=float)
            spread = np.vstack(
                [mean - line["connected_min"].to_numpy(dtype=float), line["connected_max"].to_numpy(dtype=float) - mean]
            )
            ax.errorbar(
                line[S.SHARE].to_numpy(dtype=float),
                mean,
                yerr=spread,
                marker=MARKERS[i % len(MARKERS)],
                linestyle=LINESTYLES[i % len(LINESTYLES)],
                capsize=3,
                label=labels.get(run_id, run_id),
            )
        ax.set_title(f"{instance}: {model}", fontsize="small")
        ax.set_xlabel("share removed")
        ax.set_ylabel("topics still connected (share)")
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small")
    figure.suptitle("What failures leave connected (mean over trials; bars: worst to best trial)")
    return figure
