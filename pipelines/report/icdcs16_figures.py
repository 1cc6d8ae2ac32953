"""The ICDCS'16 figures (Figs. 4-9): TcoSuppR against what a sweep varies, a line per algorithm at
the mean over seeds with a bar from the lowest to the highest seed, a panel per workload or
distribution, and the paper's values from its text as open diamonds."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from overlay import schema as S
from overlay.summaries import BUDGET_RATIO
from pipelines.report.figures import MARKERS, _grid
from pipelines.report.icdcs16 import ALGORITHMS, HIGH, LOW, MEAN, NAMES, PANEL, Sweep, X

COLOURS = {
    "gpa": "tab:blue",
    "gpm": "tab:orange",
    "spidercast-m": "tab:green",
    "random-a": "tab:purple",
    "random-m": "tab:red",
    "gpa-d": "tab:cyan",
    "random-a-d": "tab:pink",
}


def sweep(points: pd.DataFrame, spec: Sweep, marks: list[tuple[str, float, str, float]]) -> Figure | None:
    """`points`: `Sweep.points`; `marks`: (panel, x, algorithm, TcoSuppR) from the paper."""
    if points.empty:
        return None
    panels = sorted(points[PANEL].unique())
    figure, axes = _grid(len(panels))
    for ax, panel in zip(axes, panels):
        rows = points[points[PANEL] == panel]
        for algorithm in [a for a in ALGORITHMS if a in set(rows[S.ALGORITHM])]:
            line = rows[rows[S.ALGORITHM] == algorithm].sort_values(X)
            ax.errorbar(
                line[X],
                line[MEAN],
                yerr=np.vstack([(line[MEAN] - line[LOW]).to_numpy(float), (line[HIGH] - line[MEAN]).to_numpy(float)]),
                marker=MARKERS[ALGORITHMS.index(algorithm)],
                color=COLOURS[algorithm],
                capsize=3,
                label=NAMES[algorithm],
            )
        paper = [(x, a, v) for p, x, a, v in marks if p == panel]
        for i, (x, algorithm, value) in enumerate(paper):
            ax.plot(
                [x],
                [value],
                linestyle="none",
                marker="D",
                markersize=9,
                markerfacecolor="none",
                markeredgecolor=COLOURS.get(algorithm, "black"),
                label="paper (text)" if i == 0 else None,
            )
        if spec.x == BUDGET_RATIO:  # the paper's ratios run from 0.05 to 0.5
            ax.set_xlim(0, max(0.55, float(rows[X].max()) * 1.1))
        ax.set_title(panel)
        ax.set_xlabel(spec.xlabel)
        ax.set_ylabel("TcoSuppR (mean; bars: lowest to highest seed)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize="small")
    figure.suptitle(f"ICDCS'16 {spec.figure}: {spec.title}")
    return figure
