"""BeaConvey Figs. 4-7: a system's ratio against Scribe(-) as |T| grows, panels (a) BeaConvey with
Pie, (b) Scribe, (c) iScribe, a line per overlay type at the mean over seeds with a bar from the
lowest to the highest seed, and the paper's values from its text: a point as an open diamond, an
average over |T| as a dotted line in the system's colour. An overlay type keeps its colour in
every panel and figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from overlay import schema as S
from pipelines.compare import OVERLAY_TYPES, system_name
from pipelines.report.beaconvey import FAMILIES, FIGURES, METRICS, PAPER_MARKS, PAPER_MEANS
from pipelines.report.figures import MARKERS, _grid
from pipelines.report.workloads import HIGH, LOW, MEAN

DISTRIBUTIONS = {"zipf": "Zipf", "unif": "Unif"}


def caption(figure_name: str) -> str:
    dist, metric = FIGURES[figure_name]
    return f"{METRICS[metric][1]} against Scribe(-) as |T| grows, {DISTRIBUTIONS[dist]}, |V| = 1,023"


def ratios(points: pd.DataFrame, figure_name: str) -> Figure | None:
    """`points`: `beaconvey.figure_points` of one figure."""
    if points.empty:
        return None
    dist, metric = FIGURES[figure_name]
    marks, means = PAPER_MARKS.get(figure_name, []), dict(PAPER_MEANS.get(figure_name, []))
    span = (points[S.TOPICS].min(), points[S.TOPICS].max())
    figure, axes = _grid(len(FAMILIES))
    for ax, (family, protocol), letter in zip(axes, FAMILIES, "abc"):
        for i, overlay in enumerate(OVERLAY_TYPES):
            name = system_name(family, overlay, protocol)
            line = points[points[S.SYSTEM] == name].sort_values(S.TOPICS)
            if line.empty:
                continue
            ax.errorbar(
                line[S.TOPICS],
                line[MEAN],
                yerr=np.vstack([(line[MEAN] - line[LOW]).to_numpy(float), (line[HIGH] - line[MEAN]).to_numpy(float)]),
                marker=MARKERS[i],
                capsize=3,
                label=name,
                color=f"C{i}",
            )
            if name in means:
                ax.plot(span, [means[name]] * 2, linestyle=":", color=f"C{i}", label=f"{name}, paper's mean (text)")
            for system, topics, value in marks:
                if system == name:
                    ax.plot(
                        [topics],
                        [value],
                        linestyle="none",
                        marker="D",
                        markersize=9,
                        markerfacecolor="none",
                        markeredgecolor="black",
                        label=f"{name}, paper (text)",
                    )
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_title(f"({letter}) {family}")
        ax.set_xlabel("|T|")
        ax.set_ylabel(f"{METRICS[metric][1]} against Scribe(-)")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    figure.suptitle(
        f"BeaConvey {figure_name}: {METRICS[metric][1]}, {DISTRIBUTIONS[dist]}, |V| = 1,023 "
        "(mean over seeds; bars: lowest to highest)"
    )
    return figure
